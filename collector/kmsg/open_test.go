package kmsg

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/internal/safefile"
)

// TestOpenDevKmsgCharDeviceOnly points the kernel log path at a FIFO with
// no writer and at a regular file: both must be refused at once (the FIFO
// used to hold open(2), and with it the startup and the shutdown).
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
}

// TestOpenDevKmsgOtherCharDevices points the kernel log path at character
// devices that are not the kernel log. /dev/zero never blocks and its
// reader used to count 16 KiB of zeros at a time as unparsable records,
// burning most of a core with the collector up; /dev/null ends at once.
// Both must be refused at the open, for good, and nothing read from
// them. Reading either is harmless. The real /dev/kmsg, where present, is
// opened read-only and closed without a read.
func TestOpenDevKmsgOtherCharDevices(t *testing.T) {
	for _, path := range []string{"/dev/zero", "/dev/null"} {
		d, err := OpenDevKmsg(path)()
		if err == nil {
			d.Close()
		}
		if !errors.Is(err, ErrNotKmsg) {
			t.Errorf("OpenDevKmsg(%s) = %v, want ErrNotKmsg", path, err)
		}
		k := New(Config{Open: OpenDevKmsg(path), Rules: kernelEngine(t), Replay: true}, zap.NewNop())
		err = k.Update(context.Background(), collector.NewPoll(exposition.NewBuilder(), nil))
		if !errors.Is(err, ErrNotKmsg) || errors.Is(err, collector.ErrNoSource) {
			t.Errorf("collector on %s: Update returned %v, want an error wrapping ErrNotKmsg", path, err)
		}
		k.mu.Lock()
		read := k.records + k.unparsable
		k.mu.Unlock()
		if read != 0 {
			t.Errorf("collector on %s: %d records read, want none", path, read)
		}
		// Permanent: Watch waits for the end instead of reopening.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := k.Watch(ctx, nil); !errors.Is(err, context.Canceled) {
			t.Errorf("collector on %s: Watch returned %v, want it to wait for the end", path, err)
		}
	}
	if _, err := os.Stat("/dev/kmsg"); err == nil {
		d, err := OpenDevKmsg("/dev/kmsg")()
		switch {
		case errors.Is(err, fs.ErrPermission):
			// Without CAP_SYSLOG: the device check comes after the open.
		case err != nil:
			t.Errorf("OpenDevKmsg(/dev/kmsg): %v", err)
		default:
			d.Close()
		}
	}
}
