package kmsg

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/nic-exporter/nic_exporter/internal/safefile"
)

// TestOpenDevKmsgCharDeviceOnly points the kernel log path at a FIFO with
// no writer and at a regular file: both must be refused at once (the FIFO
// used to hold open(2), and with it the startup and the shutdown). A
// character device is opened; /dev/null stands in for /dev/kmsg, which
// the test must not touch on the host.
func TestOpenDevKmsgCharDeviceOnly(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "kmsg")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	regular := filepath.Join(dir, "regular")
	if err := os.WriteFile(regular, []byte("6,1,2,-;not a device\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fifo, regular} {
		done := make(chan error, 1)
		go func() {
			d, err := OpenDevKmsg(path)()
			if err == nil {
				d.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, safefile.ErrNotCharDevice) {
				t.Errorf("OpenDevKmsg(%s) = %v, want ErrNotCharDevice", path, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("OpenDevKmsg(%s) blocked", path)
		}
	}
	d, err := OpenDevKmsg("/dev/null")()
	if err != nil {
		t.Fatalf("OpenDevKmsg(/dev/null): %v", err)
	}
	d.Close()
}
