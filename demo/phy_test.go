package demo_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/ethtool"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/collector/phy"
	"github.com/nic-exporter/nic_exporter/demo"
)

// phyScraper polls the real phy and ethtool collectors over a demo host
// whose clock the test steps.
type phyScraper struct {
	t       *testing.T
	h       *demo.Host
	now     time.Time
	phy     *phy.Collector
	ethtool *ethtool.Collector
}

func newPhyScraper(t *testing.T, faults string) *phyScraper {
	t.Helper()
	s := &phyScraper{t: t, now: time.Unix(1700000000, 0)}
	h, err := demo.New(demo.Config{Faults: faults, Now: func() time.Time { return s.now }}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	s.h = h
	// The module is read on every poll here, so each step sees it.
	if s.phy, err = phy.New(phy.Config{Source: h.PhySource(), ModuleInterval: time.Nanosecond, Now: func() time.Time { return s.now }}, zap.NewNop()); err != nil {
		t.Fatal(err)
	}
	if s.ethtool, err = ethtool.New(ethtool.Config{Source: h.EthtoolSource()}, zap.NewNop()); err != nil {
		t.Fatal(err)
	}
	return s
}

// step advances the demo clock by d and returns every series of both
// collectors (default and detail) and the netdev carrier files.
func (s *phyScraper) step(d time.Duration) map[string]float64 {
	s.t.Helper()
	s.now = s.now.Add(d)
	if err := s.h.Update(); err != nil {
		s.t.Fatal(err)
	}
	out := make(map[string]float64)
	for _, c := range []collector.Collector{s.phy, s.ethtool} {
		b := exposition.NewBuilder()
		errs := collector.NewSourceErrors(zap.NewNop(), 0)
		if err := c.Update(context.Background(), collector.NewPoll(b, errs)); err != nil {
			s.t.Fatal(err)
		}
		if n := errs.Counts(); len(n) != 0 {
			s.t.Fatalf("%s: source errors %v", c.Name(), n)
		}
		snap := b.Snapshot()
		for k, v := range parseSeries(s.t, snap.String()+snap.Detail().String()) {
			out[k] = v
		}
	}
	dir := filepath.Join(s.h.SysfsPath(), "class/net/enp8s0f1np1")
	for _, f := range []string{"carrier", "carrier_changes"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			s.t.Fatal(err)
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
		if err != nil {
			s.t.Fatal(err)
		}
		out["netdev_"+f] = v
	}
	return out
}

// parseSeries turns text exposition lines into series -> value.
func parseSeries(t *testing.T, text string) map[string]float64 {
	out := make(map[string]float64)
	for _, line := range strings.Split(text, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

const (
	rxLane2   = `nic_transceiver_rx_power_watts{device="enp8s0f1np1",lane="2"}`
	rxLW      = `nic_transceiver_rx_power_threshold_watts{device="enp8s0f1np1",level="low_warning"}`
	rxLA      = `nic_transceiver_rx_power_threshold_watts{device="enp8s0f1np1",level="low_alarm"}`
	uncorr    = `nic_phy_fec_uncorrectable_blocks_total{device="enp8s0f1np1"}`
	corrBlk   = `nic_phy_fec_corrected_blocks_total{device="enp8s0f1np1"}`
	corrBits  = `nic_phy_fec_corrected_bit_errors_total{device="enp8s0f1np1"}`
	downs     = `nic_phy_link_down_events_total{device="enp8s0f1np1"}`
	reason    = `nic_phy_link_down_reason{device="enp8s0f1np1",reason="bad_signal_integrity",substate="large_number_of_physical_errors"}`
	mlxBits   = `nic_ethtool_rx_bit_phy_total{device="enp8s0f1np1"}`
	mlxCorr   = `nic_ethtool_rx_corrected_bit_phy_total{device="enp8s0f1np1"}`
	mlxDowns  = `nic_ethtool_link_down_events_phy_total{device="enp8s0f1np1"}`
	info      = `nic_transceiver_info{device="enp8s0f1np1",identifier="OSFP",standard="CMIS",connector="MPO 1x12",media="optical single mode",vendor="NVIDIA",part_number="MMS4X00-NS400",revision="A6",serial="MT2333FT01234"}`
	lowWarnFl = `nic_transceiver_flag{device="enp8s0f1np1",quantity="rx_power",level="low_warning",lane="2"}`
)

func dBm(w float64) float64 { return 10 * math.Log10(w*1000) }

func TestPhyHealthy(t *testing.T) {
	s := newPhyScraper(t, "")
	a := s.step(time.Second)
	b := s.step(10 * time.Second)
	if a[info] != 1 {
		t.Errorf("no OSFP module info: %v", keys(a, "nic_transceiver_info"))
	}
	if got := dBm(b[rxLane2]); math.Abs(got+1.2) > 0.01 {
		t.Errorf("healthy lane 2 rx %.2f dBm, want -1.2", got)
	}
	if dBm(b[rxLW]) > -8.9 || dBm(b[rxLW]) < -9.1 || dBm(b[rxLA]) > -11.9 || dBm(b[rxLA]) < -12.1 {
		t.Errorf("thresholds %.2f / %.2f dBm, want -9 / -12", dBm(b[rxLW]), dBm(b[rxLA]))
	}
	// Only the four lit lanes of the DR4.
	if n := len(keys(b, `nic_transceiver_rx_power_watts{`)); n != 4 {
		t.Errorf("%d rx power series, want 4", n)
	}
	// Pre-FEC BER from the mlx5 counters and from the FEC counters.
	bits := (b[mlxBits] - a[mlxBits]) / 10
	if math.Abs(bits/4.25e11-1) > 0.01 {
		t.Errorf("rx_bits_phy advances at %g/s, want 4.25e11", bits)
	}
	for _, c := range []string{mlxCorr, corrBits} {
		if ber := (b[c] - a[c]) / 10 / bits; math.Abs(ber/1e-8-1) > 0.05 {
			t.Errorf("healthy pre-FEC BER from %s = %g, want 1e-8", c, ber)
		}
	}
	if b[uncorr] != 0 || b[downs] != 2 || b[mlxDowns] != 2 {
		t.Errorf("healthy: uncorrectable %v, down events %v (mlx5 %v)", b[uncorr], b[downs], b[mlxDowns])
	}
	for k := range b {
		if strings.Contains(k, `device="ens5"`) && strings.HasPrefix(k, "nic_transceiver") || strings.HasPrefix(k, "nic_phy") && !strings.Contains(k, `device="enp8s0f1np1"`) {
			t.Errorf("phy series for a device without module, FEC or counters: %s", k)
		}
	}
}

// TestPhyOpticDegrading walks the fault's timeline: the received power
// passes the module's low warning, then its low alarm, while the BER and
// corrected blocks rise, then uncorrectable blocks, and only then does the
// link flap, with LINKSTATE, ethtool -S and the netdev carrier agreeing.
func TestPhyOpticDegrading(t *testing.T) {
	s := newPhyScraper(t, "optic_degrading@1m-7m")
	var (
		prev                                    map[string]float64
		warnAt, alarmAt, uncorrAt, flapAt, ber4 time.Duration
	)
	for at := 10 * time.Second; at <= 9*time.Minute; at += 10 * time.Second {
		cur := s.step(10 * time.Second)
		rx := dBm(cur[rxLane2])
		first := func(p *time.Duration, cond bool) {
			if cond && *p == 0 {
				*p = at
			}
		}
		first(&warnAt, cur[rxLane2] < cur[rxLW])
		first(&alarmAt, cur[rxLane2] < cur[rxLA])
		first(&uncorrAt, cur[uncorr] > 0)
		first(&flapAt, cur[reason] == 1)
		if prev != nil {
			ber := (cur[mlxCorr] - prev[mlxCorr]) / (cur[mlxBits] - prev[mlxBits])
			first(&ber4, ber > 2.4e-5)
			for _, c := range []string{uncorr, corrBlk, corrBits, downs, mlxCorr, mlxBits, mlxDowns, "netdev_carrier_changes"} {
				if cur[c] < prev[c] {
					t.Fatalf("at %v %s went back: %v -> %v", at, c, prev[c], cur[c])
				}
			}
		}
		if (cur[lowWarnFl] == 1) != (cur[rxLane2] < cur[rxLW]) && rx < -9.05 {
			t.Errorf("at %v: low warning flag %v with rx %.2f dBm", at, cur[lowWarnFl], rx)
		}
		// One story: LINKSTATE's count is mlx5's, and the carrier file
		// says down exactly when a down reason is given; each down
		// event is a down and an up carrier change (the last one, if
		// still down, only a down).
		if cur[downs] != cur[mlxDowns] {
			t.Errorf("at %v: ext_down_cnt %v, link_down_events_phy %v", at, cur[downs], cur[mlxDowns])
		}
		if (cur["netdev_carrier"] == 0) != (cur[reason] == 1) {
			t.Errorf("at %v: carrier %v, down reason %v", at, cur["netdev_carrier"], cur[reason])
		}
		wantChanges := 2 + 2*(cur[downs]-2) - (1 - cur["netdev_carrier"])
		if cur["netdev_carrier_changes"] != wantChanges {
			t.Errorf("at %v: carrier_changes %v, want %v from %v down events", at, cur["netdev_carrier_changes"], wantChanges, cur[downs])
		}
		prev = cur
	}
	t.Logf("low warning at %v, low alarm at %v, BER > 2.4e-5 at %v, uncorrectable at %v, first flap at %v", warnAt, alarmAt, ber4, uncorrAt, flapAt)
	order := []time.Duration{warnAt, alarmAt, ber4, uncorrAt, flapAt}
	if !sort.SliceIsSorted(order, func(i, j int) bool { return order[i] < order[j] }) || warnAt == 0 || warnAt <= time.Minute {
		t.Errorf("timeline out of order: low warning %v, low alarm %v, BER %v, uncorrectable %v, flap %v", warnAt, alarmAt, ber4, uncorrAt, flapAt)
	}
	// After the span (7m) the optic is healthy again; the counters keep
	// what the fault added.
	end := s.step(time.Second)
	if got := dBm(end[rxLane2]); math.Abs(got+1.2) > 0.01 || end[reason] != 0 || end["netdev_carrier"] != 1 {
		t.Errorf("after the fault: rx %.2f dBm, reason %v, carrier %v", got, end[reason], end["netdev_carrier"])
	}
	if end[downs] < 4 || end[uncorr] == 0 {
		t.Errorf("after the fault: %v down events, %v uncorrectable blocks", end[downs], end[uncorr])
	}
}

func keys(m map[string]float64, prefix string) []string {
	var out []string
	for k := range m {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	return out
}

// TestPhyLinkDown checks that the link_down fault tells one story in
// LINKSTATE and the netdev carrier: the link is down with the reason the
// driver gives for a switch port that went down, while the fault lasts,
// and up without a reason after it.
func TestPhyLinkDown(t *testing.T) {
	const noPartner = `nic_phy_link_down_reason{device="enp8s0f1np1",reason="autoneg",substate="no_partner_detected"}`
	s := newPhyScraper(t, "link_down@30s-90s")
	before := s.step(10 * time.Second)
	during := s.step(time.Minute)
	after := s.step(time.Minute)
	for _, tt := range []struct {
		name        string
		got         map[string]float64
		down        bool
		wantChanges float64
	}{
		{"before", before, false, 0},
		{"during", during, true, 1},
		{"after", after, false, 2},
	} {
		if got, want := tt.got[noPartner] == 1, tt.down; got != want {
			t.Errorf("%s: down reason reported %v, want %v", tt.name, got, want)
		}
		if got := len(keys(tt.got, "nic_phy_link_down_reason{")); tt.down && got != 1 || !tt.down && got != 0 {
			t.Errorf("%s: %d down reason series: %v", tt.name, got, keys(tt.got, "nic_phy_link_down_reason{"))
		}
		if (tt.got["netdev_carrier"] == 0) != tt.down {
			t.Errorf("%s: carrier %v while the link down is %v", tt.name, tt.got["netdev_carrier"], tt.down)
		}
		if d := tt.got["netdev_carrier_changes"] - before["netdev_carrier_changes"]; d != tt.wantChanges {
			t.Errorf("%s: %v carrier changes since the start, want %v", tt.name, d, tt.wantChanges)
		}
	}
	if during[downs] != before[downs]+1 || after[downs] != during[downs] {
		t.Errorf("LINKSTATE down events %v, %v, %v: want one more during the fault", before[downs], during[downs], after[downs])
	}
}
