package sysfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/nic-exporter/nic_exporter/internal/safefile"
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
// joined and validated once, so a read is only its system calls.
type Attr struct {
	fsys fs.FS
	name string
	host string // the host path, for a DirFS
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
	if a.host == "" {
		return ReadFSAttr(a.fsys, a.name, buf)
	}
	n, err := readRegular(a.host, buf)
	if err != nil {
		return "", err
	}
	return string(bytes.TrimSpace(buf[:n])), nil
}
