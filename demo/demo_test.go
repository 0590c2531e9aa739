package demo_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/collector/netdev"
	"github.com/nic-exporter/nic_exporter/demo"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

func TestParseFaults(t *testing.T) {
	tests := []struct {
		in      string
		want    []demo.Fault
		wantErr string
	}{
		{"", nil, ""},
		{"pcie_degraded@4m", []demo.Fault{{Name: "pcie_degraded", Start: 4 * time.Minute}}, ""},
		{"link_flap@1m-90s, link_down@0s", []demo.Fault{{Name: "link_flap", Start: time.Minute, End: 90 * time.Second}, {Name: "link_down"}}, ""},
		{"pcie_degraded", nil, "want name@start"},
		{"bogus@1m", nil, "unknown demo fault"},
		{"link_flap@soon", nil, "bad start"},
		{"link_flap@2m-1m", nil, "must be a duration after the start"},
	}
	for _, tt := range tests {
		got, err := demo.ParseFaults(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseFaults(%q) error = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseFaults(%q): %v", tt.in, err)
			continue
		}
		if len(got) != len(tt.want) {
			t.Errorf("ParseFaults(%q) = %v, want %v", tt.in, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("ParseFaults(%q)[%d] = %v, want %v", tt.in, i, got[i], tt.want[i])
			}
		}
	}
}

func poll(t testing.TB, sysfs string) string {
	t.Helper()
	c := netdev.New(netdev.Config{SysfsPath: sysfs}, zap.NewNop())
	b := exposition.NewBuilder()
	if err := c.Update(context.Background(), collector.NewPoll(b, collector.NewSourceErrors(zap.NewNop(), time.Hour))); err != nil {
		t.Fatal(err)
	}
	return b.Snapshot().String()
}

func TestFaultsChangeTheHost(t *testing.T) {
	tests := []struct {
		faults  string
		elapsed time.Duration
		want    []string
	}{
		{"", time.Minute, []string{
			`nic_pcie_link_degraded{device="enp8s0f1np1",pci_address="0000:08:00.1"} 0`,
			`nic_netdev_carrier{device="enp8s0f1np1"} 1`,
			`nic_netdev_carrier_changes_total{device="enp8s0f1np1"} 2`,
		}},
		{"pcie_degraded@30s", time.Minute, []string{
			`nic_pcie_link_width_lanes{device="enp8s0f1np1",pci_address="0000:08:00.1"} 8`,
			`nic_pcie_link_degraded{device="enp8s0f1np1",pci_address="0000:08:00.1"} 1`,
		}},
		{"pcie_degraded@2m", time.Minute, []string{
			`nic_pcie_link_degraded{device="enp8s0f1np1",pci_address="0000:08:00.1"} 0`,
		}},
		{"link_down@30s-5m", time.Minute, []string{
			`nic_netdev_carrier{device="enp8s0f1np1"} 0`,
			`nic_netdev_up{device="enp8s0f1np1"} 0`,
			`nic_netdev_admin_up{device="enp8s0f1np1"} 1`,
		}},
		{"link_flap@0s-1m", 10 * time.Minute, []string{
			`nic_netdev_carrier_changes_total{device="enp8s0f1np1"} 14`,
		}},
	}
	for _, tt := range tests {
		h, err := demo.New(demo.Config{Faults: tt.faults, Elapsed: tt.elapsed}, zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		out := poll(t, h.SysfsPath())
		for _, w := range tt.want {
			if !strings.Contains(out, w) {
				t.Errorf("faults %q at %s: scrape lacks %q", tt.faults, tt.elapsed, w)
			}
		}
		h.Close()
	}
}

func TestCountersAdvanceAndCloseCleansUp(t *testing.T) {
	h, err := demo.New(demo.Config{UpdateInterval: 10 * time.Millisecond}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(h.SysfsPath(), "class/net/enp8s0f1np1/statistics/rx_bytes")
	first, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.Run(ctx); close(done) }()
	deadline := time.Now().Add(testenv.HangGuard)
	for {
		now, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if string(now) != string(first) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rx_bytes did not advance")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done
	dir := filepath.Dir(h.SysfsPath())
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("Close left %s behind", dir)
	}
}

// TestCloseDuringUpdates closes the host while updates run back to back,
// as when a shutdown's grace runs out on a busy machine before Run has
// returned: the directory must be gone and stay gone, and a later update
// must not fail or write.
func TestCloseDuringUpdates(t *testing.T) {
	for i := range 5 {
		h, err := demo.New(demo.Config{}, zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Dir(h.SysfsPath())
		started := make(chan struct{})
		stop := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			close(started)
			for {
				select {
				case <-stop:
					done <- nil
					return
				default:
				}
				if err := h.Update(); err != nil {
					done <- err
					return
				}
			}
		}()
		<-started
		if err := h.Close(); err != nil {
			t.Fatalf("round %d: Close during updates: %v", i, err)
		}
		close(stop)
		if err := <-done; err != nil {
			t.Fatalf("round %d: an update after Close: %v", i, err)
		}
		if err := h.Update(); err != nil {
			t.Fatalf("round %d: Update after Close: %v", i, err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("round %d: Close left %s behind", i, dir)
		}
	}
}

// BenchmarkDemoNetdevPoll measures a full netdev poll of the demo host.
func BenchmarkDemoNetdevPoll(b *testing.B) {
	h, err := demo.New(demo.Config{Elapsed: time.Minute}, zap.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	c := netdev.New(netdev.Config{SysfsPath: h.SysfsPath()}, zap.NewNop())
	errs := collector.NewSourceErrors(zap.NewNop(), time.Hour)
	bld := exposition.NewBuilder()
	b.ReportAllocs()
	for b.Loop() {
		bld.Reset()
		if err := c.Update(context.Background(), collector.NewPoll(bld, errs)); err != nil {
			b.Fatal(err)
		}
		_ = bld.Snapshot()
	}
}
