package sysfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/nic-exporter/nic_exporter/internal/errclass"
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

// TestReadFSAttrDirFSAgreesWithFS reads the same attributes through
// DirFS, whose reads use the system calls directly, and through a plain
// os.DirFS, which ReadFSAttr reads with Open and ReadFull: values and
// error classes agree. A directory is refused as not regular by DirFS
// and fails its read through the other.
func TestReadFSAttrDirFSAgreesWithFS(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"mtu":      "1500\n",
		"empty":    "",
		"spaces":   "  up \n\n",
		"long":     string(make([]byte, 5000)),
		"counters": "",
	} {
		if name == "counters" {
			if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fast, plain := DirFS(dir), os.DirFS(dir)
	tests := []struct {
		name     string
		want     string
		wantErr  func(error) bool
		plainErr func(error) bool
	}{
		{name: "mtu", want: "1500"},
		{name: "empty", want: ""},
		{name: "spaces", want: "up"},
		{name: "missing", wantErr: errclass.IsNotExist, plainErr: errclass.IsNotExist},
		{name: "../mtu", wantErr: func(err error) bool { return errors.Is(err, fs.ErrInvalid) }, plainErr: func(err error) bool { return err != nil }},
		{name: "counters", wantErr: func(err error) bool { return errors.Is(err, safefile.ErrNotRegular) }, plainErr: func(err error) bool { return err != nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			buf := make([]byte, 4096)
			got, err := ReadFSAttr(fast, tt.name, buf)
			pgot, perr := ReadFSAttr(plain, tt.name, make([]byte, 4096))
			if tt.wantErr != nil {
				if !tt.wantErr(err) {
					t.Errorf("DirFS: %q, %v; want the error class", got, err)
				}
				if !tt.plainErr(perr) {
					t.Errorf("os.DirFS: %q, %v; want an error", pgot, perr)
				}
				return
			}
			if err != nil || perr != nil || got != tt.want || pgot != tt.want {
				t.Errorf("DirFS %q, %v; os.DirFS %q, %v; want %q", got, err, pgot, perr, tt.want)
			}
		})
	}
	// A value longer than the buffer is cut at the buffer by both.
	got, err := ReadFSAttr(fast, "long", make([]byte, 4096))
	pgot, perr := ReadFSAttr(plain, "long", make([]byte, 4096))
	if err != nil || perr != nil || len(got) != 4096 || got != pgot {
		t.Errorf("long attribute: DirFS %d bytes, %v; os.DirFS %d bytes, %v; want 4096 each", len(got), err, len(pgot), perr)
	}
}

// TestDir reads attributes through a Dir, relative to its descriptor,
// checks that a removed attribute fails as a missing file, that names
// with a slash or dot names are refused, and that Close releases the
// descriptor (the process's open descriptors, from /proc/self/fd).
func TestDir(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "class", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "class", "x", "a"), []byte(" 42\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fds := func() int {
		t.Helper()
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip("no /proc/self/fd")
		}
		return len(ents)
	}
	before := fds()
	d, err := OpenDir(DirFS(root), "class/x")
	if err != nil {
		t.Fatal(err)
	}
	if got := fds(); got != before+1 {
		t.Errorf("%d descriptors open with the Dir, want %d", got, before+1)
	}
	a, err := d.Attr("a")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	if got, err := a.Read(buf); err != nil || got != "42" {
		t.Errorf("Read = %q, %v; want 42", got, err)
	}
	if a.Name() != "class/x/a" {
		t.Errorf("Name = %q", a.Name())
	}
	if err := os.Remove(filepath.Join(root, "class", "x", "a")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Read(buf); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Read of a removed attribute: %v, want a missing file", err)
	}
	for _, bad := range []string{"", ".", "..", "y/z"} {
		if _, err := d.Attr(bad); err == nil {
			t.Errorf("Attr(%q) accepted", bad)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if got := fds(); got != before {
		t.Errorf("%d descriptors open after Close, want %d", got, before)
	}
}
