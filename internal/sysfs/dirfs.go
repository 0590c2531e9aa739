package sysfs

import (
	"io/fs"
	"os"
	"path/filepath"

	"github.com/nic-exporter/nic_exporter/internal/safefile"
)

// DirFS returns the file system rooted at dir, as os.DirFS does, except
// that Open does not block and opens only regular files and directories:
// a named pipe, socket or device under dir fails with
// safefile.ErrNotRegular. Stat, ReadDir, ReadLink and Lstat are those of
// os.DirFS: only ReadDir opens anything, with O_DIRECTORY, so it cannot
// block on a FIFO either.
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

func (d dirFS) ReadDir(name string) ([]fs.DirEntry, error) { return fs.ReadDir(d.base, name) }

func (d dirFS) ReadLink(name string) (string, error) { return fs.ReadLink(d.base, name) }

func (d dirFS) Lstat(name string) (fs.FileInfo, error) { return fs.Lstat(d.base, name) }
