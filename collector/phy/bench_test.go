package phy_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/collector/phy"
	"github.com/nic-exporter/nic_exporter/demo"
)

// benchPoll polls c b.N times into one reused builder, as the Runner does.
func benchPoll(b *testing.B, c collector.Collector) {
	b.Helper()
	bld := exposition.NewBuilder()
	p := collector.NewPoll(bld, collector.NewSourceErrors(zap.NewNop(), time.Hour))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		bld.Reset()
		if err := c.Update(context.Background(), p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPollModule is one port whose module (the real CIG 400G CMIS
// dump, six pages) is read and decoded on every poll, with link state,
// FEC and standard counters: the cost of a poll that is due for a module
// read, without the I2C time of real hardware.
func BenchmarkPollModule(b *testing.B) {
	src := newFake(fixture(b).devs[0])
	c, err := phy.New(phy.Config{Source: src, ModuleInterval: time.Nanosecond}, zap.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	benchPoll(b, c)
}

// BenchmarkPollCached is the same port between module reads: link
// state, FEC and standard counters read, the module's last values
// exported again.
func BenchmarkPollCached(b *testing.B) {
	src := newFake(fixture(b).devs[0])
	c, err := phy.New(phy.Config{Source: src, ModuleInterval: time.Hour}, zap.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	benchPoll(b, c)
}

// BenchmarkPollDemoHost polls the demo host's source (ConnectX-7 port
// with its OSFP module read every poll, ENA and loopback remembered as
// unsupported).
func BenchmarkPollDemoHost(b *testing.B) {
	h, err := demo.New(demo.Config{Elapsed: 10 * time.Minute}, zap.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	c, err := phy.New(phy.Config{Source: h.PhySource(), ModuleInterval: time.Nanosecond}, zap.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	benchPoll(b, c)
}
