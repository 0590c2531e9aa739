package ethtool_test

import (
	"context"
	"fmt"
	"testing"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/ethtool"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/internal/ethtooldump"
	"github.com/nic-exporter/nic_exporter/internal/ethtoolioctl"
)

// benchHost returns ifaces mlx5-like interfaces with stats statistics
// each: 200 device-level ones, the rest per channel (rxN_/txN_/chN_).
func benchHost(ifaces, stats int) *ethtooldump.Source {
	perChannel := []string{"ch%d_events", "ch%d_poll", "ch%d_arm", "ch%d_aff_change", "ch%d_force_irq", "ch%d_eq_rearm"}
	for _, s := range []string{"packets", "bytes", "csum_complete", "csum_unnecessary", "csum_none", "xdp_drop", "xdp_redirect",
		"lro_packets", "lro_bytes", "gro_packets", "gro_bytes", "gro_skbs", "ecn_mark", "removed_vlan_packets", "wqe_err",
		"oversize_pkts_sw_drop", "buff_alloc_err", "cqe_compress_blks", "cqe_compress_pkts", "congst_umr", "arfs_err", "recover",
		"pp_alloc_fast", "pp_alloc_slow", "pp_recycle_cached", "pp_recycle_ring", "xdp_tx_xmit", "xdp_tx_full", "xdp_tx_err", "xdp_tx_cqes"} {
		perChannel = append(perChannel, "rx%d_"+s)
	}
	for _, s := range []string{"packets", "bytes", "tso_packets", "tso_bytes", "csum_partial", "added_vlan_packets", "nop",
		"csum_none", "stopped", "dropped", "xmit_more", "recover", "cqes", "wake", "cqe_err", "mpwqe_blks", "mpwqe_pkts"} {
		perChannel = append(perChannel, "tx%d_"+s)
	}
	var devs []*ethtooldump.Device
	for i := 0; i < ifaces; i++ {
		d := &ethtooldump.Dump{Driver: "mlx5_core", Version: "6.8.0", BusInfo: fmt.Sprintf("0000:%02x:00.0", i)}
		for j := 0; j < 200; j++ {
			d.Names = append(d.Names, fmt.Sprintf("device_stat_%d_phy", j))
		}
		for ch := 0; len(d.Names) < stats; ch++ {
			for _, f := range perChannel {
				if len(d.Names) == stats {
					break
				}
				d.Names = append(d.Names, fmt.Sprintf(f, ch))
			}
		}
		d.Values = make([]uint64, len(d.Names))
		for j := range d.Values {
			d.Values[j] = uint64(j) * 1234567
		}
		devs = append(devs, &ethtooldump.Device{Name: fmt.Sprintf("enp%ds0f0np0", i+1), Index: i + 2, Dump: d,
			Link: ethtoolioctl.Link{HasSettings: true, SpeedMbps: 400000, Duplex: 1, HasDetected: true, Detected: true}})
	}
	return ethtooldump.NewSource(devs...)
}

// BenchmarkEthtoolPoll measures one steady-state poll (the string tables
// are cached) of 16 interfaces with 5,000 statistics each, including the
// snapshot the Runner publishes, in each per-queue mode.
func BenchmarkEthtoolPoll(b *testing.B) {
	for _, mode := range []ethtool.QueueMode{ethtool.QueueKeep, ethtool.QueueSum, ethtool.QueueDrop} {
		b.Run(string(mode), func(b *testing.B) {
			c, err := ethtool.New(ethtool.Config{Source: benchHost(16, 5000), QueueMode: mode}, zap.NewNop())
			if err != nil {
				b.Fatal(err)
			}
			bld := exposition.NewBuilder()
			ctx := context.Background()
			// The first poll fetches the string tables and builds the plans.
			if err := c.Update(ctx, collector.NewPoll(bld, nil)); err != nil {
				b.Fatal(err)
			}
			var series int
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				bld.Reset()
				if err := c.Update(ctx, collector.NewPoll(bld, nil)); err != nil {
					b.Fatal(err)
				}
				series = bld.Snapshot().Series()
			}
			b.ReportMetric(float64(series), "series")
		})
	}
}
