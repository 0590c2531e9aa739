package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/nic-exporter/nic_exporter/demo"
)

// metricNameRE finds metric names in PromQL: nic_ names not part of a
// longer name or of a recording rule's level:metric:operations name.
var metricNameRE = regexp.MustCompile(`(^|[^a-zA-Z0-9_:])(nic_[a-zA-Z0-9_]*[a-zA-Z0-9])($|[^a-zA-Z0-9_:])`)

// queriedNames returns the metric names the shipped alerts, recording
// rules and dashboard queries use, each with the file that uses it.
func queriedNames(t *testing.T) map[string]string {
	t.Helper()
	root := filepath.Join("..", "..")
	var texts []struct{ file, text string }
	for _, f := range []string{"deploy/prometheus/alerts.yml", "deploy/prometheus/rules.yml"} {
		raw, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, struct{ file, text string }{f, string(raw)})
	}
	boards, err := filepath.Glob(filepath.Join(root, "dashboards", "*.json"))
	if err != nil || len(boards) == 0 {
		t.Fatalf("no dashboards: %v", err)
	}
	for _, f := range boards {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc any
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		// Only queries: panel targets (expr) and template variables
		// (query, definition), not titles or descriptions.
		var walk func(v any)
		walk = func(v any) {
			switch v := v.(type) {
			case map[string]any:
				for k, x := range v {
					if s, ok := x.(string); ok && (k == "expr" || k == "query" || k == "definition") {
						texts = append(texts, struct{ file, text string }{f, s})
					}
					walk(x)
				}
			case []any:
				for _, x := range v {
					walk(x)
				}
			}
		}
		walk(doc)
	}
	names := map[string]string{}
	for _, tx := range texts {
		for _, line := range strings.Split(tx.text, "\n") {
			for _, m := range metricNameRE.FindAllStringSubmatch(line, -1) {
				// job="nic_exporter" is a label value, not a metric.
				if m[2] != "nic_exporter" {
					names[m[2]] = tx.file
				}
			}
		}
	}
	if len(names) < 20 {
		t.Fatalf("found only %d metric names in the rules and dashboards: %v", len(names), names)
	}
	return names
}

// allFaults schedules every fault of the demo host from minute 1 on.
func allFaults() string {
	var s []string
	for _, f := range demo.Faults() {
		s = append(s, f+"@1m")
	}
	return strings.Join(s, ",")
}

// familiesOf parses a text-format scrape.
func familiesOf(t *testing.T, scrape string) map[string]int {
	t.Helper()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(scrape))
	if err != nil {
		t.Fatalf("scrape does not parse: %v", err)
	}
	out := make(map[string]int, len(fams))
	for n, f := range fams {
		out[n] = len(f.GetMetric())
	}
	return out
}

// notOnDemoHost are metrics the shipped rules and dashboards query that
// the demo host cannot produce, with the reason. The test still checks
// that none of them is a detail metric.
var notOnDemoHost = map[string]string{
	"nic_devlink_health_events_total":                "counts devlink multicast notifications; a demo with a frozen clock sends none",
	"nic_ethtool_queue_tx_missing_tx_comp_total":     "an ENA driver statistic of other driver versions (the alert's or clause); the demo ENA has missed_tx",
	"nic_infiniband_hw_retry_exceeded_err_total":     "the hw counter's name in older kernels (the alert's or clause)",
	"nic_infiniband_hw_retry_rnr_exceeded_err_total": "the hw counter's name in older kernels (the alert's or clause)",
	"nic_ethtool_in_discards_total":                  "the mlx5 port counter's name before Linux 4.8 (the alert's or clause); the demo ConnectX-7 has rx_discards_phy",
	"nic_ethtool_out_discards_total":                 "the mlx5 port counter's name before Linux 4.8 (the alert's or clause); the demo ConnectX-7 has tx_discards_phy",
	"nic_ethtool_check_seq_err_total":                "the mlx5 port counter's name before Linux 4.8 (the alert's or clause); the demo ConnectX-7 has rx_crc_errors_phy",
	"nic_ethtool_crc_align_errors_total":             "the mlx5 port counter's name before Linux 4.8 (the alert's or clause); the demo ConnectX-7 has rx_crc_errors_phy",
	"nic_ethtool_symbol_err_total":                   "the mlx5 port counter's name before Linux 4.8 (the alert's or clause); the demo ConnectX-7 has rx_symbol_err_phy",
}

// TestDefaultScrapeServesEveryQueriedMetric runs the demo with every fault
// scheduled, its clock frozen at a few points, and once without faults,
// and checks the split of the default and detail profiles: every metric
// the shipped alerts, recording rules and dashboards query is in the
// default scrape (of some run: a link that is down has no speed) and never
// in /metrics/detail, the default scrape has no queue label, and
// /metrics/detail has the per-queue and per-socket series and nothing the
// default scrape has.
func TestDefaultScrapeServesEveryQueriedMetric(t *testing.T) {
	names := queriedNames(t)
	seen := map[string]bool{}
	runs := []struct{ name, elapsed, faults string }{
		{"all faults at 90s", "90s", allFaults()},
		{"all faults at 10m", "10m", allFaults()},
		{"all faults at 2h", "2h", allFaults()},
		{"no faults at 10m", "10m", ""},
	}
	for _, run := range runs {
		t.Run(run.name, func(t *testing.T) {
			// The opt-in fabric collector is on: the dashboards query its
			// series, which the demo serves with it.
			args := []string{"--demo", "--demo.elapsed=" + run.elapsed, "--collector.devlink.capture-dir=" + t.TempDir(), "--collector.fabric"}
			if run.faults != "" {
				args = append(args, "--demo.faults="+run.faults)
			}
			e := start(t, args...)
			def, _ := e.get(t, "/metrics", nil)
			detail, _ := e.get(t, "/metrics/detail", nil)
			defFams, detailFams := familiesOf(t, def), familiesOf(t, detail)
			for n := range defFams {
				seen[n] = true
			}
			for n, file := range names {
				if detailFams[n] > 0 {
					t.Errorf("%s, queried in %s, is a detail metric", n, file)
				}
			}
			if strings.Contains(def, `queue="`) {
				t.Errorf("the default scrape has a queue label")
			}
			for _, fam := range []string{"nic_ethtool_per_queue_rx_packets_total", "nic_vma_fd_info", "nic_vma_fd_packets_total"} {
				if detailFams[fam] == 0 {
					t.Errorf("/metrics/detail lacks %s", fam)
				}
			}
			if !strings.Contains(detail, `queue="`) {
				t.Errorf("/metrics/detail has no queue label")
			}
			for n := range detailFams {
				if defFams[n] > 0 {
					t.Errorf("%s is in both /metrics and /metrics/detail", n)
				}
			}
			defSeries, detailSeries := 0, 0
			for _, n := range defFams {
				defSeries += n
			}
			for _, n := range detailFams {
				detailSeries += n
			}
			t.Logf("default scrape: %d series in %d families; detail: %d series in %d families", defSeries, len(defFams), detailSeries, len(detailFams))
		})
	}
	var missing []string
	for n, file := range names {
		if _, ok := notOnDemoHost[n]; !ok && !seen[n] {
			missing = append(missing, n+" (queried in "+file+")")
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("no default scrape of the demo has these metrics the shipped rules or dashboards query:\n%s", strings.Join(missing, "\n"))
	}
	for n := range notOnDemoHost {
		if _, ok := names[n]; !ok {
			t.Errorf("notOnDemoHost lists %s, which no rule or dashboard queries any more", n)
		}
	}
}

// TestSeriesBudgetExceeded runs the demo with a budget below its default
// scrape: the exporter says so in its metrics and in one log line that
// names the top contributors.
func TestSeriesBudgetExceeded(t *testing.T) {
	tests := []struct {
		budget       string
		wantExceeded string
		wantLog      bool
	}{
		{"100", "nic_exporter_series_budget_exceeded 1", true},
		{"0", "nic_exporter_series_budget_exceeded 0", false},
		{"100000", "nic_exporter_series_budget_exceeded 0", false},
	}
	for _, tt := range tests {
		t.Run(tt.budget, func(t *testing.T) {
			e := start(t, "--demo", "--demo.elapsed=10m", "--web.series-budget="+tt.budget)
			scrape, _ := e.get(t, "/metrics", nil)
			if !strings.Contains(scrape, tt.wantExceeded+"\n") {
				t.Errorf("scrape lacks %q", tt.wantExceeded)
			}
			// The detail profile's count is what a /metrics/detail scrape
			// serves, not a number that every new series would change.
			detail, _ := e.get(t, "/metrics/detail", nil)
			want := fmt.Sprintf(`nic_exporter_series{profile="detail"} %d`, sampleLines(detail))
			if !strings.Contains(scrape, want+"\n") {
				t.Errorf("scrape lacks %q, the number of samples /metrics/detail serves", want)
			}
			e.get(t, "/metrics", nil) // a second scrape must not log again
			logs := e.stderr.String()
			n := strings.Count(logs, "exceeds the series budget")
			if tt.wantLog && (n != 1 || !strings.Contains(logs, "top_collectors=") || !strings.Contains(logs, "ethtool=") || !strings.Contains(logs, "top_families=")) {
				t.Errorf("want one warning naming the top collectors and families, got %d:\n%s", n, logs)
			}
			if !tt.wantLog && n != 0 {
				t.Errorf("unexpected warning:\n%s", logs)
			}
		})
	}
}

// sampleLines counts the samples of a text exposition: its lines that are
// neither empty nor comments.
func sampleLines(text string) int {
	n := 0
	for _, l := range strings.Split(text, "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			n++
		}
	}
	return n
}
