package phy_test

import (
	"fmt"
	"math"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/phy"
	"github.com/nic-exporter/nic_exporter/internal/sff"
)

// fixture is a host with one port per real dump standard, a port whose
// link is down with a reason and whose cage is empty, and the loopback
// device, which supports none of the operations.
func fixture(t testing.TB) *fake {
	rsLanes := func(total uint64, lanes ...uint64) *phy.FECCounter {
		return &phy.FECCounter{Total: total, Lanes: lanes}
	}
	return newFake(
		&fakeDev{
			iface: phy.Interface{Name: "eth0", Index: 2, Driver: "mlx5_core"},
			link:  phy.LinkState{Up: boolp(true), DownEvents: u64(3)},
			fec: phy.FEC{Mode: "rs",
				CorrectedBlocks:     rsLanes(1200, 300, 301, 299, 300),
				UncorrectableBlocks: rsLanes(0, 0, 0, 0, 0),
				CorrectedBits:       rsLanes(1500, 380, 370, 375, 375),
				Hist: []phy.FECHistBin{{Low: 0, High: 0, Codewords: 987654321}, {Low: 1, High: 1, Codewords: 1100},
					{Low: 2, High: 3, Codewords: 95}, {Low: 4, High: 15, Codewords: 5}}},
			stats: phy.Stats{Counters: []phy.StatCounter{
				{Group: "eth-phy", Name: "SymbolErrorDuringCarrier", Value: 7},
				{Group: "eth-mac", Name: "FramesReceivedOK", Value: 123456},
				{Group: "eth-mac", Name: "FrameCheckSequenceErrors", Value: 2},
				{Group: "eth-mac", Name: "AlignmentErrors", Value: 0},
				{Group: "eth-ctrl", Name: "MACControlFramesReceived", Value: 4},
			}},
			module: loadDump(t, "cmis-cig-qsfpdd-400g-lr4.dump"),
		},
		&fakeDev{
			iface:  phy.Interface{Name: "eth1", Index: 3, Driver: "mlx5_core"},
			link:   phy.LinkState{Up: boolp(true), DownEvents: u64(0)},
			fec:    phy.FEC{Mode: "rs", CorrectedBlocks: rsLanes(5), UncorrectableBlocks: rsLanes(0)},
			module: loadDump(t, "sff8636-qsfptek-qsfp28-er4-b.dump"),
		},
		&fakeDev{
			iface:  phy.Interface{Name: "eth2", Index: 4, Driver: "ixgbe"},
			link:   phy.LinkState{Up: boolp(true)},
			fec:    phy.FEC{Mode: "off"},
			module: loadDump(t, "sff8472-arista-sfp-10glr.dump"),
		},
		&fakeDev{
			iface: phy.Interface{Name: "eth3", Index: 5, Driver: "mlx5_core"},
			link: phy.LinkState{Up: boolp(false), DownReason: "no_cable",
				DownEvents: u64(1)},
			fec:    phy.FEC{Mode: "rs"},
			module: emptyCage(),
		},
		&fakeDev{
			iface:     phy.Interface{Name: "lo", Index: 1},
			link:      phy.LinkState{Up: boolp(true)},
			fecErr:    fmt.Errorf("fec of lo: %w", syscall.EOPNOTSUPP),
			statsErr:  fmt.Errorf("stats of lo: %w", syscall.EOPNOTSUPP),
			moduleErr: fmt.Errorf("module of lo: %w", syscall.EOPNOTSUPP),
		},
	)
}

// emptyCage is the memory of an empty cage or a half-inserted module:
// identifier 0x00.
func emptyCage() *sff.Memory {
	m := sff.NewMemory()
	_ = m.Put(sff.AddrA0, 0, 0, 0, make([]byte, 128))
	return m
}

func TestGoldenScrape(t *testing.T) {
	src := fixture(t)
	errs := collector.NewSourceErrors(zap.NewNop(), 0)
	c := newCollector(t, src, newClock(), zap.NewNop())
	snap := pollOnce(t, c, errs)
	if n := snap.Devices(); n != 5 {
		t.Errorf("devices = %d, want 5", n)
	}
	if counts := errs.Counts(); len(counts) != 0 {
		t.Errorf("source errors %v, want none", counts)
	}
	golden(t, "scrape.prom", snap.String())
	golden(t, "scrape_detail.prom", snap.Detail().String())

	// The FEC histogram is detail only, one series per bin.
	d := series(t, snap.Detail().String())
	for key, want := range map[string]float64{
		`nic_phy_fec_codewords_total{device="eth0",errors="0"}`:    987654321,
		`nic_phy_fec_codewords_total{device="eth0",errors="2-3"}`:  95,
		`nic_phy_fec_codewords_total{device="eth0",errors="4-15"}`: 5,
	} {
		if got, ok := d[key]; !ok || got != want {
			t.Errorf("detail %s = %v (present %v), want %v", key, got, ok, want)
		}
	}
	s := series(t, snap.String())
	if len(withPrefix(s, "nic_phy_fec_codewords_")) != 0 {
		t.Errorf("the FEC histogram is in the default scrape: %v", withPrefix(s, "nic_phy_fec_codewords_"))
	}
	for key, want := range map[string]float64{
		`nic_phy_link_down_reason{device="eth3",reason="no_cable",substate=""}`: 1,
		`nic_phy_link_down_events_total{device="eth0"}`:                         3,
		`nic_phy_fec_mode_info{device="eth0",mode="rs"}`:                        1,
		`nic_phy_fec_corrected_blocks_total{device="eth0"}`:                     1200,
		`nic_phy_symbol_errors_total{device="eth0"}`:                            7,
		`nic_phy_fcs_errors_total{device="eth0"}`:                               2,
		`nic_transceiver_last_read_timestamp_seconds{device="eth0"}`:            1700000000,
	} {
		if got, ok := s[key]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", key, got, ok, want)
		}
	}
	// The empty cage and the loopback device have no module series.
	for _, dev := range []string{"eth3", "lo"} {
		for k := range s {
			if strings.HasPrefix(k, "nic_transceiver_") && strings.Contains(k, `device="`+dev+`"`) {
				t.Errorf("%s has a module series: %s", dev, k)
			}
		}
	}
	// Each standard's module decodes to an info series and lane values.
	for _, dev := range []string{"eth0", "eth1", "eth2"} {
		if len(withPrefix(s, `nic_transceiver_info{`)) != 3 {
			t.Errorf("want 3 info series, got %v", withPrefix(s, "nic_transceiver_info{"))
		}
		if _, ok := s[`nic_transceiver_rx_power_watts{device="`+dev+`",lane="0"}`]; !ok {
			t.Errorf("%s: no rx power of lane 0", dev)
		}
	}
	// CIG 400G LR4 lane 1 (lane "0") RX power 2.66 dBm per the dump's
	// third-party decode.
	rx := s[`nic_transceiver_rx_power_watts{device="eth0",lane="0"}`]
	if dbm := 10 * math.Log10(rx*1000); math.Abs(dbm-2.66) > 0.006 {
		t.Errorf("eth0 lane 0 rx power %.4f dBm, want 2.66", dbm)
	}
	for k, v := range s {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Errorf("%s = %v", k, v)
		}
	}
}

// Every real dump decodes into a scrape without non-finite values, with
// ordered thresholds and with an info series.
func TestRealDumps(t *testing.T) {
	for _, name := range []string{
		"cmis-cig-qsfpdd-400g-lr4.dump", "cmis-eoptolink-qsfpdd-dr8.dump",
		"cmis-juniper-qsfpdd-1w1.dump", "cmis-juniper-qsfpdd-2e1.dump",
		"sff8472-amphenol-sfp-dac.dump", "sff8472-arista-sfp-10glr.dump",
		"sff8472-fs-sfp-10g-bidi.dump", "sff8472-fs-sfp-dwdm-ch44.dump",
		"sff8636-oem-qsfp28-breakout-dac.dump", "sff8636-qsfptek-qsfp28-er4-a.dump",
		"sff8636-qsfptek-qsfp28-er4-b.dump",
	} {
		t.Run(name, func(t *testing.T) {
			src := newFake(&fakeDev{iface: phy.Interface{Name: "p0", Index: 2}, module: loadDump(t, name)})
			errs := collector.NewSourceErrors(zap.NewNop(), 0)
			snap := pollOnce(t, newCollector(t, src, newClock(), zap.NewNop()), errs)
			if c := errs.Counts(); len(c) != 0 {
				t.Fatalf("source errors %v", c)
			}
			all := series(t, snap.String()+snap.Detail().String())
			if len(withPrefix(all, "nic_transceiver_info{")) != 1 {
				t.Errorf("no info series")
			}
			for k, v := range all {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Errorf("%s = %v", k, v)
				}
			}
			for _, q := range []string{"temperature_threshold_celsius", "supply_voltage_threshold_volts", "laser_bias_current_threshold_amperes", "tx_power_threshold_watts", "rx_power_threshold_watts"} {
				get := func(level string) (float64, bool) {
					v, ok := all[`nic_transceiver_`+q+`{device="p0",level="`+level+`"}`]
					return v, ok
				}
				la, ok := get("low_alarm")
				if !ok {
					continue
				}
				lw, _ := get("low_warning")
				hw, _ := get("high_warning")
				ha, _ := get("high_alarm")
				if !(la <= lw && lw <= hw && hw <= ha) {
					t.Errorf("%s thresholds out of order: %v %v %v %v", q, la, lw, hw, ha)
				}
			}
		})
	}
}

// An operation the driver answers EOPNOTSUPP is asked once, not on every
// poll; after UnsupportedRetry, or when the interface is re-created, it is
// asked again.
func TestUnsupportedRemembered(t *testing.T) {
	src := fixture(t)
	clk := newClock()
	c := newCollector(t, src, clk, zap.NewNop())
	errs := collector.NewSourceErrors(zap.NewNop(), 0)
	for range 5 {
		pollOnce(t, c, errs)
		clk.advance(2 * time.Minute) // past the module interval each time
	}
	for _, op := range []string{"fec", "stats", "module"} {
		if n := src.count(op, "lo"); n != 1 {
			t.Errorf("%s of lo asked %d times in 5 polls, want 1", op, n)
		}
	}
	if n := src.count("linkstate", "lo"); n != 5 {
		t.Errorf("linkstate of lo asked %d times, want 5 (it is supported)", n)
	}
	if c := errs.Counts(); len(c) != 0 {
		t.Errorf("EOPNOTSUPP counted as source errors: %v", c)
	}
	clk.advance(time.Hour)
	pollOnce(t, c, errs)
	if n := src.count("fec", "lo"); n != 2 {
		t.Errorf("fec of lo asked %d times after the retry interval, want 2", n)
	}
	// Re-created: a new ifindex forgets what the old interface said.
	src.devs[4].iface.Index = 99
	pollOnce(t, c, errs)
	if n := src.count("module", "lo"); n != 3 {
		t.Errorf("module of lo asked %d times after re-creation, want 3", n)
	}
}

// A module that answers EIO is counted as a source error and logged once,
// its series are dropped, the rest of the interface is exported, and it
// is read again only after the module interval.
func TestModuleEIO(t *testing.T) {
	src := newFake(&fakeDev{
		iface:     phy.Interface{Name: "eth0", Index: 2, Driver: "mlx5_core"},
		link:      phy.LinkState{Up: boolp(true), DownEvents: u64(0)},
		moduleErr: fmt.Errorf("module eeprom: %w", syscall.EIO),
	})
	core, logs := observer.New(zap.WarnLevel)
	log := zap.New(core)
	clk := newClock()
	c := newCollector(t, src, clk, log)
	errs := collector.NewSourceErrors(log, time.Hour)
	for range 3 {
		if text := pollOnce(t, c, errs).String(); strings.Contains(text, "nic_transceiver_") {
			t.Errorf("module series despite EIO:\n%s", text)
		}
		clk.advance(10 * time.Second)
	}
	if n := src.count("module", "eth0"); n != 1 {
		t.Errorf("module read %d times within the interval, want 1", n)
	}
	clk.advance(time.Minute)
	snap := pollOnce(t, c, errs).String()
	if n := src.count("module", "eth0"); n != 2 {
		t.Errorf("module read %d times after the interval, want 2", n)
	}
	if strings.Contains(snap, "nic_transceiver_") {
		t.Errorf("module series despite EIO:\n%s", snap)
	}
	if !strings.Contains(snap, `nic_phy_link_down_events_total{device="eth0"} 0`) {
		t.Errorf("link state missing:\n%s", snap)
	}
	if got := errs.Counts(); len(got) != 1 || got[0] != (collector.ReasonCount{Reason: "eio", Count: 2}) {
		t.Errorf("source errors %v, want eio 2", got)
	}
	if n := logs.FilterMessageSnippet("source read failed").Len(); n != 1 {
		t.Errorf("%d warnings logged, want 1 (rate-limited)", n)
	}
}

// A module whose last read failed keeps no stale values; one that reads
// again is back with a new timestamp.
func TestModuleRecovers(t *testing.T) {
	dev := &fakeDev{iface: phy.Interface{Name: "eth0", Index: 2}, module: loadDump(t, "cmis-eoptolink-qsfpdd-dr8.dump")}
	src := newFake(dev)
	clk := newClock()
	c := newCollector(t, src, clk, zap.NewNop())
	errs := collector.NewSourceErrors(zap.NewNop(), 0)
	s := series(t, pollOnce(t, c, errs).String())
	if s[`nic_transceiver_last_read_timestamp_seconds{device="eth0"}`] != 1700000000 {
		t.Fatalf("no timestamp: %v", withPrefix(s, "nic_transceiver_last"))
	}
	dev.module, dev.moduleErr = nil, syscall.EIO
	clk.advance(time.Minute)
	if s := series(t, pollOnce(t, c, errs).String()); len(withPrefix(s, "nic_transceiver_")) != 0 {
		t.Errorf("stale module series after a failed read: %v", withPrefix(s, "nic_transceiver_"))
	}
	dev.module, dev.moduleErr = loadDump(t, "cmis-eoptolink-qsfpdd-dr8.dump"), nil
	clk.advance(time.Minute)
	s = series(t, pollOnce(t, c, errs).String())
	if s[`nic_transceiver_last_read_timestamp_seconds{device="eth0"}`] != 1700000120 {
		t.Errorf("timestamp after recovery = %v", s[`nic_transceiver_last_read_timestamp_seconds{device="eth0"}`])
	}
}

// Bad module memory: thresholds in an impossible order never reach the
// scrape, the other values do; an unknown identifier is a parse error.
func TestBadModuleMemory(t *testing.T) {
	swapped := loadDump(t, "cmis-cig-qsfpdd-400g-lr4.dump")
	// CMIS page 02h bytes 192-199 are the RX power thresholds HA, LA, HW,
	// LW: swap high alarm and low alarm.
	p2 := swapped.Upper[sff.PageKey{Addr: sff.AddrA0, Bank: 0, Page: 2}]
	copy(p2[192-128:194-128], []byte{0x00, 0x01})
	copy(p2[194-128:196-128], []byte{0xff, 0xff})
	unknown := sff.NewMemory()
	_ = unknown.Put(sff.AddrA0, 0, 0, 0, append([]byte{0x42}, make([]byte, 127)...))

	tests := []struct {
		name       string
		mem        *sff.Memory
		wantAbsent string
		wantSome   string
		wantErrs   []collector.ReasonCount
	}{
		{name: "thresholds out of order", mem: swapped,
			wantAbsent: "nic_transceiver_rx_power_threshold_watts", wantSome: "nic_transceiver_tx_power_threshold_watts"},
		{name: "identifier 0", mem: emptyCage(), wantAbsent: "nic_transceiver_"},
		{name: "unknown identifier", mem: unknown, wantAbsent: "nic_transceiver_",
			wantErrs: []collector.ReasonCount{{Reason: "parse", Count: 1}}},
		{name: "short memory", mem: func() *sff.Memory {
			m := sff.NewMemory()
			_ = m.Put(sff.AddrA0, 0, 0, 0, []byte{0x19})
			return m
		}(), wantAbsent: "nic_transceiver_", wantErrs: []collector.ReasonCount{{Reason: "parse", Count: 1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := newFake(&fakeDev{iface: phy.Interface{Name: "eth0", Index: 2}, module: tc.mem})
			errs := collector.NewSourceErrors(zap.NewNop(), 0)
			text := pollOnce(t, newCollector(t, src, newClock(), zap.NewNop()), errs).String()
			if strings.Contains(text, tc.wantAbsent) {
				t.Errorf("%s in the scrape:\n%s", tc.wantAbsent, text)
			}
			if tc.wantSome != "" && !strings.Contains(text, tc.wantSome) {
				t.Errorf("%s missing from the scrape:\n%s", tc.wantSome, text)
			}
			if got := errs.Counts(); fmt.Sprint(got) != fmt.Sprint(tc.wantErrs) {
				t.Errorf("source errors %v, want %v", got, tc.wantErrs)
			}
		})
	}
}

// An interface that vanishes during the poll exports nothing and is not
// an error; an interface the filter excludes is never read.
func TestVanishedAndFiltered(t *testing.T) {
	src := fixture(t)
	src.devs[1].fecErr = fmt.Errorf("fec: %w", syscall.ENODEV)
	f, err := collector.NewNameFilter("collector.phy.device", "", "eth2")
	if err != nil {
		t.Fatal(err)
	}
	c, err := phy.New(phy.Config{Source: src, Filter: f, Now: newClock().now}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	errs := collector.NewSourceErrors(zap.NewNop(), 0)
	snap := pollOnce(t, c, errs)
	text := snap.String()
	for _, dev := range []string{"eth1", "eth2"} {
		if strings.Contains(text, `device="`+dev+`"`) {
			t.Errorf("%s exported:\n%s", dev, text)
		}
	}
	for _, op := range []string{"linkstate", "fec", "stats", "module"} {
		if n := src.count(op, "eth2"); n != 0 {
			t.Errorf("excluded eth2 read (%s) %d times", op, n)
		}
	}
	if snap.Devices() != 3 {
		t.Errorf("devices = %d, want 3", snap.Devices())
	}
	if c := errs.Counts(); len(c) != 0 {
		t.Errorf("source errors %v", c)
	}
}

// A source without standard counters or module memory (the host source
// before those are wired) exports the link state and FEC.
func TestSourceWithoutOptionalParts(t *testing.T) {
	src := fixture(t)
	c, err := phy.New(phy.Config{Source: linkAndFECOnly{src}, Now: newClock().now}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	text := pollOnce(t, c, collector.NewSourceErrors(zap.NewNop(), 0)).String()
	if strings.Contains(text, "nic_transceiver_") || strings.Contains(text, "nic_phy_symbol_errors_total") {
		t.Errorf("module or stats series without the source parts:\n%s", text)
	}
	if !strings.Contains(text, "nic_phy_fec_corrected_blocks_total") {
		t.Errorf("FEC missing:\n%s", text)
	}
}

type linkAndFECOnly struct{ f *fake }

func (l linkAndFECOnly) Interfaces() ([]phy.Interface, error)      { return l.f.Interfaces() }
func (l linkAndFECOnly) LinkState(n string) (phy.LinkState, error) { return l.f.LinkState(n) }
func (l linkAndFECOnly) FEC(n string) (phy.FEC, error)             { return l.f.FEC(n) }

func TestNewWithoutSource(t *testing.T) {
	if _, err := phy.New(phy.Config{}, zap.NewNop()); err == nil {
		t.Error("New without a source succeeded")
	}
}
