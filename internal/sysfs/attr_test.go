package sysfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/nic-exporter/nic_exporter/internal/safefile"
)

// TestReadersRefuseFIFO plants a FIFO with no writer where an attribute
// should be: both readers must fail at once with ErrNotRegular instead of
// blocking in open(2), and still read the regular file beside it.
func TestReadersRefuseFIFO(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fw_ver"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "mtu"), []byte("1500\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadAttr(filepath.Join(dir, "fw_ver")); !errors.Is(err, safefile.ErrNotRegular) {
		t.Errorf("ReadAttr(FIFO) = %v, want ErrNotRegular", err)
	}
	buf := make([]byte, 4096)
	fsys := DirFS(dir)
	if _, err := ReadFSAttr(fsys, "fw_ver", buf); !errors.Is(err, safefile.ErrNotRegular) {
		t.Errorf("ReadFSAttr(FIFO) = %v, want ErrNotRegular", err)
	}
	if s, err := ReadAttr(filepath.Join(dir, "mtu")); s != "1500" || err != nil {
		t.Errorf("ReadAttr(mtu) = %q, %v", s, err)
	}
	if s, err := ReadFSAttr(fsys, "mtu", buf); s != "1500" || err != nil {
		t.Errorf("ReadFSAttr(mtu) = %q, %v", s, err)
	}
	if _, err := fs.ReadDir(fsys, "."); err != nil {
		t.Errorf("ReadDir through DirFS: %v", err)
	}
	if _, err := fs.Stat(fsys, "fw_ver"); err != nil {
		t.Errorf("Stat of the FIFO through DirFS: %v", err)
	}
}

// TestDirFSListsOnlyDirectories plants a FIFO where a directory should
// be. Listing it through DirFS fails at once: os.ReadDir, which DirFS
// uses, opens with O_DIRECTORY. This guards that no change of DirFS
// brings back a blocking open.
func TestDirFSListsOnlyDirectories(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "ports"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.ReadDir(DirFS(dir), "ports"); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("fs.ReadDir(DirFS, FIFO) = %v, want ENOTDIR", err)
	}
}
