package vmastats

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestReaderCounterFault maps a page of a file, truncates the file and
// increments the counter: the SIGBUS must become an error, every time.
func TestReaderCounterFault(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	for i := 0; i < 50; i++ {
		if err := os.WriteFile(path, make([]byte, os.Getpagesize()), 0o644); err != nil {
			t.Fatal(err)
		}
		fd, err := unix.Open(path, unix.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		mem, err := unix.Mmap(fd, 0, os.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		if err := addInt32(mem); err != nil {
			t.Fatalf("increment on an intact file: %v", err)
		}
		if err := os.Truncate(path, 0); err != nil {
			t.Fatal(err)
		}
		err = addInt32(mem)
		unix.Munmap(mem)
		if err == nil || !strings.Contains(err.Error(), "memory fault") {
			t.Fatalf("increment on a truncated file: %v, want a memory fault error", err)
		}
	}
}
