package fabric

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/internal/ibsimtest"
	"github.com/nic-exporter/nic_exporter/internal/mad"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// series parses a text exposition into "name{labels}" -> value.
func series(s string) map[string]float64 {
	out := map[string]float64{}
	for _, line := range strings.Split(s, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out
}

// diagValues reads the "Name:.....value" lines of perfquery.
func diagValues(out string) map[string]uint64 {
	m := map[string]uint64{}
	for _, line := range strings.Split(out, "\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		if v, err := strconv.ParseUint(strings.TrimLeft(value, "."), 0, 64); err == nil {
			m[name] = v
		}
	}
	return m
}

type simHost struct {
	f    *ibsimtest.Fabric
	c    *Collector
	errs *collector.SourceErrors
}

func newSimHost(t *testing.T, f *ibsimtest.Fabric, node string) *simHost {
	t.Helper()
	c := New(Config{Open: SimOpener(mad.SimConfig{SockName: f.SockName, Node: node}, testenv.HangGuard), MADTimeout: testenv.HangGuard}, zap.NewNop())
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("closing the collector: %v", err)
		}
	})
	return &simHost{f: f, c: c, errs: collector.NewSourceErrors(zap.NewNop(), 0)}
}

func (h *simHost) poll(t *testing.T) map[string]float64 {
	t.Helper()
	b := exposition.NewBuilder()
	if err := h.c.Update(context.Background(), collector.NewPoll(b, h.errs)); err != nil {
		t.Fatal(err)
	}
	return series(b.Snapshot().String())
}

func (h *simHost) errCount() uint64 {
	var n uint64
	for _, rc := range h.errs.Counts() {
		n += rc.Count
	}
	return n
}

// perfqueryNames maps the fabric collector's counter names to perfquery's.
var perfqueryNames = map[string]string{
	"symbol_error": "SymbolErrorCounter", "link_error_recovery": "LinkErrorRecoveryCounter", "link_downed": "LinkDownedCounter",
	"rcv_errors": "PortRcvErrors", "rcv_remote_physical_errors": "PortRcvRemotePhysicalErrors",
	"rcv_switch_relay_errors": "PortRcvSwitchRelayErrors", "xmit_discards": "PortXmitDiscards",
	"xmit_constraint_errors": "PortXmitConstraintErrors", "rcv_constraint_errors": "PortRcvConstraintErrors",
	"local_link_integrity_errors": "LocalLinkIntegrityErrors", "excessive_buffer_overrun_errors": "ExcessiveBufferOverrunErrors",
	"vl15_dropped": "VL15Dropped", "xmit_wait": "PortXmitWait",
	"xmit_data_bytes": "PortXmitData", "rcv_data_bytes": "PortRcvData", "xmit_packets": "PortXmitPkts", "rcv_packets": "PortRcvPkts",
	"unicast_xmit_packets": "PortUnicastXmitPkts", "unicast_rcv_packets": "PortUnicastRcvPkts",
	"multicast_xmit_packets": "PortMulticastXmitPkts", "multicast_rcv_packets": "PortMulticastRcvPkts",
}

// TestFabricSim attaches the collector as hca1 of a simulated fabric and
// checks the far end of its port (leaf1 port 1) against perfquery and
// smpquery, then injects faults from the ibsim console.
func TestFabricSim(t *testing.T) {
	f := ibsimtest.Start(t, ibsimtest.Small)
	for _, cmd := range []string{
		`PerformanceSet "leaf1"[1] PortCounters.SymbolErrorCounter=42`,
		`PerformanceSet "leaf1"[1] PortCounters.LinkDownedCounter=3`,
		`PerformanceSet "leaf1"[1] PortCounters.LinkErrorRecoveryCounter=255`,
		`PerformanceSet "leaf1"[1] PortCounters.PortRcvErrors=7`,
		`PerformanceSet "leaf1"[1] PortCounters.PortXmitWait=1234`,
		`PerformanceSet "leaf1"[1] PortCountersExtended.PortUnicastRcvPkts=5555`,
		// Another switch port, which hca1's far end is not: its values
		// must show on no series of hca1.
		`PerformanceSet "leaf1"[2] PortCounters.SymbolErrorCounter=999`,
	} {
		f.Console(t, cmd)
	}
	h := newSimHost(t, f, "hca1")
	got := h.poll(t)
	// perfquery from hca2, whose queries do not cross leaf1 port 1.
	pc := diagValues(f.Run(t, "hca2", "perfquery", "2", "1"))
	pcx := diagValues(f.Run(t, "hca2", "perfquery", "-x", "2", "1"))
	remote := `remote_guid="0x0000000000200000",remote_node="leaf1",remote_port="1"`
	labels := `{device="hca1",port="1",` + remote + `}`
	for name, diagName := range perfqueryNames {
		key := "nic_fabric_remote_port_" + name + "_total" + labels
		v, ok := got[key]
		if !ok {
			t.Errorf("%s is not exported", key)
			continue
		}
		want, ok := pcx[diagName]
		if !ok {
			want = pc[diagName]
		}
		if strings.HasSuffix(name, "_bytes") {
			want *= 4 // perfquery prints 32-bit words
		}
		// The collector's own PortCountersExtended response leaves through
		// leaf1 port 1 after the reading it carries: one packet of 72
		// words that perfquery, asked afterwards, counts and the
		// collector's reading cannot.
		switch name {
		case "xmit_packets":
			want--
		case "xmit_data_bytes":
			want -= 72 * 4
		}
		if v != float64(want) {
			t.Errorf("%s = %v, perfquery prints %s %d", key, v, diagName, want)
		}
	}
	for k, want := range map[string]float64{
		`nic_fabric_remote_port_symbol_error_total` + labels:                                                             42,
		`nic_fabric_remote_port_xmit_wait_total` + labels:                                                                1234,
		`nic_fabric_remote_port_counters_saturated{device="hca1",port="1",` + remote + `,counter="link_error_recovery"}`: 1,
		`nic_fabric_remote_port_counters_saturated{device="hca1",port="1",` + remote + `,counter="symbol_error"}`:        0,
		`nic_fabric_link_up` + labels:                                                                       1,
		`nic_fabric_remote_up{device="hca1",port="1"}`:                                                      1,
		`nic_fabric_local_port_state{device="hca1",port="1"}`:                                               4,
		`nic_fabric_remote_port_state` + labels:                                                             4,
		`nic_fabric_remote_port_phys_state` + labels:                                                        5,
		`nic_fabric_remote_info{device="hca1",port="1",` + remote + `,remote_type="switch",remote_lid="2"}`: 1,
	} {
		if got[k] != want {
			t.Errorf("%s = %v, want %v", k, got[k], want)
		}
	}
	for k := range got {
		if strings.Contains(k, "999") || strings.Contains(k, `remote_port="2"`) {
			t.Errorf("series of another switch port: %s", k)
		}
	}
	if _, ok := got[`nic_fabric_remote_port_counters_saturated{device="hca1",port="1",`+remote+`,counter="port_xmit_data"}`]; ok {
		t.Error("a data counter read from PortCountersExtended has a saturation series")
	}

	// Packet loss on the switch port: the queries through it fail at once
	// (ibsim answers ETIMEDOUT), are counted, and the poll still ends.
	f.Console(t, `Error "leaf1"[1] 100`)
	before := h.errCount()
	got = h.poll(t)
	if got[`nic_fabric_remote_up{device="hca1",port="1"}`] != 0 || h.errCount() <= before {
		t.Errorf("with all packets into leaf1 port 1 dropped: remote_up %v, source errors %d -> %d", got[`nic_fabric_remote_up{device="hca1",port="1"}`], before, h.errCount())
	}
	f.Console(t, `Error "leaf1"[1] 0`)
	got = h.poll(t)
	// ibsim counts each dropped packet in PortRcvErrors.
	if v := got[`nic_fabric_remote_port_rcv_errors_total`+labels]; v <= 7 {
		t.Errorf("PortRcvErrors after the drops: %v, want above 7", v)
	}
	if want := diagValues(f.Run(t, "hca2", "perfquery", "2", "1"))["PortRcvErrors"]; got[`nic_fabric_remote_port_rcv_errors_total`+labels] != float64(want) {
		t.Errorf("PortRcvErrors %v, perfquery prints %d", got[`nic_fabric_remote_port_rcv_errors_total`+labels], want)
	}

	// The cable unplugged: the local port is Down and the link series
	// still names the switch port it leads to.
	f.Console(t, `Unlink "leaf1"[1]`)
	got = h.poll(t)
	for k, want := range map[string]float64{
		`nic_fabric_local_port_state{device="hca1",port="1"}`: 1,
		`nic_fabric_link_up` + labels:                         0,
		`nic_fabric_remote_up{device="hca1",port="1"}`:        0,
	} {
		if v, ok := got[k]; !ok || v != want {
			t.Errorf("after Unlink: %s = %v (present %v), want %v", k, v, ok, want)
		}
	}
	if diag := f.Run(t, "hca2", "smpquery", "portinfo", "2", "1"); !strings.Contains(diag, "LinkState:.......................Down") {
		t.Errorf("smpquery does not show leaf1 port 1 down:\n%s", diag)
	}
	for k := range got {
		if strings.HasPrefix(k, "nic_fabric_remote_port_") {
			t.Errorf("after Unlink, far-end series still exported: %s", k)
			break
		}
	}
}

// TestFabricSimClose checks that a closed collector gave its ibsim
// client slot back: more collectors than ibsim has slots attach in turn.
func TestFabricSimClose(t *testing.T) {
	f := ibsimtest.Start(t, ibsimtest.Small)
	for i := 0; i < 12; i++ {
		node := fmt.Sprintf("hca%d", i%8+1)
		c := New(Config{Open: SimOpener(mad.SimConfig{SockName: f.SockName, Node: node}, testenv.HangGuard)}, zap.NewNop())
		b := exposition.NewBuilder()
		if err := c.Update(context.Background(), collector.NewPoll(b, nil)); err != nil {
			t.Fatalf("collector %d at %s: %v", i, node, err)
		}
		if !strings.Contains(b.Snapshot().String(), `nic_fabric_remote_up{device="`+node+`",port="1"} 1`) {
			t.Errorf("collector %d at %s did not read its far end:\n%s", i, node, b.Snapshot().String())
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFabricSimSwitches sweeps every switch port of the small fabric
// from hca1 (--collector.fabric.scope=switches): every error counter of
// every switch port equals perfquery's, and a cable unplugged between a
// leaf and the spine shows Down on both of its ends.
func TestFabricSimSwitches(t *testing.T) {
	f := ibsimtest.Start(t, ibsimtest.Small)
	f.Console(t, `PerformanceSet "spine1"[2] PortCounters.SymbolErrorCounter=5`)
	f.Console(t, `PerformanceSet "leaf2"[35] PortCounters.LinkDownedCounter=2`)
	c := New(Config{Open: SimOpener(mad.SimConfig{SockName: f.SockName, Node: "hca1"}, testenv.HangGuard),
		MADTimeout: testenv.HangGuard, Scope: ScopeSwitches}, zap.NewNop())
	t.Cleanup(func() { c.Close() })
	h := &simHost{f: f, c: c, errs: collector.NewSourceErrors(zap.NewNop(), 0)}
	got := h.poll(t)
	if h.errCount() != 0 {
		t.Fatalf("source errors: %v", h.errs.Counts())
	}
	guids := map[string]string{"leaf1": "0x0000000000200000", "leaf2": "0x0000000000200001", "spine1": "0x0000000000200002"}
	lids := map[string]string{"leaf1": "2", "leaf2": "3", "spine1": "4"}
	ports := map[string][]int{"leaf1": {1, 2, 3, 4, 35, 36}, "leaf2": {1, 2, 3, 4, 35, 36}, "spine1": {1, 2, 3, 4}}
	errorCounters := []string{"symbol_error", "link_error_recovery", "link_downed", "rcv_errors", "rcv_remote_physical_errors",
		"rcv_switch_relay_errors", "xmit_discards", "xmit_constraint_errors", "rcv_constraint_errors",
		"local_link_integrity_errors", "excessive_buffer_overrun_errors", "vl15_dropped", "xmit_wait"}
	states := 0
	for k := range got {
		if strings.HasPrefix(k, "nic_fabric_switch_port_state{") {
			states++
		}
	}
	if states != 16 {
		t.Errorf("%d switch port state series, want 16", states)
	}
	for sw, list := range ports {
		if got[`nic_fabric_switch_info{switch_guid="`+guids[sw]+`",switch_node="`+sw+`",switch_lid="`+lids[sw]+`"}`] != 1 {
			t.Errorf("no nic_fabric_switch_info for %s", sw)
		}
		for _, port := range list {
			labels := fmt.Sprintf(`{switch_guid=%q,switch_node=%q,switch_port="%d"}`, guids[sw], sw, port)
			diag := diagValues(f.Run(t, "hca2", "perfquery", lids[sw], strconv.Itoa(port)))
			for _, name := range errorCounters {
				key := "nic_fabric_switch_port_" + name + "_total" + labels
				v, ok := got[key]
				if !ok || v != float64(diag[perfqueryNames[name]]) {
					t.Errorf("%s = %v (present %v), perfquery prints %s %d", key, v, ok, perfqueryNames[name], diag[perfqueryNames[name]])
				}
			}
			if got["nic_fabric_switch_port_state"+labels] != 4 {
				t.Errorf("%s port %d state %v, want 4", sw, port, got["nic_fabric_switch_port_state"+labels])
			}
		}
	}
	if got[`nic_fabric_switch_port_symbol_error_total{switch_guid="0x0000000000200002",switch_node="spine1",switch_port="2"}`] != 5 {
		t.Error("the symbol errors set on spine1 port 2 are not on its series")
	}

	// leaf1 port 36 is cabled to spine1 port 1. A subnet manager sweep
	// then routes around it, as a running OpenSM would.
	f.Console(t, `Unlink "leaf1"[36]`)
	f.SweepOnce(t)
	ends := []string{
		`{switch_guid="0x0000000000200000",switch_node="leaf1",switch_port="36"}`,
		`{switch_guid="0x0000000000200002",switch_node="spine1",switch_port="1"}`,
	}
	// A query of this poll can still fail while the subnet manager's new
	// routes settle (seen once on a machine under heavy load): a failed
	// query drops its port for one poll and is a counted source error, so
	// a few more polls may be needed. The bound is on polls, not time.
	for attempt := 1; ; attempt++ {
		got = h.poll(t)
		down := true
		for _, end := range ends {
			down = down && got["nic_fabric_switch_port_state"+end] == 1
		}
		if down || attempt == 5 {
			break
		}
		t.Logf("poll %d after Unlink: not both ends Down yet; source errors so far: %v", attempt, h.errs.Counts())
	}
	for _, end := range ends {
		if got["nic_fabric_switch_port_state"+end] != 1 || got["nic_fabric_switch_port_phys_state"+end] != 2 {
			t.Errorf("after Unlink, %s: state %v phys %v, want Down (1) Polling (2)", end,
				got["nic_fabric_switch_port_state"+end], got["nic_fabric_switch_port_phys_state"+end])
		}
	}
	for _, q := range [][2]string{{"2", "36"}, {"4", "1"}} {
		if out := f.Run(t, "hca2", "smpquery", "portinfo", q[0], q[1]); !strings.Contains(out, "LinkState:.......................Down") {
			t.Errorf("smpquery portinfo %s %s does not show Down:\n%s", q[0], q[1], out)
		}
	}
}

// TestFabricSimResetSaturated runs the opt-in reset of saturated counters
// against ibsim, which clears the counters a PortCounters Set selects
// (its pc_reset): in the far-end scope and in the switches sweep, only
// the counters stuck at their maximum are cleared (perfquery from another
// host reads them back as 0, and the others unchanged), the next poll
// reads them from zero, and a port saturated again within the reset
// interval is left alone.
func TestFabricSimResetSaturated(t *testing.T) {
	f := ibsimtest.Start(t, ibsimtest.Small)
	saturate := func() {
		f.Console(t, `PerformanceSet "leaf1"[1] PortCounters.SymbolErrorCounter=65535`)
		f.Console(t, `PerformanceSet "leaf1"[1] PortCounters.LinkDownedCounter=255`)
		f.Console(t, `PerformanceSet "leaf1"[1] PortCounters.PortRcvErrors=7`)
		f.Console(t, `PerformanceSet "spine1"[2] PortCounters.SymbolErrorCounter=65535`)
		f.Console(t, `PerformanceSet "spine1"[2] PortCounters.PortXmitDiscards=9`)
	}
	saturate()
	// perfquery from hca2 (LID of leaf1 2, of spine1 4), whose queries
	// do not cross the ports read.
	diag := func(lid, port string) map[string]uint64 { return diagValues(f.Run(t, "hca2", "perfquery", lid, port)) }

	farEnd := New(Config{Open: SimOpener(mad.SimConfig{SockName: f.SockName, Node: "hca1"}, testenv.HangGuard),
		MADTimeout: testenv.HangGuard, ResetSaturated: true, ResetInterval: time.Hour}, zap.NewNop())
	t.Cleanup(func() { farEnd.Close() })
	h := &simHost{f: f, c: farEnd, errs: collector.NewSourceErrors(zap.NewNop(), 0)}
	labels := `{device="hca1",port="1",remote_guid="0x0000000000200000",remote_node="leaf1",remote_port="1"}`
	got := h.poll(t)
	if got["nic_fabric_remote_port_symbol_error_total"+labels] != 65535 || got["nic_fabric_remote_port_counter_resets_total"+labels] != 1 || h.errCount() != 0 {
		t.Errorf("first poll: symbol_error %v (want the 65535 read before the reset), resets %v (want 1), source errors %v",
			got["nic_fabric_remote_port_symbol_error_total"+labels], got["nic_fabric_remote_port_counter_resets_total"+labels], h.errs.Counts())
	}
	if d := diag("2", "1"); d["SymbolErrorCounter"] != 0 || d["LinkDownedCounter"] != 0 || d["PortRcvErrors"] != 7 {
		t.Errorf("perfquery after the reset: SymbolErrorCounter %d, LinkDownedCounter %d (want 0, 0), PortRcvErrors %d (not saturated: want 7)",
			d["SymbolErrorCounter"], d["LinkDownedCounter"], d["PortRcvErrors"])
	}
	got = h.poll(t)
	if got["nic_fabric_remote_port_symbol_error_total"+labels] != 0 || got["nic_fabric_remote_port_link_downed_total"+labels] != 0 {
		t.Errorf("second poll: symbol_error %v, link_downed %v, want 0 after the reset",
			got["nic_fabric_remote_port_symbol_error_total"+labels], got["nic_fabric_remote_port_link_downed_total"+labels])
	}

	sweep := New(Config{Open: SimOpener(mad.SimConfig{SockName: f.SockName, Node: "hca1"}, testenv.HangGuard),
		MADTimeout: testenv.HangGuard, Scope: ScopeSwitches, ResetSaturated: true, ResetInterval: time.Hour}, zap.NewNop())
	t.Cleanup(func() { sweep.Close() })
	hs := &simHost{f: f, c: sweep, errs: collector.NewSourceErrors(zap.NewNop(), 0)}
	swLabels := `{switch_guid="0x0000000000200002",switch_node="spine1",switch_port="2"}`
	got = hs.poll(t)
	if got["nic_fabric_switch_port_counter_resets_total"+swLabels] != 1 || hs.errCount() != 0 {
		t.Errorf("sweep: spine1 port 2 resets %v, want 1; source errors %v", got["nic_fabric_switch_port_counter_resets_total"+swLabels], hs.errs.Counts())
	}
	if d := diag("4", "2"); d["SymbolErrorCounter"] != 0 || d["PortXmitDiscards"] != 9 {
		t.Errorf("perfquery after the sweep's reset: SymbolErrorCounter %d (want 0), PortXmitDiscards %d (want 9)", d["SymbolErrorCounter"], d["PortXmitDiscards"])
	}
	resets := 0.0
	for k, v := range got {
		if strings.HasPrefix(k, "nic_fabric_switch_port_counter_resets_total{") {
			resets += v
		}
	}
	if resets != 1 {
		t.Errorf("the sweep reset %v ports, want only spine1 port 2", resets)
	}

	// Saturated again within the hour: neither scope resets the ports it
	// reset already. (The sweep has a history of its own: leaf1 port 1,
	// which only the far-end collector reset, is new to it.)
	saturate()
	got = h.poll(t)
	if got["nic_fabric_remote_port_counter_resets_total"+labels] != 1 {
		t.Errorf("within the reset interval: far-end resets %v, want 1", got["nic_fabric_remote_port_counter_resets_total"+labels])
	}
	if d := diag("2", "1"); d["SymbolErrorCounter"] != 65535 {
		t.Errorf("within the reset interval leaf1 port 1 was reset again: SymbolErrorCounter %d", d["SymbolErrorCounter"])
	}
	got = hs.poll(t)
	if got["nic_fabric_switch_port_counter_resets_total"+swLabels] != 1 {
		t.Errorf("within the reset interval: sweep resets of spine1 port 2 %v, want 1", got["nic_fabric_switch_port_counter_resets_total"+swLabels])
	}
	if d := diag("4", "2"); d["SymbolErrorCounter"] != 65535 {
		t.Errorf("within the reset interval spine1 port 2 was reset again: SymbolErrorCounter %d", d["SymbolErrorCounter"])
	}
}
