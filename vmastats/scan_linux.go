package vmastats

import (
	"encoding/binary"
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// readNamesAt reads at most max entry names of dir, starting at the
// directory offset pos (0 for the start), and returns them with the
// offset to resume at and whether the directory is done. The directory
// is opened without following or blocking and only if it is one, and
// closed again: nothing is kept open between scans, and seeking to a
// kept offset costs the kernel a tree lookup on tmpfs (6.6+) and ext4.
// No entry is stat'ed.
func readNamesAt(dir string, pos int64, max int) ([]string, int64, bool, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, pos, true, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	if pos != 0 {
		if _, err := unix.Seek(fd, pos, 0); err != nil {
			return nil, pos, true, &os.PathError{Op: "seek", Path: dir, Err: err}
		}
	}
	var names []string
	buf := make([]byte, 32<<10)
	for len(names) < max {
		n, err := unix.Getdents(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return names, pos, true, &os.PathError{Op: "getdents", Path: dir, Err: err}
		}
		if n == 0 {
			return names, pos, true, nil
		}
		// struct linux_dirent64: u64 ino, s64 off, u16 reclen, u8 type,
		// name (NUL-terminated). off is the position after the entry.
		for b := buf[:n]; len(b) >= 19 && len(names) < max; {
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				return names, pos, true, &os.PathError{Op: "getdents", Path: dir, Err: errors.New("malformed directory entry")}
			}
			name := b[19:reclen]
			for i, c := range name {
				if c == 0 {
					name = name[:i]
					break
				}
			}
			pos = int64(binary.NativeEndian.Uint64(b[8:16]))
			if s := string(name); s != "." && s != ".." {
				names = append(names, s)
			}
			b = b[reclen:]
		}
		if len(names) < max {
			continue
		}
	}
	return names, pos, false, nil
}

// exists reports whether path names anything, with a statx that does not
// follow a symbolic link and answers from the kernel's caches: a FUSE
// file system mounted on the name is asked nothing. Any error other than
// ENOENT or ENOTDIR answers true, so opening the file reports it.
func exists(path string) bool {
	var sx unix.Statx_t
	err := unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_DONT_SYNC, 0, &sx)
	return !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR)
}

// LivePIDs implements PIDLister: the numeric names of the procfs root.
// Their number is bounded by the processes the kernel allows, not by
// anything a user can write.
func (l *ProcLiveness) LivePIDs() ([]int, error) {
	names, err := readNames(l.root)
	if err != nil {
		return nil, err
	}
	pids := make([]int, 0, len(names))
	for _, n := range names {
		if pid, err := strconv.Atoi(n); err == nil && pid > 0 && n[0] != '0' && n[0] != '+' {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}
