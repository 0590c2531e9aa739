package phy_test

import (
	"os"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/phy"
	"github.com/nic-exporter/nic_exporter/internal/errclass"
	"github.com/nic-exporter/nic_exporter/internal/sff"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

func ip(t *testing.T, args ...string) {
	t.Helper()
	testenv.Run(t, append([]string{"ip"}, args...)...)
}

// countingSource counts the FEC and module requests the collector makes
// of the real host source.
type countingSource struct {
	*phy.HostSource
	fec, module map[string]int
}

func (c *countingSource) FEC(n string) (phy.FEC, error) {
	c.fec[n]++
	return c.HostSource.FEC(n)
}

func (c *countingSource) Module(n string) (*sff.Memory, error) {
	c.module[n]++
	return c.HostSource.Module(n)
}

// TestHostVeth runs the collector over the host source against this
// machine's kernel: a veth pair in a network namespace the test creates
// and removes, also on failure. veth answers LINKSTATE with the link bit
// only, STATS with no counters, and FEC and module memory (netlink and the
// legacy ioctls) with EOPNOTSUPP: the collector exports nothing for it,
// reports no source error, asks FEC and the module once, and copes with an
// interface that is deleted between polls.
func TestHostVeth(t *testing.T) {
	ns, nsPath := testenv.Netns(t, "nicexp-phy")
	ip(t, "-n", ns, "link", "add", "ph0", "type", "veth", "peer", "name", "ph1")
	ip(t, "-n", ns, "link", "set", "ph0", "up")
	ip(t, "-n", ns, "link", "set", "ph1", "up")

	host := phy.NewHostSource(phy.HostConfig{Netns: nsPath}, zaptest.NewLogger(t))
	t.Cleanup(func() { _ = host.Close() })
	src := &countingSource{HostSource: host, fec: map[string]int{}, module: map[string]int{}}
	clk := newClock()
	c, err := phy.New(phy.Config{Source: src, Now: clk.now}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	errs := collector.NewSourceErrors(zaptest.NewLogger(t), 0)
	for range 3 {
		snap := pollOnce(t, c, errs)
		if snap.Devices() != 3 { // lo, ph0, ph1
			t.Errorf("devices = %d, want 3 (lo, ph0, ph1)", snap.Devices())
		}
		if s := snap.String() + snap.Detail().String(); s != "" {
			t.Errorf("series for veth and lo, which report only the link bit:\n%s", s)
		}
		clk.advance(time.Minute)
	}
	if src.fec["ph0"] != 1 || src.fec["lo"] != 1 {
		t.Errorf("FEC asked %v times, want once per interface (EOPNOTSUPP is remembered)", src.fec)
	}
	if src.module["ph0"] != 1 || src.module["ph1"] != 1 {
		t.Errorf("module asked %v times in 3 polls a minute apart, want once per interface (EOPNOTSUPP is remembered)", src.module)
	}
	ip(t, "-n", ns, "link", "del", "ph0")
	snap := pollOnce(t, c, errs)
	if snap.Devices() != 1 {
		t.Errorf("devices after deleting the pair = %d, want 1 (lo)", snap.Devices())
	}
	if got := errs.Counts(); len(got) != 0 {
		t.Errorf("source errors %v, want none", got)
	}
	if _, err := os.Stat("/sys/class/net/ph0"); err == nil {
		t.Error("ph0 leaked into the host namespace")
	}
}

// BenchmarkHostLoopback is the real netlink cost of one poll of the
// loopback device on this kernel: the interface list, LINKSTATE, and FEC
// (asked once: EOPNOTSUPP is remembered).
func BenchmarkHostLoopback(b *testing.B) {
	host := phy.NewHostSource(phy.HostConfig{}, zap.NewNop())
	defer host.Close()
	f, err := collector.NewNameFilter("collector.phy.device", "lo", "")
	if err != nil {
		b.Fatal(err)
	}
	c, err := phy.New(phy.Config{Source: host, Filter: f}, zap.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	benchPoll(b, c)
}

// BenchmarkHostLinkStateFEC is one LINKSTATE and one FEC request over
// ethtool netlink to the loopback device of this kernel.
func BenchmarkHostLinkStateFEC(b *testing.B) {
	host := phy.NewHostSource(phy.HostConfig{}, zap.NewNop())
	defer host.Close()
	if _, err := host.Interfaces(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := host.LinkState("lo"); err != nil {
			b.Fatal(err)
		}
		if _, err := host.FEC("lo"); !errclass.IsUnsupported(err) {
			b.Fatal(err)
		}
	}
}
