package collector

import (
	"github.com/prometheus/client_golang/prometheus"
)

// SelfMetrics exports the state of every Runner as the
// nic_exporter_collector_* metrics. It implements prometheus.Collector and
// reads the runners' atomics only.
type SelfMetrics struct {
	runners []*Runner

	up, absent, duration, lastSuccess, errors, series, devices, invalid, events, sourceErrors, stuck, skipped *prometheus.Desc
}

// NewSelfMetrics returns the self-metrics of runners.
func NewSelfMetrics(runners []*Runner) *SelfMetrics {
	l := []string{"collector"}
	return &SelfMetrics{
		runners:      runners,
		up:           prometheus.NewDesc("nic_exporter_collector_up", "1 if the collector's last poll succeeded (a source absent from this host counts as success), 0 if it failed or timed out.", l, nil),
		absent:       prometheus.NewDesc("nic_exporter_collector_source_absent", "1 if the collector's source does not exist on this host, so it has nothing to collect.", l, nil),
		duration:     prometheus.NewDesc("nic_exporter_collector_poll_duration_seconds", "Duration of the collector's last poll.", l, nil),
		lastSuccess:  prometheus.NewDesc("nic_exporter_collector_last_success_timestamp_seconds", "Unix time of the collector's last successful poll.", l, nil),
		errors:       prometheus.NewDesc("nic_exporter_collector_errors_total", "Polls of the collector that failed or timed out.", l, nil),
		series:       prometheus.NewDesc("nic_exporter_collector_series", "Series in the collector's published snapshot.", l, nil),
		devices:      prometheus.NewDesc("nic_exporter_collector_devices", "Devices or files the collector found in its last published snapshot, after filters.", l, nil),
		invalid:      prometheus.NewDesc("nic_exporter_collector_invalid_samples_total", "Samples the collector produced that were malformed and skipped.", l, nil),
		events:       prometheus.NewDesc("nic_exporter_collector_event_publications_total", "Snapshots the collector published between polls because of events.", l, nil),
		sourceErrors: prometheus.NewDesc("nic_exporter_collector_source_errors_total", "Reads of single files or objects that failed and dropped only the affected series, by reason.", []string{"collector", "reason"}, nil),
		stuck:        prometheus.NewDesc("nic_exporter_collector_stuck_polls", "Polls of the collector abandoned at their timeout that have not returned yet: a source blocks (a FIFO, a hung driver call). Each holds a goroutine; /readyz fails while any is stuck.", l, nil),
		skipped:      prometheus.NewDesc("nic_exporter_collector_skipped_polls_total", "Polls of the collector not started because the maximum number of stuck polls had not returned.", l, nil),
	}
}

// Describe implements prometheus.Collector.
func (m *SelfMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.up, m.absent, m.duration, m.lastSuccess, m.errors, m.series, m.devices, m.invalid, m.events, m.sourceErrors, m.stuck, m.skipped} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (m *SelfMetrics) Collect(ch chan<- prometheus.Metric) {
	for _, r := range m.runners {
		st := r.Status()
		n := st.Name
		ch <- prometheus.MustNewConstMetric(m.up, prometheus.GaugeValue, Bool(st.Up), n)
		ch <- prometheus.MustNewConstMetric(m.absent, prometheus.GaugeValue, Bool(st.Absent), n)
		ch <- prometheus.MustNewConstMetric(m.duration, prometheus.GaugeValue, st.LastDuration.Seconds(), n)
		var ts float64
		if !st.LastSuccess.IsZero() {
			ts = float64(st.LastSuccess.UnixNano()) / 1e9
		}
		ch <- prometheus.MustNewConstMetric(m.lastSuccess, prometheus.GaugeValue, ts, n)
		ch <- prometheus.MustNewConstMetric(m.errors, prometheus.CounterValue, float64(st.Failures), n)
		ch <- prometheus.MustNewConstMetric(m.series, prometheus.GaugeValue, float64(st.Series), n)
		ch <- prometheus.MustNewConstMetric(m.devices, prometheus.GaugeValue, float64(st.Devices), n)
		ch <- prometheus.MustNewConstMetric(m.invalid, prometheus.CounterValue, float64(st.InvalidSamples), n)
		ch <- prometheus.MustNewConstMetric(m.events, prometheus.CounterValue, float64(st.Events), n)
		ch <- prometheus.MustNewConstMetric(m.stuck, prometheus.GaugeValue, float64(st.Stuck), n)
		ch <- prometheus.MustNewConstMetric(m.skipped, prometheus.CounterValue, float64(st.SkippedPolls), n)
		for _, rc := range st.SourceErrors {
			ch <- prometheus.MustNewConstMetric(m.sourceErrors, prometheus.CounterValue, float64(rc.Count), n, rc.Reason)
		}
	}
}

// Bool returns 1 for true and 0 for false, the value of a boolean gauge.
func Bool(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
