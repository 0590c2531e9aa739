package phy_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/collectortest"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/collector/phy"
	"github.com/nic-exporter/nic_exporter/internal/sff"
)

// fakeDev is one interface of the fake source: what each operation
// answers.
type fakeDev struct {
	iface     phy.Interface
	link      phy.LinkState
	linkErr   error
	fec       phy.FEC
	fecErr    error
	stats     phy.Stats
	statsErr  error
	module    *sff.Memory
	moduleErr error
}

// fake is a Source, StatsSource and ModuleSource over fakeDevs that
// counts the calls of each operation per interface.
type fake struct {
	mu    sync.Mutex
	devs  []*fakeDev
	calls map[string]int // "op dev"
}

func newFake(devs ...*fakeDev) *fake { return &fake{devs: devs, calls: map[string]int{}} }

var _ interface {
	phy.Source
	phy.StatsSource
	phy.ModuleSource
} = (*fake)(nil)

func (f *fake) dev(op, name string) *fakeDev {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[op+" "+name]++
	for _, d := range f.devs {
		if d.iface.Name == name {
			return d
		}
	}
	panic("fake: unknown device " + name)
}

func (f *fake) count(op, name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op+" "+name]
}

func (f *fake) Interfaces() ([]phy.Interface, error) {
	var out []phy.Interface
	for _, d := range f.devs {
		out = append(out, d.iface)
	}
	return out, nil
}

func (f *fake) LinkState(n string) (phy.LinkState, error) {
	d := f.dev("linkstate", n)
	return d.link, d.linkErr
}

func (f *fake) FEC(n string) (phy.FEC, error) {
	d := f.dev("fec", n)
	return d.fec, d.fecErr
}

func (f *fake) Stats(n string) (phy.Stats, error) {
	d := f.dev("stats", n)
	return d.stats, d.statsErr
}

func (f *fake) Module(n string) (*sff.Memory, error) {
	d := f.dev("module", n)
	if d.module == nil {
		return nil, d.moduleErr
	}
	return d.module.Clone(), d.moduleErr
}

// loadDump reads one of the real module dumps of internal/sff/testdata.
func loadDump(t testing.TB, name string) *sff.Memory {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "internal", "sff", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := sff.ParseTextDump(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return m
}

// clock is a settable clock for Config.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Unix(1700000000, 0)} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// newCollector returns a collector over src with the clock c.
func newCollector(t testing.TB, src phy.Source, c *clock, log *zap.Logger) *phy.Collector {
	t.Helper()
	col, err := phy.New(phy.Config{Source: src, Now: c.now}, log)
	if err != nil {
		t.Fatal(err)
	}
	return col
}

// pollOnce runs one Update and returns the snapshot.
func pollOnce(t testing.TB, c collector.Collector, errs *collector.SourceErrors) *exposition.Snapshot {
	t.Helper()
	return collectortest.MustPoll(t, c, errs).Snapshot
}

// series parses a text exposition into "name{a="x",b="y"}" -> value.
func series(t testing.TB, text string) map[string]float64 {
	t.Helper()
	return collectortest.Series(t, text)
}

// families returns the family names of series in s with the prefix.
func withPrefix(s map[string]float64, prefix string) []string {
	var out []string
	for k := range s {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	collectortest.Golden(t, filepath.Join("testdata", name), got)
}

func u64(v uint64) *uint64 { return &v }
func boolp(b bool) *bool   { return &b }
