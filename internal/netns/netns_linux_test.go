package netns

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestOpen opens this process's own namespace file and refuses, at once,
// a regular file, a FIFO without a writer (which a blocking open would
// wait on forever) and a missing path.
func TestOpen(t *testing.T) {
	fd, err := Open("/proc/self/ns/net")
	if err != nil {
		t.Fatalf("Open(/proc/self/ns/net): %v", err)
	}
	unix.Close(fd)

	dir := t.TempDir()
	regular := filepath.Join(dir, "file")
	if err := os.WriteFile(regular, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want error
	}{
		{regular, ErrNotNamespace},
		{fifo, ErrNotNamespace},
		{filepath.Join(dir, "missing"), os.ErrNotExist},
	} {
		if fd, err := Open(tc.path); !errors.Is(err, tc.want) {
			if err == nil {
				unix.Close(fd)
			}
			t.Errorf("Open(%s) = %v, want %v", tc.path, err, tc.want)
		}
	}
}

// TestDoWithoutPath runs f in the current namespace and passes its error
// through; TestDoRefuses checks that f never runs for a bad path.
func TestDoWithoutPath(t *testing.T) {
	want := errors.New("from f")
	if err := Do("", func() error { return want }); !errors.Is(err, want) {
		t.Errorf("Do = %v, want %v", err, want)
	}
}

func TestDoRefuses(t *testing.T) {
	ran := false
	err := Do(t.TempDir(), func() error { ran = true; return nil })
	if !errors.Is(err, ErrNotNamespace) || ran {
		t.Errorf("Do(directory) = %v, ran %v; want ErrNotNamespace and f not run", err, ran)
	}
}
