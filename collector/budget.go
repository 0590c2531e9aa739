package collector

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector/exposition"
)

// Snapshotter is a named source of snapshots, such as a Runner.
type Snapshotter interface {
	Name() string
	Snapshot() *exposition.Snapshot
}

// SeriesBudget is a prometheus.Collector that reports how many series the
// collectors publish in each profile (default: /metrics, detail:
// /metrics/detail) and whether the default profile exceeds a per-host
// budget. The first time it does, and again after it came back under the
// budget, one warning names the largest contributors.
type SeriesBudget struct {
	sources []Snapshotter
	budget  int
	log     *zap.Logger

	mu     sync.Mutex
	warned bool // the budget is exceeded and that was logged

	series, budgetDesc, exceeded *prometheus.Desc
}

// NewSeriesBudget returns a SeriesBudget over sources. A budget of zero
// or less turns the check off; the series counts are still reported.
func NewSeriesBudget(sources []Snapshotter, budget int, log *zap.Logger) *SeriesBudget {
	return &SeriesBudget{
		sources: sources, budget: max(budget, 0), log: log,
		series: prometheus.NewDesc("nic_exporter_series",
			"Series the collectors publish, by profile: default (served at /metrics) or detail (served at /metrics/detail only). The exporter's own metrics are not counted.",
			[]string{"profile"}, nil),
		budgetDesc: prometheus.NewDesc("nic_exporter_series_budget",
			"The per-host budget of default-profile series (--web.series-budget); 0 means no budget.", nil, nil),
		exceeded: prometheus.NewDesc("nic_exporter_series_budget_exceeded",
			"1 if the default profile has more series than --web.series-budget, else 0.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (b *SeriesBudget) Describe(ch chan<- *prometheus.Desc) {
	ch <- b.series
	ch <- b.budgetDesc
	ch <- b.exceeded
}

// Collect implements prometheus.Collector.
func (b *SeriesBudget) Collect(ch chan<- prometheus.Metric) {
	snaps := make([]*exposition.Snapshot, len(b.sources))
	var def, detail int
	for i, s := range b.sources {
		snaps[i] = s.Snapshot()
		def += snaps[i].Series()
		detail += snaps[i].Detail().Series()
	}
	over := b.check(def, snaps)
	ch <- prometheus.MustNewConstMetric(b.series, prometheus.GaugeValue, float64(def), "default")
	ch <- prometheus.MustNewConstMetric(b.series, prometheus.GaugeValue, float64(detail), "detail")
	ch <- prometheus.MustNewConstMetric(b.budgetDesc, prometheus.GaugeValue, float64(b.budget))
	ch <- prometheus.MustNewConstMetric(b.exceeded, prometheus.GaugeValue, Bool(over))
}

// check reports whether def default-profile series exceed the budget,
// and logs the warning when the budget is newly exceeded. snaps are the
// sources' snapshots, in the order of the sources.
func (b *SeriesBudget) check(def int, snaps []*exposition.Snapshot) bool {
	over := b.budget > 0 && def > b.budget
	b.mu.Lock()
	defer b.mu.Unlock()
	if !over {
		b.warned = false
		return false
	}
	if b.warned {
		return true
	}
	b.warned = true
	b.log.Warn("the default scrape exceeds the series budget; nic_exporter_series_budget_exceeded is 1",
		zap.Int("series", def), zap.Int("budget", b.budget),
		zap.String("top_collectors", topContributors(b.sources, snaps, 5, false)),
		zap.String("top_families", topContributors(b.sources, snaps, 5, true)))
	return true
}

// topContributors returns the n largest contributors to the default
// profile as "name=count" pairs separated by commas, largest first:
// collectors, or metric families when families is true.
func topContributors(sources []Snapshotter, snaps []*exposition.Snapshot, n int, families bool) string {
	counts := map[string]int{}
	for i, s := range snaps {
		if families {
			for name, c := range s.FamilySeries() {
				counts[name] += c
			}
		} else {
			counts[sources[i].Name()] += s.Series()
		}
	}
	names := make([]string, 0, len(counts))
	for name := range counts {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool {
		if counts[names[i]] != counts[names[j]] {
			return counts[names[i]] > counts[names[j]]
		}
		return names[i] < names[j]
	})
	if len(names) > n {
		names = names[:n]
	}
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = fmt.Sprintf("%s=%d", name, counts[name])
	}
	return strings.Join(parts, ",")
}
