package kube

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the sink's self-metrics.
type metrics struct {
	errors        *prometheus.CounterVec
	writes        *prometheus.CounterVec
	lastSuccess   prometheus.Gauge
	eventsDropped atomic.Uint64
	dropped       *prometheus.Desc
}

func newMetrics() *metrics {
	m := &metrics{
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nic_exporter_kubernetes_errors_total",
			Help: "Requests to the Kubernetes API server that failed, by request (get_node, patch_conditions, patch_taint, create_event) and reason (forbidden, unauthorized, not_found, conflict, invalid, throttled, timeout, server_error, unreachable, other); each failure is retried with exponential backoff.",
		}, []string{"request", "reason"}),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nic_exporter_kubernetes_writes_total",
			Help: "Writes to the own Node and its Events that succeeded, by request (patch_conditions, patch_taint, create_event); a reconciliation that finds the Node in line with the verdict writes nothing.",
		}, []string{"request"}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "nic_exporter_kubernetes_last_success_timestamp_seconds",
			Help: "Unix time of the last reconciliation that left the own Node in line with the node verdict (conditions, taint, Events); 0 before the first.",
		}),
		dropped: prometheus.NewDesc("nic_exporter_kubernetes_events_dropped_total",
			"Transition Events dropped unposted because more transitions came while the API server could not be reached than the queue holds; the Node's conditions still get the latest verdict.", nil, nil),
	}
	for _, r := range []string{reqConditions, reqTaint, reqCreateEvent} {
		m.writes.WithLabelValues(r)
	}
	return m
}

// Collector returns the sink's self-metrics.
func (s *Sink) Collector() prometheus.Collector { return s.metrics }

// Describe implements prometheus.Collector.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	m.errors.Describe(ch)
	m.writes.Describe(ch)
	m.lastSuccess.Describe(ch)
	ch <- m.dropped
}

// Collect implements prometheus.Collector.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	m.errors.Collect(ch)
	m.writes.Collect(ch)
	m.lastSuccess.Collect(ch)
	ch <- prometheus.MustNewConstMetric(m.dropped, prometheus.CounterValue, float64(m.eventsDropped.Load()))
}
