package scalehost

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/ethtool"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/collector/infiniband"
	"github.com/nic-exporter/nic_exporter/collector/netdev"
	"github.com/nic-exporter/nic_exporter/collector/scrape"
	"github.com/nic-exporter/nic_exporter/collector/vma"
	"github.com/nic-exporter/nic_exporter/internal/ethtooldump"
	"github.com/nic-exporter/nic_exporter/internal/ethtoolioctl"
)

// The large host is written once per test binary, only when a benchmark
// asks for it.
var (
	largeOnce   sync.Once
	largeRoot   string
	largeLayout Layout
	largeErr    error
)

func largeHost(b *testing.B) (Config, Layout) {
	b.Helper()
	largeOnce.Do(func() {
		largeRoot, largeErr = os.MkdirTemp("", "scalehost-large-")
		if largeErr == nil {
			largeLayout, largeErr = Write(largeRoot, Large())
		}
	})
	if largeErr != nil {
		b.Fatal(largeErr)
	}
	return Large(), largeLayout
}

func TestMain(m *testing.M) {
	code := m.Run()
	if largeRoot != "" {
		os.RemoveAll(largeRoot)
	}
	os.Exit(code)
}

// runner polls a collector the way collector.Runner does: one Builder,
// Reset before each poll, a Snapshot after it.
type runner struct {
	c    collector.Collector
	b    *exposition.Builder
	snap *exposition.Snapshot
}

func (r *runner) poll(tb testing.TB) {
	r.b.Reset()
	if err := r.c.Update(context.Background(), collector.NewPoll(r.b, nil)); err != nil {
		tb.Fatalf("%s: %v", r.c.Name(), err)
	}
	r.snap = r.b.Snapshot()
}

// Snapshot implements scrape.Source.
func (r *runner) Snapshot() *exposition.Snapshot { return r.snap }

// largeCollectors returns the collectors of the large host, each polled
// once (string tables fetched, VMA handshake done).
func largeCollectors(b *testing.B) []*runner {
	c, l := largeHost(b)
	src, err := EthtoolSource(l, c)
	if err != nil {
		b.Fatal(err)
	}
	eth, err := ethtool.New(ethtool.Config{Source: src}, zap.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	cs := []collector.Collector{
		netdev.New(netdev.Config{SysfsPath: l.Sysfs}, zap.NewNop()),
		infiniband.New(infiniband.Config{SysfsPath: l.Sysfs}, zap.NewNop()),
		eth,
		vma.New(vma.Config{Dirs: []string{l.VMA}, Liveness: c.VMALiveness()}, zap.NewNop()),
	}
	out := make([]*runner, len(cs))
	for i, c := range cs {
		out[i] = &runner{c: c, b: exposition.NewBuilder()}
		out[i].poll(b)
	}
	return out
}

// BenchmarkLargeHostPoll measures a steady-state poll of each collector
// on the large host (16 mlx5 ports × 64 channels, 16 InfiniBand ports,
// 4 VMA processes × 256 sockets), sources read from files (sysfs tree,
// VMA files) or memory (ethtool dumps), including the snapshot. It
// reports the share of one core a poll every 5 s costs.
func BenchmarkLargeHostPoll(b *testing.B) {
	for _, r := range largeCollectors(b) {
		b.Run(r.c.Name(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r.poll(b)
			}
			b.ReportMetric(float64(r.snap.Series()), "series")
			perOp := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			b.ReportMetric(100*perOp/5e9, "%core@5s")
		})
	}
}

// BenchmarkLargeHostScrape serves the large host's four snapshots through
// the real /metrics handler.
func BenchmarkLargeHostScrape(b *testing.B) {
	rs := largeCollectors(b)
	sources := make([]scrape.Source, len(rs))
	series := 0
	for i, r := range rs {
		sources[i] = r
		series += r.snap.Series()
	}
	h := scrape.NewHandler(sources, scrape.Config{}, zap.NewNop())
	for _, gz := range []bool{false, true} {
		b.Run(fmt.Sprintf("gzip=%v", gz), func(b *testing.B) { benchServe(b, h, gz, series) })
	}
}

// benchServe scrapes h into a writer that copies every byte, as writing
// to a socket does.
func benchServe(b *testing.B, h http.Handler, gz bool, series int) {
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	if gz {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	w := &discard{header: http.Header{}}
	h.ServeHTTP(w, req) // the first gzip scrape compresses the snapshots
	b.ReportAllocs()
	for b.Loop() {
		w.n = 0
		h.ServeHTTP(w, req)
	}
	b.ReportMetric(float64(series), "series")
	b.ReportMetric(float64(w.n), "bytes")
}

// discard is a ResponseWriter that copies the body into a reused buffer.
type discard struct {
	header http.Header
	n      int
	buf    []byte
}

func (d *discard) Header() http.Header { return d.header }
func (d *discard) Write(p []byte) (int, error) {
	if d.n+len(p) > len(d.buf) {
		d.buf = append(d.buf[:d.n], p...)
		d.buf = d.buf[:cap(d.buf)]
	} else {
		copy(d.buf[d.n:], p)
	}
	d.n += len(p)
	return len(p), nil
}
func (d *discard) WriteHeader(int) {}

// ethtoolOnly returns an ethtool collector over n mlx5 ports with 64
// channels (about 5,000 statistics each), with the generator's values,
// polled once.
func ethtoolOnly(b *testing.B, n int) *runner {
	c := Config{Netdevs: n, Channels: 64}
	var devs []*ethtooldump.Device
	for i, ifc := range c.Ifaces() {
		d, err := ethtooldump.Parse(strings.NewReader(EthtoolDump(ifc, i)))
		if err != nil {
			b.Fatal(err)
		}
		devs = append(devs, &ethtooldump.Device{Name: ifc.Name, Index: ifc.Index, Dump: d,
			Link: ethtoolioctl.Link{HasSettings: true, SpeedMbps: 400000, Duplex: 1, HasDetected: true, Detected: true}})
	}
	e, err := ethtool.New(ethtool.Config{Source: ethtooldump.NewSource(devs...)}, zap.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	r := &runner{c: e, b: exposition.NewBuilder()}
	r.poll(b)
	return r
}

// BenchmarkScrapeSeries measures scrapes of about 10k, 100k and 1M
// ethtool series with realistic (non-zero, varied) values, and the heap
// the collector and its snapshot keep per series.
func BenchmarkScrapeSeries(b *testing.B) {
	for _, ports := range []int{2, 20, 200} {
		var before runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		r := ethtoolOnly(b, ports)
		r.poll(b) // steady state: the Builder has handed its buffers over once
		var after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&after)
		series := r.snap.Series()
		heapPerSeries := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(series)
		h := scrape.NewHandler([]scrape.Source{r}, scrape.Config{}, zap.NewNop())
		for _, gz := range []bool{false, true} {
			b.Run(fmt.Sprintf("series=%d/gzip=%v", series, gz), func(b *testing.B) {
				benchServe(b, h, gz, series)
				b.ReportMetric(heapPerSeries, "heap-B/series")
			})
		}
		runtime.KeepAlive(r)
	}
}
