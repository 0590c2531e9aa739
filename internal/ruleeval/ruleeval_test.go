package ruleeval

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
)

// TestShippedRulesMatchDeploy checks that the embedded copies are the
// shipped rule files byte for byte (make mixin refreshes them).
func TestShippedRulesMatchDeploy(t *testing.T) {
	for name, got := range map[string][]byte{"alerts.yml": ShippedAlerts, "rules.yml": ShippedRecords} {
		want, err := os.ReadFile(filepath.Join("..", "..", "deploy", "prometheus", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("internal/ruleeval/%s differs from deploy/prometheus/%s: run make mixin (or copy it)", name, name)
		}
	}
}

// TestShippedLoads checks that every alerting rule of the shipped file
// is loaded, with its severity and runbook.
func TestShippedLoads(t *testing.T) {
	r, err := Shipped(zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	n := len(regexp.MustCompile(`(?m)^\s+- alert: `).FindAll(ShippedAlerts, -1))
	if len(r.Alerts()) != n {
		t.Errorf("loaded %d alerting rules, the file has %d", len(r.Alerts()), n)
	}
	for _, name := range []string{"nic_ethtool_rx_out_of_buffer_total", "nic_ethtool_rx_bit_phy_total", "up"} {
		if !r.Reads(name) {
			t.Errorf("Reads(%s) = false, want true", name)
		}
	}
	if r.Reads("nic_ethtool_queue_rx_cnt_total") {
		t.Error("Reads(nic_ethtool_queue_rx_cnt_total) = true: no alert reads it")
	}
	for _, a := range r.Alerts() {
		if a.Labels["severity"] == "" || a.Annotations["runbook_url"] == "" || len(a.Metrics()) == 0 && a.Name != "NICExporterTargetsAbsent" {
			t.Errorf("%s: severity %q, runbook %q, metrics %v", a.Name, a.Labels["severity"], a.Annotations["runbook_url"], a.Metrics())
		}
	}
}

func TestLoadRejectsBadRules(t *testing.T) {
	for name, f := range map[string]string{
		"bad expression": "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: rate(x[5m]\n",
		"no alerts":      "groups:\n  - name: g\n    rules:\n      - record: a:b\n        expr: x\n",
		"not yaml":       "groups: [",
	} {
		if _, err := Load(Config{Alerts: []byte(f)}, zaptest.NewLogger(t)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	// The shipped files also pass rulefmt's validation, which Shipped
	// skips.
	if _, err := Load(Config{Alerts: ShippedAlerts, Records: ShippedRecords}, zaptest.NewLogger(t)); err != nil {
		t.Errorf("validating the shipped rules: %v", err)
	}
	if _, err := Load(Config{}, zaptest.NewLogger(t)); err == nil {
		t.Error("empty config: no error")
	}
}

// fired returns the alert names that fired, with the first firing of
// each.
func fired(t *testing.T, in Input) map[string]Firing {
	t.Helper()
	r, err := Shipped(zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	fs, err := r.Eval(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]Firing{}
	for _, f := range fs {
		if _, ok := out[f.Rule.Name]; !ok {
			out[f.Rule.Name] = f
		}
	}
	return out
}

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func series(name string, counter bool, lbls map[string]string, pts ...Point) Series {
	l := map[string]string{"__name__": name, "job": "nic_exporter", "instance": "bundle"}
	for k, v := range lbls {
		l[k] = v
	}
	return Series{Labels: l, Counter: counter, Points: pts}
}

func TestCounterSinceBoot(t *testing.T) {
	dev := map[string]string{"device": "eth0"}
	tests := []struct {
		name   string
		uptime time.Duration
		value  float64
		alert  string
		want   bool
	}{
		{"any rx_out_of_buffer since boot", 30 * 24 * time.Hour, 5, "NICRxOutOfBuffer", true},
		{"rx_out_of_buffer zero", time.Hour, 0, "NICRxOutOfBuffer", false},
		// > 10 symbol errors in 10 minutes: 100 in an hour averages
		// 16.7 per 10 minutes, 100 in ten days 0.07.
		{"symbol errors at a high average rate", time.Hour, 100, "NICInfiniBandSymbolErrors", true},
		{"symbol errors at a low average rate", 10 * 24 * time.Hour, 100, "NICInfiniBandSymbolErrors", false},
		// A boot shorter than the window: the zero at boot is in it.
		{"symbol errors since a recent boot", 2 * time.Minute, 11, "NICInfiniBandSymbolErrors", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			metric := "nic_ethtool_rx_out_of_buffer_total"
			lbls := dev
			if tt.alert == "NICInfiniBandSymbolErrors" {
				metric = "nic_infiniband_port_symbol_error_total"
				lbls = map[string]string{"device": "mlx5_0", "port": "1"}
			}
			got := fired(t, Input{Now: now, Boot: now.Add(-tt.uptime),
				Series: []Series{series(metric, true, lbls, Point{now, tt.value})}})
			if _, ok := got[tt.alert]; ok != tt.want {
				t.Errorf("%s fired %v, want %v (all: %v)", tt.alert, ok, tt.want, got)
			}
		})
	}
}

// TestTwoSnapshotsRealRate: with two observations the rate between them
// is the real one, so a counter that did not move is quiet however
// large it is.
func TestTwoSnapshotsRealRate(t *testing.T) {
	dev := map[string]string{"device": "eth0"}
	boot := now.Add(-24 * time.Hour)
	for _, tt := range []struct {
		first, last float64
		want        bool
	}{{1000, 1000, false}, {1000, 1003, true}} {
		got := fired(t, Input{Now: now, Boot: boot, Series: []Series{
			series("nic_ethtool_rx_out_of_buffer_total", true, dev, Point{now.Add(-10 * time.Second), tt.first}, Point{now, tt.last})}})
		if _, ok := got["NICRxOutOfBuffer"]; ok != tt.want {
			t.Errorf("%v -> %v: NICRxOutOfBuffer fired %v, want %v", tt.first, tt.last, ok, tt.want)
		}
	}
}

// TestCounterValueViews checks the value a counter with two
// observations has before the first one in each view (Input.SinceBoot):
// at the rate between the two, or from zero at boot, and that both views
// agree from the first observation on and for a single observation.
func TestCounterValueViews(t *testing.T) {
	boot := now.Add(-100 * time.Second)
	at := func(sec float64) int64 { return boot.Add(time.Duration(sec * float64(time.Second))).UnixMilli() }
	two := []Point{{now.Add(-10 * time.Second), 45}, {now, 55}} // +1/s between them
	flat := []Point{{now.Add(-10 * time.Second), 45}, {now, 45}}
	tests := []struct {
		name      string
		points    []Point
		sinceBoot bool
		t         int64
		want      float64
	}{
		{"between samples: the rate between them before the first", two, false, at(80), 35},
		{"between samples: down to zero, not below", two, false, at(10), 0},
		{"between samples: a counter that did not move is flat before", flat, false, at(10), 45},
		{"since boot: from zero at boot to the first", two, true, at(80), 40},
		{"since boot: a counter that did not move still rose since boot", flat, true, at(45), 22.5},
		{"since boot: zero at boot", flat, true, at(0), 0},
		{"both: between the observations as they say", two, false, at(95), 50},
		{"both: between the observations as they say, since boot", two, true, at(95), 50},
		{"both: the last value after the last", flat, true, at(100), 45},
		{"one observation: since boot either way", []Point{{now, 90}}, false, at(50), 45},
		{"one observation: since boot either way, since boot", []Point{{now, 90}}, true, at(50), 45},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newStore(Input{Now: now, Boot: boot, SinceBoot: tt.sinceBoot,
				Series: []Series{series("c_total", true, nil, tt.points...)}}, time.Minute)
			got, ok := st.value(st.series[0], tt.t)
			if !ok || math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("value at boot+%.1fs = %v (%v), want %v", float64(tt.t-boot.UnixMilli())/1000, got, ok, tt.want)
			}
		})
	}
}

// TestTwoSnapshotViews checks which alerts fire over a counter observed
// twice, 10 s apart, in the "between samples" and the "since boot" view:
// a counter that moved between the samples fires in both, one that did
// not only since boot (as a one-sample bundle of it does), and a rate
// threshold since boot only when the average since boot crosses it, so
// neither view holds every finding of the other.
func TestTwoSnapshotViews(t *testing.T) {
	ib := map[string]string{"device": "mlx5_0", "port": "1"}
	eth := map[string]string{"device": "eth0"}
	tests := []struct {
		name          string
		metric        string
		lbls          map[string]string
		uptime        time.Duration
		first, last   float64
		alert         string
		between, boot bool
	}{
		{"moved between the samples", "nic_ethtool_rx_out_of_buffer_total", eth, 24 * time.Hour, 1000, 1003, "NICRxOutOfBuffer", true, true},
		{"did not move between the samples", "nic_ethtool_rx_out_of_buffer_total", eth, 24 * time.Hour, 1000, 1000, "NICRxOutOfBuffer", false, true},
		{"zero in both samples", "nic_ethtool_rx_out_of_buffer_total", eth, 24 * time.Hour, 0, 0, "NICRxOutOfBuffer", false, false},
		{"an ENA watchdog reset before the first sample", "nic_ethtool_wd_expired_total", eth, 24 * time.Hour, 1, 1, "NICENAWatchdogExpired", false, true},
		{"an ENA watchdog reset between the samples", "nic_ethtool_wd_expired_total", eth, 24 * time.Hour, 1, 2, "NICENAWatchdogExpired", true, true},
		// More than 10 symbol errors in 10 minutes: 100 in an hour
		// average 16.7 per 10 minutes, 100 in ten days 0.07; 20 in the
		// 10 s between the samples are 20 in any 10 minutes.
		{"symbol errors, high average, none between", "nic_infiniband_port_symbol_error_total", ib, time.Hour, 100, 100, "NICInfiniBandSymbolErrors", false, true},
		{"symbol errors, low average, none between", "nic_infiniband_port_symbol_error_total", ib, 10 * 24 * time.Hour, 100, 100, "NICInfiniBandSymbolErrors", false, false},
		{"symbol errors, low average, many between", "nic_infiniband_port_symbol_error_total", ib, 10 * 24 * time.Hour, 100, 120, "NICInfiniBandSymbolErrors", true, true},
		// One in 10 s is 60 in 10 minutes at that rate, but about one
		// since boot's average and the 10 s give: the "since boot" view
		// does not hold every finding of the other.
		{"symbol errors, one between, low average", "nic_infiniband_port_symbol_error_total", ib, 10 * 24 * time.Hour, 100, 101, "NICInfiniBandSymbolErrors", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, sinceBoot := range []bool{false, true} {
				got := fired(t, Input{Now: now, Boot: now.Add(-tt.uptime), SinceBoot: sinceBoot, Series: []Series{
					series(tt.metric, true, tt.lbls, Point{now.Add(-10 * time.Second), tt.first}, Point{now, tt.last})}})
				want := tt.between
				if sinceBoot {
					want = tt.boot
				}
				if _, ok := got[tt.alert]; ok != want {
					t.Errorf("since boot %v: %s fired %v, want %v (all: %v)", sinceBoot, tt.alert, ok, want, got)
				}
			}
		})
	}
}

// TestGaugeAndTemplates: a gauge holds over the window (min_over_time),
// "for:" is not waited for, and labels and annotations are expanded as
// the rule manager does.
func TestGaugeAndTemplates(t *testing.T) {
	rep := map[string]string{"device": "pci/0000:08:00.0", "port": "", "netdev": "", "reporter": "fw"}
	got := fired(t, Input{Now: now, Boot: now.Add(-time.Hour), Series: []Series{
		series("nic_devlink_health_reporter_healthy", false, rep, Point{now, 0}),
		series("nic_devlink_health_reporter_errors_total", true, rep, Point{now, 1}),
	}})
	for _, name := range []string{"NICDevlinkFwError", "NICDevlinkReporterStuck"} {
		f, ok := got[name]
		if !ok {
			t.Fatalf("%s did not fire: %v", name, got)
		}
		if f.Labels["severity"] != "warning" || f.Labels["device"] != "pci/0000:08:00.0" || f.Labels["alertname"] != name {
			t.Errorf("%s labels %v", name, f.Labels)
		}
		if s := f.Annotations["summary"]; s == "" || bytes.Contains([]byte(s), []byte("{{")) || !bytes.Contains([]byte(s), []byte("bundle")) {
			t.Errorf("%s summary %q not expanded", name, s)
		}
	}
	if got["NICDevlinkReporterStuck"].Rule.For != 15*time.Minute {
		t.Errorf("For = %v, want the rule's 15m", got["NICDevlinkReporterStuck"].Rule.For)
	}
}

// TestRecordingRules: an alert that reads a recording rule fires from
// the series the recording rule reads.
func TestRecordingRules(t *testing.T) {
	dev := map[string]string{"device": "eth0"}
	boot := now.Add(-time.Hour)
	got := fired(t, Input{Now: now, Boot: boot, Series: []Series{
		series("nic_ethtool_rx_corrected_bit_phy_total", true, dev, Point{now, 1e6}),
		series("nic_ethtool_rx_bit_phy_total", true, dev, Point{now, 1e10}),
	}})
	if _, ok := got["NICPreFECBERHigh"]; !ok {
		t.Errorf("NICPreFECBERHigh (BER 1e-4 through device:nic_phy_pre_fec_ber:rate5m) did not fire: %v", got)
	}
	r, err := Shipped(zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range r.Alerts() {
		if a.Name == "NICPreFECBERHigh" && !a.Selects(map[string]string{"__name__": "nic_ethtool_rx_bit_phy_total", "job": "nic_exporter"}) {
			t.Errorf("NICPreFECBERHigh does not select the series its recording rule reads: %v", a.Metrics())
		}
	}
}

func TestBootAfterNow(t *testing.T) {
	r, err := Shipped(zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Eval(context.Background(), Input{Now: now, Boot: now}); err == nil {
		t.Error("boot == now: no error")
	}
}

// BenchmarkShipped measures loading the shipped rule files: what every
// run of diagnose pays before reading a bundle.
func BenchmarkShipped(b *testing.B) {
	for b.Loop() {
		if _, err := Shipped(nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEval measures evaluating every shipped rule over a small host
// (a devlink reporter in error, an interface with 200 counters).
func BenchmarkEval(b *testing.B) {
	r, err := Shipped(nil)
	if err != nil {
		b.Fatal(err)
	}
	in := Input{Now: now, Boot: now.Add(-24 * time.Hour), Series: []Series{
		series("nic_devlink_health_reporter_healthy", false, map[string]string{"device": "pci/0000:08:00.0", "reporter": "fw"}, Point{now, 0}),
	}}
	for i := 0; i < 200; i++ {
		in.Series = append(in.Series, series(fmt.Sprintf("nic_ethtool_stat%d_total", i), true, map[string]string{"device": "eth0"}, Point{now, float64(i)}))
	}
	in.Series = append(in.Series, series("nic_ethtool_rx_out_of_buffer_total", true, map[string]string{"device": "eth0"}, Point{now, 5}))
	for b.Loop() {
		if _, err := r.Eval(context.Background(), in); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzLoad feeds arbitrary rule files (--alert-rules-file is the user's)
// to Load, validated and not: an error, never a panic.
func FuzzLoad(f *testing.F) {
	f.Add(ShippedAlerts, false)
	f.Add([]byte("groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: rate(x[5m]) > 0\n        labels: {severity: '{{ $labels.device }}'}\n"), true)
	f.Add([]byte("groups: ["), false)
	f.Fuzz(func(t *testing.T, data []byte, checked bool) {
		r, err := Load(Config{Alerts: data, Checked: checked}, nil)
		if err != nil {
			return
		}
		_, _ = r.Eval(context.Background(), Input{Now: now, Boot: now.Add(-time.Hour),
			Series: []Series{series("x", true, map[string]string{"device": "eth0"}, Point{now, 1})}})
	})
}
