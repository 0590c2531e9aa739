package demo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
)

// TestStartContinuesTheHost starts a demo host, lets it run, and starts a
// second one with the same Config.Start later, as a restarted exporter
// does with --demo.start: the second host must show the same kernel log
// records and counters at that moment as the first, not a host that just
// booted.
func TestStartContinuesTheHost(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	now := t0
	clock := func() time.Time { return now }
	cfg := Config{Faults: "pcie_aer@1m,fw_fatal@2m,mlx5_cq_overrun@1m,pcie_aer_corrected@3m", Start: t0, Now: clock}

	first, err := New(cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { first.Close() })
	// The first host runs for 5 minutes, updated every second.
	for now.Before(t0.Add(5 * time.Minute)) {
		now = now.Add(time.Second)
		if err := first.Update(); err != nil {
			t.Fatal(err)
		}
	}
	// The restarted one starts at once at 5 minutes.
	second, err := New(cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { second.Close() })

	if a, b := first.BootTime(), second.BootTime(); !a.Equal(b) {
		t.Errorf("boot time %s after the restart, %s before", b, a)
	}
	messages := func(h *Host) []string {
		h.klog.mu.Lock()
		defer h.klog.mu.Unlock()
		var out []string
		for _, r := range h.klog.records {
			_, msg, _ := strings.Cut(r, ";")
			out = append(out, msg)
		}
		return out
	}
	a, b := messages(first), messages(second)
	if len(a) != len(b) || strings.Join(a, "") != strings.Join(b, "") {
		t.Errorf("kernel log differs after the restart:\nbefore %d records %q\nafter  %d records %q", len(a), a, len(b), b)
	}
	for _, rel := range []string{
		ethDev + "/aer_dev_correctable",
		ethDev + "/aer_dev_nonfatal",
		ethDev + "/net/enp8s0f1np1/statistics/rx_packets",
	} {
		x, err := os.ReadFile(filepath.Join(first.dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		y, err := os.ReadFile(filepath.Join(second.dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		if string(x) != string(y) {
			t.Errorf("%s: %q after the restart, %q before", rel, y, x)
		}
	}
}

// TestStartInTheFuture refuses a start the clock has not reached.
func TestStartInTheFuture(t *testing.T) {
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	_, err := New(Config{Start: now.Add(time.Hour), Now: func() time.Time { return now }}, zap.NewNop())
	if err == nil || !strings.Contains(err.Error(), "in the future") {
		t.Errorf("New with a future start: %v", err)
	}
}
