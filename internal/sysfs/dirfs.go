package sysfs

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/nic-exporter/nic_exporter/internal/safefile"
)

// DirFS returns the file system rooted at dir, as os.DirFS does, except
// that Open does not block and opens only regular files and directories:
// a named pipe, socket or device under dir fails with
// safefile.ErrNotRegular. ReadDir opens only directories (see ReadDir
// in this package); Stat, ReadLink and Lstat are those of os.DirFS, and
// none of them opens the file.
func DirFS(dir string) fs.FS {
	return dirFS{root: dir, base: os.DirFS(dir)}
}

type dirFS struct {
	root string
	base fs.FS
}

func (d dirFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	f, err := safefile.Open(filepath.Join(d.root, filepath.FromSlash(name)), func(m fs.FileMode) bool {
		return m.IsRegular() || m.IsDir()
	}, safefile.ErrNotRegular)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (d dirFS) Stat(name string) (fs.FileInfo, error) { return fs.Stat(d.base, name) }

func (d dirFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrInvalid}
	}
	return ReadDir(filepath.Join(d.root, filepath.FromSlash(name)))
}

// ReadDir is os.ReadDir for directories a hostile tree may have replaced:
// it opens path only if it is a directory (O_DIRECTORY, and O_NONBLOCK),
// so a FIFO in a directory's place fails at once instead of blocking the
// open. The entries are sorted by name.
func ReadDir(path string) ([]fs.DirEntry, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, nil
}

func (d dirFS) ReadLink(name string) (string, error) { return fs.ReadLink(d.base, name) }

func (d dirFS) Lstat(name string) (fs.FileInfo, error) { return fs.Lstat(d.base, name) }
