package fabricbench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/collector/fabric"
	"github.com/nic-exporter/nic_exporter/internal/ibsimtest"
	"github.com/nic-exporter/nic_exporter/internal/mad"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// topology is the benchmark's fabric: FABRIC_LEAVES leaves of
// FABRIC_HOSTS hosts each (36-port switches) under FABRIC_SPINES spines,
// one cable from each leaf to each spine. The defaults are 100 leaves, 8
// spines and 16 hosts a leaf: 108 switches and 1600 hosts.
func topology() ibsimtest.Topology {
	n := func(env string, def int) int {
		if v, err := strconv.Atoi(os.Getenv(env)); err == nil && v > 0 {
			return v
		}
		return def
	}
	tp := ibsimtest.Topology{Leaves: n("FABRIC_LEAVES", 100), Spines: n("FABRIC_SPINES", 8), HostsPerLeaf: n("FABRIC_HOSTS", 16), UplinksPerSpine: 1, Ports: 36}
	tp.SpinePorts = max(36, tp.Leaves)
	return tp
}

// BenchmarkFabricSweep reads every up switch port of the fabric once per
// iteration, by each approach in turn, on one fabric.
func BenchmarkFabricSweep(b *testing.B) {
	tp := topology()
	f := ibsimtest.Start(b, tp)
	f.StartSM(b)
	ctx := context.Background()
	tr, err := mad.DialSim(mad.SimConfig{SockName: f.SockName, Node: "hca1"})
	if err != nil {
		b.Fatal(err)
	}
	c := mad.NewClient(mad.ClientConfig{Transport: tr, Timeout: testenv.HangGuard}, zap.NewNop())
	b.Cleanup(func() { c.Close() })
	switches, errs := mad.Discover(ctx, c, 1, mad.SweepConfig{Concurrency: 16})
	if len(errs) != 0 {
		b.Fatalf("discovery: %v", errs)
	}
	ports := 0
	for _, sw := range switches {
		ports += len(sw.Ports)
	}
	b.Logf("fabric: %d switches, %d hosts; %d up switch ports", len(switches), tp.Leaves*tp.HostsPerLeaf, ports)

	b.Run("mad/discover+sweep", func(b *testing.B) {
		for b.Loop() {
			sws, errs := mad.Discover(ctx, c, 1, mad.SweepConfig{Concurrency: 16})
			if len(errs) != 0 || len(sws) != len(switches) {
				b.Fatalf("discovery: %d switches, %v", len(sws), errs)
			}
			check(b, mad.Sweep(ctx, c, sws, mad.SweepConfig{Concurrency: 16, States: true}), ports)
		}
		b.ReportMetric(float64(ports), "ports/op")
	})
	b.Run("mad/sweep", func(b *testing.B) {
		for b.Loop() {
			check(b, mad.Sweep(ctx, c, switches, mad.SweepConfig{Concurrency: 16}), ports)
		}
		b.ReportMetric(float64(ports), "ports/op")
	})
	// What --collector.fabric.scope=switches runs on each poll: the
	// counters and each port's PortInfo.
	b.Run("mad/sweep+states", func(b *testing.B) {
		for b.Loop() {
			check(b, mad.Sweep(ctx, c, switches, mad.SweepConfig{Concurrency: 16, States: true}), ports)
		}
		b.ReportMetric(float64(ports), "ports/op")
	})
	// treydock/infiniband_exporter (collectors/switch.go): for each switch
	// from ibnetdiscover, perfquery -l -x -G <guid> <its connected ports>,
	// --perfquery.max-concurrent=1 by default.
	b.Run("perfquery-per-switch", func(b *testing.B) {
		for b.Loop() {
			for _, sw := range switches {
				list := make([]string, len(sw.Ports))
				for i, p := range sw.Ports {
					list[i] = strconv.Itoa(int(p.Num))
				}
				out := f.Run(b, "hca1", "perfquery", "-l", "-x", "-G", fmt.Sprintf("0x%x", sw.GUID), strings.Join(list, ","))
				if n := strings.Count(out, "PortSelect:"); n != len(sw.Ports) {
					b.Fatalf("perfquery of %s printed %d ports, want %d:\n%s", sw.Desc, n, len(sw.Ports), out)
				}
			}
		}
		b.ReportMetric(float64(ports), "ports/op")
	})
	// guilbaults/infiniband-exporter (infiniband-exporter.py): one
	// ibqueryerrors with these options per scrape.
	b.Run("ibqueryerrors", func(b *testing.B) {
		for b.Loop() {
			out := f.Run(b, "hca1", "ibqueryerrors", "--verbose", "--details", "--suppress-common", "--data", "--report-port", "--switch")
			if !strings.Contains(out, fmt.Sprintf("%d nodes checked", len(switches))) {
				b.Fatalf("ibqueryerrors did not check %d switches:\n%s", len(switches), tail(out))
			}
		}
		b.ReportMetric(float64(ports), "ports/op")
	})
	// The fabric collector's default scope on one node: the far end of
	// its one port.
	b.Run("collector/far-end", func(b *testing.B) {
		col := fabric.New(fabric.Config{Open: fabric.SimOpener(mad.SimConfig{SockName: f.SockName, Node: "hca2"}, testenv.HangGuard), MADTimeout: testenv.HangGuard}, zap.NewNop())
		b.Cleanup(func() { col.Close() })
		for b.Loop() {
			bl := exposition.NewBuilder()
			if err := col.Update(ctx, collector.NewPoll(bl, nil)); err != nil {
				b.Fatal(err)
			}
			if !strings.Contains(bl.Snapshot().String(), `nic_fabric_remote_up{device="hca2",port="1"} 1`) {
				b.Fatal("the far end was not read")
			}
		}
		b.ReportMetric(1, "ports/op")
	})
}

func check(b *testing.B, rs []mad.PortReading, ports int) {
	b.Helper()
	if len(rs) != ports {
		b.Fatalf("%d readings, want %d", len(rs), ports)
	}
	for _, r := range rs {
		if r.Err != nil {
			b.Fatalf("%s port %d: %v", r.Switch.Desc, r.Port, r.Err)
		}
	}
}

func tail(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
}
