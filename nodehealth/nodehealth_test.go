package nodehealth

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/nic-exporter/nic_exporter/collector/exposition"
)

// series is one sample for a test snapshot.
type series struct {
	name   string
	typ    exposition.Type
	labels []string // name, value, name, value, ...
	value  float64
}

func gauge(name string, v float64, labels ...string) series {
	return series{name: name, typ: exposition.Gauge, labels: labels, value: v}
}

func counter(name string, v float64, labels ...string) series {
	return series{name: name, typ: exposition.Counter, labels: labels, value: v}
}

// buildSnapshot renders the series into a snapshot with the exposition
// builder the collectors use.
func buildSnapshot(t *testing.T, ss ...series) *exposition.Snapshot {
	t.Helper()
	b := exposition.NewBuilder()
	descs := make(map[string]*exposition.Desc)
	for _, s := range ss {
		var names, values []string
		for i := 0; i < len(s.labels); i += 2 {
			names = append(names, s.labels[i])
			values = append(values, s.labels[i+1])
		}
		d, ok := descs[s.name]
		if !ok {
			var err error
			d, err = exposition.NewDesc(s.name, "test", s.typ, names...)
			if err != nil {
				t.Fatal(err)
			}
			descs[s.name] = d
		}
		b.Add(d, s.value, values...)
	}
	return b.Snapshot()
}

// fakeSource is a collector whose snapshot the test sets.
type fakeSource struct {
	name string
	mu   sync.Mutex
	snap *exposition.Snapshot
}

func (f *fakeSource) Name() string { return f.name }

func (f *fakeSource) Snapshot() *exposition.Snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.snap == nil {
		return exposition.Empty
	}
	return f.snap
}

func (f *fakeSource) set(s *exposition.Snapshot) {
	f.mu.Lock()
	f.snap = s
	f.mu.Unlock()
}

// clock is a settable clock for the hysteresis.
type clock struct{ t time.Time }

func (c *clock) now() time.Time                  { return c.t }
func (c *clock) advance(d time.Duration)         { c.t = c.t.Add(d) }
func newClock() *clock                           { return &clock{t: time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)} }
func (r *recorder) ConditionChanged(c Condition) { r.got = append(r.got, c.Type+"="+c.Status) }

// recorder is a Sink that records transitions.
type recorder struct{ got []string }

func newEvaluator(t *testing.T, src Source, clk *clock, clearAfter time.Duration, sinks ...Sink) *Evaluator {
	t.Helper()
	e, err := New(Config{Sources: []Source{src}, Interval: time.Second, ClearAfter: clearAfter, Now: clk.now, Sinks: sinks}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func condition(t *testing.T, v *Verdict, typ string) Condition {
	t.Helper()
	for _, c := range v.Conditions {
		if c.Type == typ {
			return c
		}
	}
	t.Fatalf("verdict has no condition %s: %+v", typ, v)
	return Condition{}
}

// healthyHost is the demo host's healthy state of every family a rule
// reads (values from cmd/nic_exporter/testdata/demo.prom).
func healthyHost() []series {
	return []series{
		gauge("nic_devlink_health_reporter_healthy", 1, "device", "pci/0000:08:00.0", "reporter", "fw_fatal"),
		gauge("nic_devlink_health_reporter_healthy", 1, "device", "pci/0000:08:00.0", "reporter", "fw"),
		counter("nic_ethtool_wd_expired_total", 5, "device", "ens5"),
		gauge("nic_netdev_admin_up", 1, "device", "enp8s0f1np1"),
		gauge("nic_netdev_admin_up", 0, "device", "eth9"),
		gauge("nic_netdev_carrier", 1, "device", "enp8s0f1np1"),
		gauge("nic_netdev_carrier", 0, "device", "eth9"),
		gauge("nic_infiniband_port_phys_state", 5, "device", "mlx5_0", "port", "1"),
		gauge("nic_infiniband_port_phys_state", 3, "device", "mlx5_1", "port", "1"),
		gauge("nic_infiniband_port_info", 1, "device", "mlx5_0", "port", "1", "link_layer", "InfiniBand"),
		gauge("nic_infiniband_port_info", 1, "device", "mlx5_1", "port", "1", "link_layer", "Ethernet"),
		gauge("nic_pcie_link_degraded", 0, "device", "enp8s0f1np1", "pci_address", "0000:08:00.1"),
		gauge("nic_transceiver_rx_power_watts", 0.0007586, "device", "enp8s0f1np1", "lane", "2"),
		gauge("nic_transceiver_rx_power_threshold_watts", 0.0001259, "device", "enp8s0f1np1", "level", "low_warning"),
		gauge("nic_transceiver_rx_power_threshold_watts", 6.31e-05, "device", "enp8s0f1np1", "level", "low_alarm"),
		gauge("nic_hwmon_temperature_celsius", 58.5, "device", "enp8s0f1np1", "pci_address", "0000:08:00.1", "chip", "mlx5", "sensor", "sensor0"),
		gauge("nic_hwmon_temperature_critical_celsius", 105, "device", "enp8s0f1np1", "pci_address", "0000:08:00.1", "chip", "mlx5", "sensor", "sensor0"),
		gauge("nic_hwmon_temperature_celsius", 47.25, "device", "enp8s0f1np1", "pci_address", "0000:08:00.1", "chip", "mlx5", "sensor", "sensor65"),
		gauge("nic_hwmon_temperature_critical_celsius", 75, "device", "enp8s0f1np1", "pci_address", "0000:08:00.1", "chip", "mlx5", "sensor", "sensor65"),
	}
}

// with returns the healthy host with the series of the same name and
// labels as s replaced by s.
func with(base []series, over ...series) []series {
	out := append([]series(nil), base...)
	for _, o := range over {
		for i, s := range out {
			if s.name == o.name && strings.Join(s.labels, ",") == strings.Join(o.labels, ",") {
				out[i] = o
			}
		}
	}
	return out
}

func TestConditionsSetOnEvidence(t *testing.T) {
	for _, tc := range []struct {
		condition string
		fault     []series
		device    string
		evidence  string
	}{
		{"NICFirmwareFatal", []series{gauge("nic_devlink_health_reporter_healthy", 0, "device", "pci/0000:08:00.0", "reporter", "fw_fatal")}, "pci/0000:08:00.0",
			`nic_devlink_health_reporter_healthy{device="pci/0000:08:00.0",reporter="fw_fatal"} = 0 (== 0)`},
		{"NICWatchdogReset", []series{counter("nic_ethtool_wd_expired_total", 6, "device", "ens5")}, "ens5",
			`nic_ethtool_wd_expired_total{device="ens5"} = 6, rose at 2026-11-28T12:01:00Z (within 15m0s)`},
		{"NICLinkDown", []series{gauge("nic_netdev_carrier", 0, "device", "enp8s0f1np1")}, "enp8s0f1np1",
			`nic_netdev_carrier{device="enp8s0f1np1"} = 0 (== 0)`},
		{"InfiniBandPortDown", []series{gauge("nic_infiniband_port_phys_state", 2, "device", "mlx5_0", "port", "1")}, "mlx5_0 port 1",
			`nic_infiniband_port_phys_state{device="mlx5_0",port="1"} = 2 (!= 5)`},
		{"PCIeLinkDegraded", []series{gauge("nic_pcie_link_degraded", 1, "device", "enp8s0f1np1", "pci_address", "0000:08:00.1")}, "enp8s0f1np1",
			`nic_pcie_link_degraded{device="enp8s0f1np1",pci_address="0000:08:00.1"} = 1 (== 1)`},
		{"TransceiverFailing", []series{gauge("nic_transceiver_rx_power_watts", 5e-05, "device", "enp8s0f1np1", "lane", "2")}, "enp8s0f1np1 lane 2",
			`nic_transceiver_rx_power_watts{device="enp8s0f1np1",lane="2"} = 5e-05 < nic_transceiver_rx_power_threshold_watts{device="enp8s0f1np1",level="low_alarm"} = 6.31e-05`},
		// 80 °C is above the module sensor's 75 °C threshold but not the
		// ASIC's 105 °C: the join pairs each sensor with its own.
		{"NICOverheating", []series{gauge("nic_hwmon_temperature_celsius", 80, "device", "enp8s0f1np1", "pci_address", "0000:08:00.1", "chip", "mlx5", "sensor", "sensor65")}, "enp8s0f1np1",
			`nic_hwmon_temperature_celsius{chip="mlx5",device="enp8s0f1np1",pci_address="0000:08:00.1",sensor="sensor65"} = 80 > nic_hwmon_temperature_critical_celsius{chip="mlx5",device="enp8s0f1np1",pci_address="0000:08:00.1",sensor="sensor65"} = 75`},
	} {
		t.Run(tc.condition, func(t *testing.T) {
			clk := newClock()
			src := &fakeSource{name: "test"}
			src.set(buildSnapshot(t, healthyHost()...))
			e := newEvaluator(t, src, clk, 5*time.Minute)
			e.Evaluate()
			if v := e.Verdict(); v.Status != VerdictOK {
				t.Fatalf("healthy host: verdict %s: %s", v.Status, v.Reason)
			}
			clk.advance(time.Minute)
			src.set(buildSnapshot(t, with(healthyHost(), tc.fault...)...))
			e.Evaluate()
			var def Definition
			for _, d := range Conditions() {
				if d.Type == tc.condition {
					def = d
				}
			}
			if def.For > 0 {
				// The evidence must hold for the alert's for: first.
				if c := condition(t, e.Verdict(), tc.condition); c.Status != StatusFalse {
					t.Fatalf("set before its for: of %s: %+v", def.For, c)
				}
				clk.advance(def.For)
				e.Evaluate()
			}
			v := e.Verdict()
			c := condition(t, v, tc.condition)
			if c.Status != StatusTrue || c.Reason != def.Reason {
				t.Fatalf("after the fault: %+v", c)
			}
			if len(c.Devices) != 1 || c.Devices[0] != tc.device {
				t.Errorf("devices %q, want [%q]", c.Devices, tc.device)
			}
			if len(c.Evidence) != 1 || c.Evidence[0] != tc.evidence {
				t.Errorf("evidence %q, want [%q]", c.Evidence, tc.evidence)
			}
			if !strings.Contains(c.Message, tc.device) || !strings.Contains(c.Message, tc.evidence) {
				t.Errorf("message %q does not name the device and the evidence", c.Message)
			}
			if v.Status != VerdictUnhealthy || !strings.Contains(v.Reason, tc.condition+" ("+def.Reason+") on "+tc.device) {
				t.Errorf("verdict %s: %q", v.Status, v.Reason)
			}
			for _, o := range v.Conditions {
				if o.Type != tc.condition && o.Status != StatusFalse {
					t.Errorf("the fault also set %s: %+v", o.Type, o)
				}
			}
		})
	}
}

func TestHysteresis(t *testing.T) {
	clk := newClock()
	src := &fakeSource{name: "devlink"}
	rec := &recorder{}
	const hold = 5 * time.Minute
	e := newEvaluator(t, src, clk, hold, rec)
	healthy := buildSnapshot(t, healthyHost()...)
	fatal := buildSnapshot(t, with(healthyHost(), gauge("nic_devlink_health_reporter_healthy", 0, "device", "pci/0000:08:00.0", "reporter", "fw_fatal"))...)
	status := func() string { return condition(t, e.Verdict(), "NICFirmwareFatal").Status }

	src.set(healthy)
	e.Evaluate()
	src.set(fatal)
	clk.advance(time.Second)
	e.Evaluate()
	if status() != StatusTrue {
		t.Fatal("not set at once")
	}
	setAt := clk.t
	// Healthy again: held for just under the hold time, the condition
	// stays, says when it clears, and the flap back does not restart it.
	src.set(healthy)
	clk.advance(time.Second)
	e.Evaluate()
	c := condition(t, e.Verdict(), "NICFirmwareFatal")
	if c.Status != StatusTrue || c.ClearsAt == nil || !c.ClearsAt.Equal(setAt.Add(hold)) {
		t.Fatalf("recovering: %+v", c)
	}
	if !strings.HasPrefix(c.Message, "recovering") {
		t.Errorf("recovering message %q", c.Message)
	}
	// The fault returns before the hold time ends: the clock of the
	// hold starts again from its last evidence.
	clk.advance(hold - 2*time.Second)
	src.set(fatal)
	e.Evaluate()
	lastEvidence := clk.t
	src.set(healthy)
	clk.advance(hold - time.Second)
	e.Evaluate()
	if status() != StatusTrue {
		t.Fatal("cleared before holding healthy for the hold time")
	}
	clk.t = lastEvidence.Add(hold)
	e.Evaluate()
	c = condition(t, e.Verdict(), "NICFirmwareFatal")
	if c.Status != StatusFalse || c.Reason != HealthyReason || !c.LastTransitionTime.Equal(clk.t) {
		t.Fatalf("after holding healthy: %+v", c)
	}
	if e.Verdict().Status != VerdictOK {
		t.Errorf("verdict %s", e.Verdict().Status)
	}
	want := []string{"NICFirmwareFatal=True", "NICFirmwareFatal=False"}
	if strings.Join(rec.got, " ") != strings.Join(want, " ") {
		t.Errorf("sink saw %q, want %q", rec.got, want)
	}
}

func TestForResetsWhenEvidenceGoes(t *testing.T) {
	clk := newClock()
	src := &fakeSource{name: "netdev"}
	e := newEvaluator(t, src, clk, time.Minute)
	down := buildSnapshot(t, with(healthyHost(), gauge("nic_netdev_carrier", 0, "device", "enp8s0f1np1"))...)
	up := buildSnapshot(t, healthyHost()...)
	// Down 50 s, up, down 50 s: never a minute at a time (a flap).
	for _, s := range []*exposition.Snapshot{down, down, up, down, down} {
		src.set(s)
		e.Evaluate()
		if c := condition(t, e.Verdict(), "NICLinkDown"); c.Status != StatusFalse {
			t.Fatalf("set by a link that was never down for a minute: %+v", c)
		}
		clk.advance(25 * time.Second)
	}
	clk.advance(35 * time.Second)
	e.Evaluate()
	if c := condition(t, e.Verdict(), "NICLinkDown"); c.Status != StatusTrue {
		t.Fatalf("not set after a minute down: %+v", c)
	}
}

func TestRiseWindow(t *testing.T) {
	clk := newClock()
	src := &fakeSource{name: "ethtool"}
	e := newEvaluator(t, src, clk, time.Minute)
	wd := func(v float64) *exposition.Snapshot {
		return buildSnapshot(t, counter("nic_ethtool_wd_expired_total", v, "device", "ens5"))
	}
	status := func() string { return condition(t, e.Verdict(), "NICWatchdogReset").Status }
	// A counter first seen above zero is a baseline, not a rise.
	src.set(wd(7))
	e.Evaluate()
	if status() != StatusFalse {
		t.Fatal("set by the first value of a counter")
	}
	clk.advance(time.Minute)
	src.set(wd(8))
	e.Evaluate()
	if status() != StatusTrue {
		t.Fatal("not set by a rise")
	}
	// The rise stays evidence for the alert's 15-minute window, then the
	// hold time of a minute runs.
	clk.advance(15*time.Minute - time.Second)
	e.Evaluate()
	if status() != StatusTrue {
		t.Fatal("cleared within the window")
	}
	clk.advance(time.Second + time.Minute)
	e.Evaluate()
	if status() != StatusFalse {
		t.Fatal("not cleared after the window and the hold time")
	}
	// A counter that went down (a driver reload) did not rise.
	src.set(wd(0))
	clk.advance(time.Second)
	e.Evaluate()
	if status() != StatusFalse {
		t.Fatal("set by a counter reset")
	}
}

func TestUnknownUntilReady(t *testing.T) {
	clk := newClock()
	src := &fakeSource{name: "x"}
	ready := false
	e, err := New(Config{Sources: []Source{src}, Interval: time.Second, Now: clk.now, Ready: func() bool { return ready }}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if e.Verdict().Status != VerdictUnknown {
		t.Fatalf("before the first evaluation: %s", e.Verdict().Status)
	}
	e.Evaluate()
	if v := e.Verdict(); v.Status != VerdictUnknown || !strings.Contains(v.Reason, "polled") {
		t.Fatalf("before the collectors polled: %+v", v)
	}
	ready = true
	e.Evaluate()
	if e.Verdict().Status != VerdictOK {
		t.Fatalf("after: %s", e.Verdict().Status)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	for name, cfg := range map[string]Config{
		"zero interval":   {},
		"negative hold":   {Interval: time.Second, ClearAfter: -time.Second},
		"duplicate":       {Interval: time.Second, Definitions: []Definition{Conditions()[0], Conditions()[0]}},
		"rise, no window": {Interval: time.Second, Definitions: []Definition{{Type: "X", Reason: "Y", Rule: Rule{Selector: Selector{Metric: "m"}, Op: OpRise}}}},
	} {
		if _, err := New(cfg, zap.NewNop()); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestHandlerAndCollector(t *testing.T) {
	clk := newClock()
	src := &fakeSource{name: "pcie"}
	src.set(buildSnapshot(t, with(healthyHost(), gauge("nic_pcie_link_degraded", 1, "device", "enp8s0f1np1", "pci_address", "0000:08:00.1"))...))
	e := newEvaluator(t, src, clk, time.Minute)
	e.Evaluate()

	rr := httptest.NewRecorder()
	e.Handler().ServeHTTP(rr, httptest.NewRequest("GET", "/health", nil))
	if rr.Code != http.StatusOK || rr.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("unhealthy: HTTP %d %s", rr.Code, rr.Header().Get("Content-Type"))
	}
	v, err := decodeVerdict(rr.Body, "200 OK")
	if err != nil {
		t.Fatal(err)
	}
	if v.Status != VerdictUnhealthy || condition(t, v, "PCIeLinkDegraded").Status != StatusTrue {
		t.Fatalf("decoded %+v", v)
	}
	rr = httptest.NewRecorder()
	e.Handler().ServeHTTP(rr, httptest.NewRequest("POST", "/health", nil))
	if rr.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: HTTP %d", rr.Code)
	}

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(e.Collector())
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			got = append(got, fmt.Sprintf("%s{%s} %g", f.GetName(), strings.Join(ls, ","), m.GetGauge().GetValue()+m.GetCounter().GetValue()))
		}
	}
	want := []string{
		"nic_exporter_node_condition{condition=InfiniBandPortDown,reason=PhysStateNotLinkUp} 0",
		"nic_exporter_node_condition{condition=NICFirmwareFatal,reason=FirmwareFatalError} 0",
		"nic_exporter_node_condition{condition=NICLinkDown,reason=CarrierLost} 0",
		"nic_exporter_node_condition{condition=NICOverheating,reason=AboveCriticalTemperature} 0",
		"nic_exporter_node_condition{condition=NICWatchdogReset,reason=ENAWatchdogExpired} 0",
		"nic_exporter_node_condition{condition=PCIeLinkDegraded,reason=PCIeLinkBelowCapability} 1",
		"nic_exporter_node_condition{condition=TransceiverFailing,reason=RxPowerBelowAlarm} 0",
		"nic_exporter_node_health_snapshot_errors_total{} 0",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("nic_exporter_node_condition (-want +got):\n%s", diff)
	}

	// Healthy: HTTP 200.
	src.set(buildSnapshot(t, healthyHost()...))
	clk.advance(time.Minute)
	e.Evaluate()
	rr = httptest.NewRecorder()
	e.Handler().ServeHTTP(rr, httptest.NewRequest("GET", "/health", nil))
	var healthy Verdict
	if err := json.Unmarshal(rr.Body.Bytes(), &healthy); err != nil || rr.Code != 200 || healthy.Status != VerdictOK {
		t.Fatalf("healthy: HTTP %d %v %+v", rr.Code, err, healthy)
	}
}

func TestDecodeVerdictRefuses(t *testing.T) {
	for _, in := range []string{"", "not json", `{"status":"maybe"}`, `{}`, "# HELP up\n"} {
		if _, err := decodeVerdict(strings.NewReader(in), "200 OK"); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

func FuzzDecodeVerdict(f *testing.F) {
	f.Add(`{"status":"ok","reason":"no NIC condition is true","conditions":[]}`)
	f.Add(`{"status":"unhealthy","conditions":[{"type":"NICLinkDown","status":"True","devices":["eth0"]}]}`)
	f.Add(`{"status":1}`)
	f.Fuzz(func(t *testing.T, in string) {
		v, err := decodeVerdict(strings.NewReader(in), "200")
		if err == nil && v.Status != VerdictOK && v.Status != VerdictUnhealthy && v.Status != VerdictUnknown {
			t.Fatalf("accepted status %q", v.Status)
		}
	})
}

func FuzzParseSamples(f *testing.F) {
	f.Add("# TYPE nic_pcie_link_degraded gauge\nnic_pcie_link_degraded{device=\"x\"} 1\n")
	f.Add("nic_netdev_carrier 0\nnic_netdev_carrier{device=\"\\\"\"} NaN\n")
	want := map[string]bool{"nic_pcie_link_degraded": true, "nic_netdev_carrier": true}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := parseSamples(strings.NewReader(in), want)
		if err != nil {
			return
		}
		for name := range s {
			if !want[name] {
				t.Fatalf("kept family %s", name)
			}
		}
	})
}

// malformedSnapshot is a snapshot the text parser refuses: one family
// name twice, with different label names (the builder does not check
// that two descriptors of one name agree).
func malformedSnapshot() *exposition.Snapshot {
	b := exposition.NewBuilder()
	b.Add(exposition.MustNewDesc("nic_pcie_link_degraded", "a", exposition.Gauge, "device"), 0, "x")
	b.Add(exposition.MustNewDesc("nic_pcie_link_degraded", "b", exposition.Gauge, "port"), 0, "y")
	return b.Snapshot()
}

// TestUnreadableSnapshotKeepsLastEvidence checks that a snapshot that
// cannot be parsed neither clears nor sets a condition: the collector's
// last readable snapshot stands in, the error is logged once and
// counted.
func TestUnreadableSnapshotKeepsLastEvidence(t *testing.T) {
	clk := newClock()
	src := &fakeSource{name: "netdev"}
	core, logs := observer.New(zap.ErrorLevel)
	e, err := New(Config{Sources: []Source{src}, Interval: time.Second, ClearAfter: time.Minute, Now: clk.now}, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	src.set(buildSnapshot(t, with(healthyHost(), gauge("nic_pcie_link_degraded", 1, "device", "enp8s0f1np1", "pci_address", "0000:08:00.1"))...))
	e.Evaluate()
	src.set(malformedSnapshot())
	for range 3 {
		clk.advance(time.Minute)
		e.Evaluate()
		if c := condition(t, e.Verdict(), "PCIeLinkDegraded"); c.Status != StatusTrue || c.ClearsAt != nil {
			t.Fatalf("an unreadable snapshot changed the condition: %+v", c)
		}
	}
	if n := logs.FilterMessageSnippet("cannot read a collector's snapshot").Len(); n != 1 {
		t.Errorf("logged %d times, want once", n)
	}
	if n := e.errors.Load(); n != 1 {
		t.Errorf("counted %d errors, want 1 (one snapshot)", n)
	}
	// A readable snapshot again: the evidence is gone, the hold time runs.
	src.set(buildSnapshot(t, healthyHost()...))
	e.Evaluate()
	clk.advance(time.Minute)
	e.Evaluate()
	if c := condition(t, e.Verdict(), "PCIeLinkDegraded"); c.Status != StatusFalse {
		t.Fatalf("not cleared after a readable healthy snapshot and the hold time: %+v", c)
	}
}
