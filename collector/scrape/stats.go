package scrape

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Profiles of the scrape self-metrics: the label profile says which
// endpoint a scrape asked for, with the values of nic_exporter_series.
const (
	// ProfileDefault is /metrics (--web.telemetry-path).
	ProfileDefault = "default"
	// ProfileDetail is /metrics/detail.
	ProfileDetail = "detail"
)

// profiles lists the profiles in the order their series are reported.
var profiles = [...]string{ProfileDefault, ProfileDetail}

// durationBuckets are the upper bounds of the scrape duration histogram,
// in seconds: a scrape of cached snapshots takes about a millisecond on
// a small host and tens of milliseconds for a million series, and a
// client that reads slowly can hold one up to --web.write-timeout.
var durationBuckets = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60}

// Stats is a prometheus.Collector of the scrape self-metrics of the
// handlers that share it: nic_exporter_scrapes_in_flight,
// nic_exporter_scrapes_failed_total and
// nic_exporter_scrape_duration_seconds, each with the label profile
// (default for /metrics, detail for /metrics/detail). Both profiles are
// reported from the start, with zeros for a profile no handler serves,
// so a query never finds a series missing.
type Stats struct {
	mu       sync.Mutex
	handlers []*Handler

	inflightDesc, failedDesc *prometheus.Desc
	duration                 *prometheus.HistogramVec
}

// NewStats returns an empty Stats; NewHandler adds the handlers whose
// Config names it.
func NewStats() *Stats {
	s := &Stats{
		inflightDesc: prometheus.NewDesc("nic_exporter_scrapes_in_flight",
			"Scrapes being served now, by profile: default (/metrics, the scrape that reads this included) or detail (/metrics/detail).",
			[]string{"profile"}, nil),
		failedDesc: prometheus.NewDesc("nic_exporter_scrapes_failed_total",
			"Scrapes that did not deliver a whole answer, by profile (default: /metrics, detail: /metrics/detail) and reason: rejected (HTTP 503, --web.max-requests scrapes of both profiles together were being prepared), write_timeout (the client did not read the answer within --web.write-timeout), write_error (the connection broke).",
			[]string{"profile", "reason"}, nil),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "nic_exporter_scrape_duration_seconds",
			Help:    "Time to serve a scrape, from its admission to the end of its answer or the failed write, by profile: default (/metrics) or detail (/metrics/detail). Rejected scrapes are not included; a scrape's own duration is in the next one.",
			Buckets: durationBuckets,
		}, []string{"profile"}),
	}
	for _, p := range profiles {
		s.duration.WithLabelValues(p)
	}
	return s
}

// add registers h and returns the observer of its scrape durations.
func (s *Stats) add(h *Handler) prometheus.Observer {
	s.mu.Lock()
	s.handlers = append(s.handlers, h)
	s.mu.Unlock()
	return s.duration.WithLabelValues(h.profile)
}

// Describe implements prometheus.Collector.
func (s *Stats) Describe(ch chan<- *prometheus.Desc) {
	ch <- s.inflightDesc
	ch <- s.failedDesc
	s.duration.Describe(ch)
}

// Collect implements prometheus.Collector. Handlers of the same profile
// are summed.
func (s *Stats) Collect(ch chan<- prometheus.Metric) {
	var inflight [len(profiles)]int64
	var failed [len(profiles)][len(reasons)]uint64
	s.mu.Lock()
	for _, h := range s.handlers {
		p := profileIndex(h.profile)
		inflight[p] += h.inflight.Load()
		for i := range reasons {
			failed[p][i] += h.failed[i].Load()
		}
	}
	s.mu.Unlock()
	for p, name := range profiles {
		ch <- prometheus.MustNewConstMetric(s.inflightDesc, prometheus.GaugeValue, float64(inflight[p]), name)
		for i, r := range reasons {
			ch <- prometheus.MustNewConstMetric(s.failedDesc, prometheus.CounterValue, float64(failed[p][i]), name, r)
		}
	}
	s.duration.Collect(ch)
}

// profileIndex returns the index of profile in profiles.
func profileIndex(profile string) int {
	if profile == ProfileDetail {
		return 1
	}
	return 0
}
