package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// hostile returns a directory holding a regular file, a FIFO with no
// writer, a directory and, for the size cap, a file of 2 KiB.
func hostile(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "regular"), []byte("ok\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "big"), make([]byte, 2048), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestReadRegular(t *testing.T) {
	dir := hostile(t)
	tests := []struct {
		name    string
		path    string
		want    string
		wantErr error
		errText string
	}{
		{"regular", filepath.Join(dir, "regular"), "ok\n", nil, ""},
		{"fifo", filepath.Join(dir, "fifo"), "", ErrNotRegular, "named pipe"},
		{"directory", filepath.Join(dir, "dir"), "", ErrNotRegular, "directory"},
		{"char device", "/dev/zero", "", ErrNotRegular, "character device"},
		{"too large", filepath.Join(dir, "big"), "", ErrTooLarge, "more than 1024 bytes"},
		{"missing", filepath.Join(dir, "none"), "", os.ErrNotExist, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadRegular(tt.path, 1024)
			if tt.wantErr == nil {
				if err != nil || string(got) != tt.want {
					t.Fatalf("ReadRegular = %q, %v; want %q", got, err, tt.want)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.errText) || !strings.Contains(err.Error(), tt.path) {
				t.Fatalf("ReadRegular = %q, %v; want an error naming %s that wraps %v and says %q", got, err, tt.path, tt.wantErr, tt.errText)
			}
		})
	}
}

func TestOpenCharDevice(t *testing.T) {
	dir := hostile(t)
	f, err := OpenCharDevice("/dev/null")
	if err != nil {
		t.Fatalf("OpenCharDevice(/dev/null): %v", err)
	}
	f.Close()
	for _, p := range []string{filepath.Join(dir, "fifo"), filepath.Join(dir, "regular")} {
		if f, err := OpenCharDevice(p); !errors.Is(err, ErrNotCharDevice) {
			if f != nil {
				f.Close()
			}
			t.Errorf("OpenCharDevice(%s) = %v; want ErrNotCharDevice", p, err)
		}
	}
}
