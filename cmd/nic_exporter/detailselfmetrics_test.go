package main

import "testing"

// TestDetailScrapesCounted scrapes /metrics/detail of the built binary
// twice, then /metrics: the detail scrapes are counted in the scrape
// self-metrics under profile="detail", apart from the /metrics ones.
func TestDetailScrapesCounted(t *testing.T) {
	e := start(t, demoArgs...)
	before, _ := e.get(t, "/metrics", nil)
	defaults := sampleValue(before, `nic_exporter_scrape_duration_seconds_count{profile="default"}`)
	if got := sampleValue(before, `nic_exporter_scrape_duration_seconds_count{profile="detail"}`); got != 0 {
		t.Fatalf("detail scrapes before any: %v, want 0", got)
	}
	for range 2 {
		e.get(t, "/metrics/detail", nil)
	}
	after, _ := e.get(t, "/metrics", nil)
	for _, tt := range []struct {
		series string
		want   float64
	}{
		{`nic_exporter_scrape_duration_seconds_count{profile="detail"}`, 2},
		{`nic_exporter_scrape_duration_seconds_count{profile="default"}`, defaults + 1},
		{`nic_exporter_scrapes_in_flight{profile="detail"}`, 0},
		{`nic_exporter_scrapes_in_flight{profile="default"}`, 1},
		{`nic_exporter_scrapes_failed_total{profile="detail",reason="rejected"}`, 0},
	} {
		if got := sampleValue(after, tt.series); got != tt.want {
			t.Errorf("%s = %v, want %v", tt.series, got, tt.want)
		}
	}
}
