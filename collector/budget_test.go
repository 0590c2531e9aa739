package collector

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/nic-exporter/nic_exporter/collector/exposition"
)

// settable is a Snapshotter whose snapshot a test replaces.
type settable struct {
	name string
	snap *exposition.Snapshot
}

func (s *settable) Name() string                   { return s.name }
func (s *settable) Snapshot() *exposition.Snapshot { return s.snap }

var (
	budgetSum      = exposition.MustNewDesc("nic_t_sum_total", "Sum.", exposition.Counter, "device")
	budgetOther    = exposition.MustNewDesc("nic_t_other", "Other.", exposition.Gauge, "device")
	budgetPerQueue = exposition.MustNewDesc("nic_t_per_queue_total", "Per queue.", exposition.Counter, "device", "queue").AsDetail()
)

// devices returns a snapshot with n devices: per device one sum, one
// other series and four per-queue detail series.
func devices(n int) *exposition.Snapshot {
	b := exposition.NewBuilder()
	for i := 0; i < n; i++ {
		d := "eth" + string(rune('a'+i))
		b.Add(budgetSum, 1, d)
		b.Add(budgetOther, 1, d)
		for q := 0; q < 4; q++ {
			b.Add(budgetPerQueue, 1, d, string(rune('0'+q)))
		}
	}
	return b.Snapshot()
}

func TestSeriesBudget(t *testing.T) {
	big := &settable{name: "ethtool", snap: devices(3)} // 6 default, 12 detail
	small := &settable{name: "netdev", snap: devices(1)}
	core, logs := observer.New(zap.WarnLevel)
	tests := []struct {
		name                    string
		budget                  int
		bigDevices              int
		wantDefault, wantDetail float64
		wantExceeded            float64
		wantLogs                int // warnings logged so far
	}{
		{"off", 0, 3, 8, 16, 0, 0},
		// The budget object under test from here on.
		{"under", 10, 3, 8, 16, 0, 0},
		{"over: one warning", 10, 5, 12, 24, 1, 1},
		{"still over: no second warning", 10, 6, 14, 28, 1, 1},
		{"back under", 10, 3, 8, 16, 0, 1},
		{"over again: a new warning", 10, 9, 20, 40, 1, 2},
	}
	var budget *SeriesBudget
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if budget == nil || budget.budget != tt.budget {
				budget = NewSeriesBudget([]Snapshotter{big, small}, tt.budget, zap.New(core))
			}
			big.snap = devices(tt.bigDevices)
			reg := prometheus.NewRegistry()
			reg.MustRegister(budget)
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]float64{}
			for _, mf := range mfs {
				for _, m := range mf.GetMetric() {
					key := mf.GetName()
					for _, l := range m.GetLabel() {
						key += "/" + l.GetValue()
					}
					got[key] = m.GetGauge().GetValue()
				}
			}
			want := map[string]float64{
				"nic_exporter_series/default":         tt.wantDefault,
				"nic_exporter_series/detail":          tt.wantDetail,
				"nic_exporter_series_budget":          float64(tt.budget),
				"nic_exporter_series_budget_exceeded": tt.wantExceeded,
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("metrics = %v, want %v", got, want)
			}
			if got := logs.Len(); got != tt.wantLogs {
				t.Errorf("%d warnings logged, want %d", got, tt.wantLogs)
			}
		})
	}
	entries := logs.All()
	if len(entries) == 0 {
		t.Fatal("no warning logged")
	}
	fields := entries[0].ContextMap()
	if got, want := fields["top_collectors"], "ethtool=10,netdev=2"; got != want {
		t.Errorf("top_collectors = %v, want %v", got, want)
	}
	if got, want := fields["top_families"], "nic_t_other=6,nic_t_sum_total=6"; got != want {
		t.Errorf("top_families = %v, want %v", got, want)
	}
	if fields["series"] != int64(12) || fields["budget"] != int64(10) {
		t.Errorf("series, budget = %v, %v; want 12, 10", fields["series"], fields["budget"])
	}
}
