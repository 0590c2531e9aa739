package ethtoolioctl

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// TestNewRefusesNonNamespace gives New a FIFO with no writer, a regular
// file and a directory as --collector.ethtool.netns: each must fail at
// once with ErrNotNamespace (the FIFO used to hold the startup in
// open(2)), and the exporter's own namespace file must be accepted.
func TestNewRefusesNonNamespace(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	regular := filepath.Join(dir, "regular")
	if err := os.WriteFile(regular, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fifo, regular, dir} {
		done := make(chan error, 1)
		go func() {
			s, err := New(path)
			if err == nil {
				s.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotNamespace) {
				t.Errorf("New(%s) = %v, want ErrNotNamespace", path, err)
			}
		case <-time.After(testenv.HangGuard):
			t.Fatalf("New(%s) blocked", path)
		}
	}

	testenv.Root(t) // entering a namespace, even the own one, needs CAP_SYS_ADMIN
	s, err := New("/proc/self/ns/net")
	if err != nil {
		t.Fatalf("New(/proc/self/ns/net): %v", err)
	}
	s.Close()
}
