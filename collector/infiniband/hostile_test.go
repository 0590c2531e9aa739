package infiniband_test

import (
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

// TestInfiniBandFIFO plants a FIFO with no writer in place of mlx5_2's
// fw_ver and polls through the collector's own file system (no test FS):
// the poll must return, the FIFO be counted as a source error, and every
// device, mlx5_2 included, still be exported.
func TestInfiniBandFIFO(t *testing.T) {
	root := fixture(t)
	fw := filepath.Join(root, "devices/pci0000:00/0000:00:02.0/0000:5e:00.0/infiniband/mlx5_2/fw_ver")
	if err := os.Remove(fw); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fw, 0o644); err != nil {
		t.Fatal(err)
	}
	errs := collector.NewSourceErrors(zap.NewNop(), time.Hour)
	type result struct {
		snap *exposition.Snapshot
		err  error
	}
	done := make(chan result, 1)
	go func() {
		snap, err := ibPoll(t, newIB(t, root, nil, "", ""), errs)
		done <- result{snap, err}
	}()
	var res result
	select {
	case res = <-done:
	case <-time.After(testenv.HangGuard):
		t.Fatal("the poll blocked on the FIFO") // the blocked open ends with the test binary
	}
	if res.err != nil {
		t.Fatal(res.err)
	}
	if res.snap.Devices() != 4 {
		t.Errorf("devices = %d, want 4", res.snap.Devices())
	}
	out := res.snap.String()
	for _, s := range []string{
		`nic_infiniband_info{device="mlx5_2"`,
		`nic_infiniband_port_phys_state{device="mlx5_2",port="1"} 3`,
		`nic_infiniband_info{device="mlx5_1"`,
	} {
		if !strings.Contains(out, s) {
			t.Errorf("scrape lacks %s", s)
		}
	}
	if got := reasons(errs)["other"]; got != 1 {
		t.Errorf("source errors of reason other = %d, want 1 (the FIFO); all: %v", got, reasons(errs))
	}
}

// TestInfiniBandPortZeroAndDeviceCounters gives mlx5_1, which has
// device-level hw_counters (exported with port="0"), a ports/0 directory
// with hw_counters of its own, as a switch's management port has: no
// series may be exported twice.
func TestInfiniBandPortZeroAndDeviceCounters(t *testing.T) {
	root := fixture(t)
	dev := filepath.Join(root, "devices/pci0000:00/0000:00:02.0/0000:1b:00.0/infiniband/mlx5_1")
	for rel, content := range map[string]string{
		"ports/0/state":                      "4: ACTIVE",
		"ports/0/phys_state":                 "5: LinkUp",
		"ports/0/hw_counters/rp_cnp_handled": "7",
		"ports/0/hw_counters/out_of_buffer":  "8",
	} {
		p := filepath.Join(dev, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := ibPoll(t, newIB(t, root, nil, "", ""), collector.NewSourceErrors(zap.NewNop(), time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	out := snap.String()
	seen := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		series, _, _ := strings.Cut(line, "} ")
		if seen[series] {
			t.Errorf("series exported twice: %s}", series)
		}
		seen[series] = true
	}
	// The port's own value wins; device-level counters the port lacks
	// are still exported.
	for _, s := range []string{
		`nic_infiniband_hw_rp_cnp_handled_total{device="mlx5_1",port="0"} 7`,
		`nic_infiniband_hw_out_of_buffer_total{device="mlx5_1",port="0"} 8`,
		`nic_infiniband_hw_duplicate_request_total{device="mlx5_1",port="0"}`,
	} {
		if !strings.Contains(out, s) {
			t.Errorf("scrape lacks %s", s)
		}
	}
}
