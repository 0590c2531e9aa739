package sysfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/nic-exporter/nic_exporter/internal/safefile"
	"golang.org/x/sys/unix"
)

// ReadAttr reads a small sysfs attribute and returns it without
// surrounding white space. sysfs attributes are at most one page long. It
// uses the system calls directly with a buffer on the stack: a poll reads
// thousands of attributes, and os.Open plus a heap buffer per file
// dominated the poll's allocations. The open does not block and only a
// regular file is read (see package safefile): a named pipe planted in
// place of an attribute fails with safefile.ErrNotRegular instead of
// holding the poll. Errors are *os.PathError values that wrap the errno or
// safefile.ErrNotRegular.
func ReadAttr(path string) (string, error) {
	var buf [4096]byte
	n, err := readRegular(path, buf[:])
	if err != nil {
		return "", err
	}
	return string(bytes.TrimSpace(buf[:n])), nil
}

// readRegular reads the regular file at path into buf with the system
// calls directly (see ReadAttr) and returns the number of bytes read, at
// most len(buf). A read that returns less than it was asked for ends the
// file: a sysfs attribute is produced whole by one show call (kernfs
// serves it through seq_file, which fills a read as far as the content
// goes), and a short read of a regular file is its end, so the read that
// would only confirm the end with 0 bytes is not made. That is one system
// call of five for each of the thousands of attributes a poll reads.
func readRegular(path string, buf []byte) (int, error) {
	fd, err := openRetry(path)
	if err != nil {
		return 0, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return readOpen(fd, path, buf)
}

// readOpen reads the regular file open at fd into buf (see readRegular)
// and closes it; path names it in errors.
func readOpen(fd int, path string, buf []byte) (int, error) {
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return 0, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if uint32(st.Mode)&syscall.S_IFMT != syscall.S_IFREG {
		return 0, &os.PathError{Op: "open", Path: path, Err: safefile.ErrNotRegular}
	}
	n := 0
	for n < len(buf) {
		k, err := syscall.Read(fd, buf[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 0, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if k == 0 {
			break
		}
		n += k
		if n < len(buf) {
			break // a short read: the end of the file
		}
	}
	return n, nil
}

func openRetry(path string) (int, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

// ReadFSAttr reads a small sysfs attribute from fsys into buf and returns
// it without surrounding white space. It is ReadAttr for collectors that
// read through an fs.FS, so tests can count opens and inject read errors.
// sysfs attributes are at most one page; buf should be that large and may
// be reused for every read of a poll. With an fs.FS from DirFS the open
// does not block and only regular files are read, with the system calls
// directly as ReadAttr does: no *os.File, finalizer or poller
// registration per attribute, which made most of the InfiniBand
// collector's idle CPU on a host with many ports.
func ReadFSAttr(fsys fs.FS, name string, buf []byte) (string, error) {
	if d, ok := fsys.(dirFS); ok {
		if !fs.ValidPath(name) {
			return "", &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
		}
		n, err := readRegular(filepath.Join(d.root, filepath.FromSlash(name)), buf)
		if err != nil {
			return "", err
		}
		return string(bytes.TrimSpace(buf[:n])), nil
	}
	f, err := fsys.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("reading %s: %w", name, err)
	}
	return strings.TrimSpace(string(buf[:n])), nil
}

// Attr is an attribute's name in a file system, resolved once for the
// reads that many polls repeat: with an fs.FS from DirFS the host path is
// joined and validated once, so a read is only its system calls, and an
// attribute of a Dir is opened relative to the directory's descriptor.
type Attr struct {
	fsys fs.FS
	name string
	host string // the host path, for a DirFS
	dir  *Dir   // the directory it was resolved in, or nil
	base string // its name in dir
}

// ResolveAttr resolves name in fsys. It fails as ReadFSAttr would on a
// name that is not a valid fs.FS path.
func ResolveAttr(fsys fs.FS, name string) (Attr, error) {
	if !fs.ValidPath(name) {
		return Attr{}, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	a := Attr{fsys: fsys, name: name}
	if d, ok := fsys.(dirFS); ok {
		a.host = filepath.Join(d.root, filepath.FromSlash(name))
	}
	return a, nil
}

// Name returns the attribute's name in its file system.
func (a Attr) Name() string { return a.name }

// Read reads the attribute as ReadFSAttr does.
func (a Attr) Read(buf []byte) (string, error) {
	var n int
	var err error
	switch {
	case a.dir != nil && a.dir.fd >= 0:
		n, err = readRegularAt(a.dir.fd, a.base, a.host, buf)
	case a.host != "":
		n, err = readRegular(a.host, buf)
	default:
		return ReadFSAttr(a.fsys, a.name, buf)
	}
	if err != nil {
		return "", err
	}
	return string(bytes.TrimSpace(buf[:n])), nil
}

// Dir is a directory whose attributes are read many times. Below a DirFS
// it holds an O_PATH descriptor of the directory, and its attributes are
// opened relative to it (openat with the attribute's own name): the
// kernel then looks up one name instead of walking the whole path again,
// symbolic links such as /sys/class/<class>/<device> included, which was
// half the cost of opening a sysfs attribute (measured on this machine's
// /sys/class/net). The descriptor stays valid while the directory exists;
// once sysfs removes the directory, every open below it fails with
// ENOENT, as the path would. Other file systems read by path. Close
// releases the descriptor.
type Dir struct {
	fsys fs.FS
	name string
	fd   int
}

// OpenDir opens the directory name of fsys.
func OpenDir(fsys fs.FS, name string) (*Dir, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	d := &Dir{fsys: fsys, name: name, fd: -1}
	if root, ok := fsys.(dirFS); ok {
		host := filepath.Join(root.root, filepath.FromSlash(name))
		fd, err := openDirPath(host)
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: host, Err: err}
		}
		d.fd = fd
	}
	return d, nil
}

// Attr returns the attribute base (one path element) of the directory.
func (d *Dir) Attr(base string) (Attr, error) {
	a, err := ResolveAttr(d.fsys, path.Join(d.name, base))
	if err != nil {
		return Attr{}, err
	}
	if base == "" || base == "." || base == ".." || strings.ContainsRune(base, '/') {
		return Attr{}, &fs.PathError{Op: "open", Path: a.name, Err: fs.ErrInvalid}
	}
	a.dir, a.base = d, base
	return a, nil
}

// Close releases the directory's descriptor. Its attributes must not be
// read after that.
func (d *Dir) Close() error {
	if d.fd < 0 {
		return nil
	}
	err := syscall.Close(d.fd)
	d.fd = -1
	return err
}

// readRegularAt is readRegular for the file base of the directory dirfd;
// host names it in errors.
func readRegularAt(dirfd int, base, host string, buf []byte) (int, error) {
	var fd int
	var err error
	for {
		fd, err = unix.Openat(dirfd, base, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return 0, &os.PathError{Op: "open", Path: host, Err: err}
	}
	return readOpen(fd, host, buf)
}
