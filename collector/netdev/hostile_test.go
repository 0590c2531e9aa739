package netdev

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// TestNetdevHostileTree polls a sysfs tree in which a FIFO with no writer
// stands where the mtu of one interface should be, and another interface
// has counters no kernel prints (NaN, Inf, an exponent, a negative value).
// The poll must return, every interface must still be exported, and none
// of the bad counters may become a sample.
func TestNetdevHostileTree(t *testing.T) {
	root := sysfsFixture(t)
	pf := filepath.Join(root, "devices/pci0000:00/0000:00:01.1/0000:08:00.1/net/enp8s0f1np1")
	if err := os.Remove(filepath.Join(pf, "mtu")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(pf, "mtu"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(root, "devices/virtual/net/bad0")
	files := map[string]string{
		"ifindex":               "9",
		"operstate":             "up",
		"flags":                 "0x1003",
		"carrier":               "1",
		"mtu":                   "1500",
		"carrier_changes":       "-1",
		"statistics/rx_packets": "NaN",
		"statistics/tx_packets": "+Inf",
		"statistics/rx_bytes":   "1e+26",
		"statistics/tx_bytes":   "-5",
		"statistics/rx_errors":  "12.5",
		"statistics/tx_errors":  "0x10",
		"statistics/rx_dropped": "3",
	}
	for rel, content := range files {
		p := filepath.Join(bad, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../../devices/virtual/net/bad0", filepath.Join(root, "class/net/bad0")); err != nil {
		t.Fatal(err)
	}

	c := New(Config{SysfsPath: root}, zap.NewNop())
	errs := collector.NewSourceErrors(zap.NewNop(), time.Hour)
	b := exposition.NewBuilder()
	done := make(chan error, 1)
	go func() { done <- c.Update(context.Background(), collector.NewPoll(b, errs)) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Update: %v", err)
		}
	case <-time.After(testenv.HangGuard):
		// The blocked open cannot be interrupted; the test binary ends
		// with it.
		t.Fatal("the poll blocked on the FIFO")
	}
	out := b.Snapshot().String()
	for _, want := range []string{
		`nic_netdev_info{device="enp8s0f1np1"`,
		`nic_netdev_rx_packets_total{device="enp8s0f1np1"} 123456789`,
		`nic_netdev_mtu_bytes{device="lo"} 65536`,
		`nic_netdev_mtu_bytes{device="bad0"} 1500`,
		`nic_netdev_rx_dropped_total{device="bad0"} 3`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("scrape lacks %q", want)
		}
	}
	if strings.Contains(out, `nic_netdev_mtu_bytes{device="enp8s0f1np1"}`) {
		t.Errorf("the FIFO gave an mtu sample")
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, `device="bad0"`) && (strings.Contains(line, "_total") || strings.Contains(line, "carrier_changes")) &&
			!strings.HasPrefix(line, "nic_netdev_rx_dropped_total") {
			t.Errorf("a bad counter was exported: %s", line)
		}
		if strings.Contains(line, "NaN") || strings.Contains(line, "Inf") {
			t.Errorf("non-finite sample: %s", line)
		}
	}
	got := map[string]uint64{}
	for _, rc := range errs.Counts() {
		got[rc.Reason] = rc.Count
	}
	// The fixture's own errors (an unparsable rx_dropped, docker0's empty
	// ifindex, which no filter excludes here, and a directory where a
	// statistic should be), the FIFO, and the seven bad counters.
	if got["parse"] != 2+7 || got["other"] != 1+1 {
		t.Errorf("source errors = %v, want parse 9 (2 of the fixture, 7 bad counters) and other 2 (the fixture's directory, the FIFO)", got)
	}
}
