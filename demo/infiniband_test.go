package demo_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/collector/infiniband"
	"github.com/nic-exporter/nic_exporter/demo"
)

// scrapeInfiniBand runs the real infiniband collector on a demo host
// frozen at elapsed with faults and returns every series with its value.
func scrapeInfiniBand(t *testing.T, faults string, elapsed time.Duration) map[string]float64 {
	t.Helper()
	h, err := demo.New(demo.Config{Faults: faults, Elapsed: elapsed}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	c := infiniband.New(infiniband.Config{SysfsPath: h.SysfsPath()}, zap.NewNop())
	b := exposition.NewBuilder()
	if err := c.Update(context.Background(), collector.NewPoll(b, nil)); err != nil {
		t.Fatal(err)
	}
	out := make(map[string]float64)
	for _, line := range strings.Split(b.Snapshot().String(), "\n") {
		i := strings.LastIndexByte(line, ' ')
		if i < 0 || strings.HasPrefix(line, "#") {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("series %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// TestRoCECongestionFault checks the shares of the RoCE port's traffic
// that the alerts judge (deploy/mixin, infiniband.libsonnet), over the
// minute from 9 to 10 minutes of demo time: without the fault they stay
// far below the thresholds (1000 ECN-marked per million received, 10
// out-of-sequence per million), with roce_congestion far above; and the
// fault's pause storms on the Ethernet side.
func TestRoCECongestionFault(t *testing.T) {
	const (
		port   = `{device="mlx5_1",port="1"}`
		rcv    = "nic_infiniband_port_rcv_packets_total" + port
		ecn    = "nic_infiniband_hw_np_ecn_marked_roce_packets_total" + port
		cnp    = "nic_infiniband_hw_np_cnp_sent_total" + port
		oos    = "nic_infiniband_hw_out_of_sequence_total" + port
		pauses = `nic_ethtool_priority_tx_pause_total{device="enp8s0f1np1",priority="3"}`
		paused = `nic_ethtool_priority_tx_pause_duration_total{device="enp8s0f1np1",priority="3"}`
		warns  = `nic_ethtool_tx_pause_storm_warning_events_total{device="enp8s0f1np1"}`
		storms = `nic_ethtool_tx_pause_storm_error_events_total{device="enp8s0f1np1"}`
	)
	tests := []struct {
		faults                 string
		ecnPerMillion          [2]float64 // bounds
		oosPerMillion          [2]float64
		cnpPerSecond           [2]float64
		pauses, warns, storms  string
		pausedSecondsPerSecond float64
	}{
		{"", [2]float64{10, 20}, [2]float64{0.1, 0.5}, [2]float64{29, 31}, "0", "0", "0", 0},
		// In effect for the whole minute (from 5m): 4,778 and 47.9 per
		// million; at 10m it has run 5 minutes.
		{"roce_congestion@5m", [2]float64{4700, 4850}, [2]float64{45, 50}, [2]float64{2029, 2031}, "1500000", "16", "5", 0.4},
	}
	for _, tt := range tests {
		before := scrapeInfiniBand(t, tt.faults, 9*time.Minute)
		after := scrapeInfiniBand(t, tt.faults, 10*time.Minute)
		for _, name := range []string{rcv, ecn, cnp, oos} {
			if _, ok := after[name]; !ok {
				t.Fatalf("faults %q: the scrape lacks %s", tt.faults, name)
			}
		}
		perMillion := func(name string) float64 {
			return 1e6 * (after[name] - before[name]) / (after[rcv] - before[rcv])
		}
		if got := perMillion(ecn); got < tt.ecnPerMillion[0] || got > tt.ecnPerMillion[1] {
			t.Errorf("faults %q: %.1f ECN-marked packets per million received, want %v", tt.faults, got, tt.ecnPerMillion)
		}
		if got := perMillion(oos); got < tt.oosPerMillion[0] || got > tt.oosPerMillion[1] {
			t.Errorf("faults %q: %.2f out-of-sequence packets per million received, want %v", tt.faults, got, tt.oosPerMillion)
		}
		if got := (after[cnp] - before[cnp]) / 60; got < tt.cnpPerSecond[0] || got > tt.cnpPerSecond[1] {
			t.Errorf("faults %q: %.1f CNPs sent a second, want %v", tt.faults, got, tt.cnpPerSecond)
		}

		eb := scrapeEthtool(t, tt.faults, 9*time.Minute, paused)
		e := scrapeEthtool(t, tt.faults, 10*time.Minute, pauses, paused, warns, storms)
		if e[pauses] != tt.pauses || e[warns] != tt.warns || e[storms] != tt.storms {
			t.Errorf("faults %q: priority 3 pauses %s, storm warnings %s, storms stopped %s; want %s, %s, %s",
				tt.faults, e[pauses], e[warns], e[storms], tt.pauses, tt.warns, tt.storms)
		}
		b, errB := strconv.ParseFloat(eb[paused], 64)
		a, errA := strconv.ParseFloat(e[paused], 64)
		if errB != nil || errA != nil {
			t.Fatalf("faults %q: priority 3 pause duration %q then %q", tt.faults, eb[paused], e[paused])
		}
		if got := (a - b) / 60 / 1e6; got != tt.pausedSecondsPerSecond {
			t.Errorf("faults %q: priority 3 paused %.2f of the time, want %.2f", tt.faults, got, tt.pausedSecondsPerSecond)
		}
	}
}
