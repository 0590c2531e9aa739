package guest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
)

// archive is an initramfs under construction: an uncompressed cpio
// archive in the "newc" format the kernel unpacks at boot. Parent
// directories are added automatically.
type archive struct {
	entries map[string]entry
}

type entry struct {
	mode uint32 // file type and permission bits
	data []byte // file content or symlink target
}

const (
	modeDir     = 0o040000
	modeFile    = 0o100000
	modeSymlink = 0o120000
)

func newArchive() *archive { return &archive{entries: map[string]entry{}} }

// file adds a regular file with the given permission bits.
func (a *archive) file(name string, perm uint32, data []byte) {
	a.add(name, entry{mode: modeFile | perm, data: data})
}

// hostFile adds the content of a host file (following symlinks).
func (a *archive) hostFile(name, hostPath string) error {
	data, err := os.ReadFile(hostPath)
	if err != nil {
		return fmt.Errorf("adding %s to the initramfs: %w", hostPath, err)
	}
	fi, err := os.Stat(hostPath)
	if err != nil {
		return err
	}
	a.file(name, uint32(fi.Mode().Perm()), data)
	return nil
}

// symlink adds a symbolic link.
func (a *archive) symlink(name, target string) {
	a.add(name, entry{mode: modeSymlink | 0o777, data: []byte(target)})
}

// dir adds a directory.
func (a *archive) dir(name string) {
	a.add(name, entry{mode: modeDir | 0o755})
}

func (a *archive) add(name string, e entry) {
	name = strings.TrimPrefix(path.Clean("/"+name), "/")
	if name == "" {
		return
	}
	for p := path.Dir(name); p != "."; p = path.Dir(p) {
		if _, ok := a.entries[p]; !ok {
			a.entries[p] = entry{mode: modeDir | 0o755}
		}
	}
	a.entries[name] = e
}

// writeTo writes the archive. Entries are sorted so every directory
// precedes its content.
func (a *archive) writeTo(w io.Writer) error {
	bw := bufio.NewWriter(w)
	names := make([]string, 0, len(a.entries))
	for n := range a.entries {
		names = append(names, n)
	}
	sort.Strings(names)
	ino := uint32(1)
	for _, n := range names {
		e := a.entries[n]
		nlink := uint32(1)
		if e.mode&0o170000 == modeDir {
			nlink = 2
		}
		if err := writeRecord(bw, ino, e.mode, nlink, n, e.data); err != nil {
			return err
		}
		ino++
	}
	if err := writeRecord(bw, 0, 0, 1, "TRAILER!!!", nil); err != nil {
		return err
	}
	return bw.Flush()
}

func writeRecord(w *bufio.Writer, ino, mode, nlink uint32, name string, data []byte) error {
	// magic, ino, mode, uid, gid, nlink, mtime, filesize, devmajor,
	// devminor, rdevmajor, rdevminor, namesize, check
	fmt.Fprintf(w, "070701%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x",
		ino, mode, 0, 0, nlink, 0, len(data), 0, 0, 0, 0, len(name)+1, 0)
	w.WriteString(name)
	w.WriteByte(0)
	pad(w, 110+len(name)+1)
	w.Write(data)
	pad(w, len(data))
	_, err := w.Write(nil)
	return err
}

// pad writes zero bytes up to the next multiple of four.
func pad(w *bufio.Writer, n int) {
	for ; n%4 != 0; n++ {
		w.WriteByte(0)
	}
}
