package demo_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/ethtool"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/demo"
)

// scrapeEthtool runs the real ethtool collector on a demo host frozen at
// elapsed with faults and returns the value of each requested series.
func scrapeEthtool(t *testing.T, faults string, elapsed time.Duration, want ...string) map[string]string {
	t.Helper()
	h, err := demo.New(demo.Config{Faults: faults, Elapsed: elapsed}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	// keep: the checks below read per-queue series in the default part.
	c, err := ethtool.New(ethtool.Config{Source: h.EthtoolSource(), QueueMode: ethtool.QueueKeep}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	b := exposition.NewBuilder()
	if err := c.Update(context.Background(), collector.NewPoll(b, nil)); err != nil {
		t.Fatal(err)
	}
	out := make(map[string]string)
	for _, line := range strings.Split(b.Snapshot().String(), "\n") {
		for _, w := range want {
			if strings.HasPrefix(line, w+" ") {
				out[w] = strings.TrimPrefix(line, w+" ")
			}
		}
	}
	return out
}

func TestEthtoolFaults(t *testing.T) {
	const (
		wd  = `nic_ethtool_wd_expired_total{device="ens5"}`
		bw  = `nic_ethtool_bw_in_allowance_exceeded_total{device="ens5"}`
		oob = `nic_ethtool_rx_out_of_buffer_total{device="enp8s0f1np1"}`
		q15 = `nic_ethtool_queue_rx_packets_total{device="enp8s0f1np1",queue="15"}`
		q7  = `nic_ethtool_queue_tx_cnt_total{device="ens5",queue="7"}`
	)
	calm := scrapeEthtool(t, "", 10*time.Minute, wd, bw, oob, q15, q7)
	if calm[wd] != "0" || calm[bw] != "3241329" || calm[oob] != "1187" {
		t.Errorf("without faults: %v", calm)
	}
	if calm[q15] == "" || calm[q7] == "" {
		t.Errorf("the 16 mlx5 channels and 8 ENA queues are not all exported: %v", calm)
	}
	later := scrapeEthtool(t, "", 20*time.Minute, q15)
	before, _ := strconv.ParseFloat(calm[q15], 64)
	after, _ := strconv.ParseFloat(later[q15], 64)
	if after <= before {
		t.Errorf("traffic counters do not advance: %s then %s", calm[q15], later[q15])
	}
	hit := scrapeEthtool(t, "wd_expired@1m,bw_in_allowance@5m,rx_out_of_buffer@9m", 10*time.Minute, wd, bw, oob)
	// wd_expired for 9 minutes: one reset at the start, one per minute.
	if hit[wd] != "10" {
		t.Errorf("wd_expired = %s, want 10", hit[wd])
	}
	if hit[bw] != "3991329" { // 3241329 + 2500/s * 300 s
		t.Errorf("bw_in_allowance_exceeded = %s, want 3991329", hit[bw])
	}
	if hit[oob] != "901187" { // 1187 + 15000/s * 60 s
		t.Errorf("rx_out_of_buffer = %s, want 901187", hit[oob])
	}
}
