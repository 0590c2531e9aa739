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
// most len(buf).
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
