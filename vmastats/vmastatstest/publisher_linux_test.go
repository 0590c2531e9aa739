package vmastatstest

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nic-exporter/nic_exporter/vmastats"
)

// TestPublisher follows a published file through its life: created as
// libvma creates it, read by a reader that bumps the counter through its
// own mapping, updated in place, and removed at a normal exit or left
// behind after a kill.
func TestPublisher(t *testing.T) {
	dir := t.TempDir()
	s := Sample(vmastats.LayoutB)
	p, err := NewPublisher(dir, 4242, s)
	if err != nil {
		t.Fatal(err)
	}
	if p.Path() != filepath.Join(dir, "vmastat.4242") {
		t.Errorf("path %s", p.Path())
	}
	fi, err := os.Stat(p.Path())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != vmastats.FileSize(vmastats.LayoutB, 8) || fi.Mode().Perm()&^0o644 != 0 {
		t.Errorf("size %d, mode %v", fi.Size(), fi.Mode())
	}
	want, err := Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(p.Path()); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("file content differs from Encode (%v)", err)
	}
	if _, err := NewPublisher(dir, 4242, s); !errors.Is(err, fs.ErrExist) {
		t.Errorf("second publisher for the same pid: %v, want ErrExist", err)
	}

	// A reader bumps the counter through its own shared mapping.
	f, err := os.OpenFile(p.Path(), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, os.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	mem[0] = 3
	unix.Munmap(mem)
	if p.ReaderCounter() != 3 {
		t.Errorf("reader counter %d, want 3", p.ReaderCounter())
	}

	// Update rewrites the rest and keeps the counter.
	s.Sockets[1].Counters[vmastats.TxBytes] = 123456
	if err := p.Update(s); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p.Path())
	if err != nil {
		t.Fatal(err)
	}
	got, err := vmastats.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.ReaderCounter != 3 || got.Sockets[1].Counters[vmastats.TxBytes] != 123456 {
		t.Errorf("after Update: reader counter %d, tx bytes %d", got.ReaderCounter, got.Sockets[1].Counters[vmastats.TxBytes])
	}
	s.MaxSockets = 9
	if err := p.Update(s); err == nil {
		t.Error("Update with another socket count succeeded")
	}

	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p.Path()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after Close: %v, want the file removed", err)
	}

	d, err := NewPublisher(dir, 4243, Sample(vmastats.LayoutA))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Detach(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d.Path()); err != nil {
		t.Errorf("after Detach: %v, want the file left behind", err)
	}
}
