package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCountSeries(t *testing.T) {
	body := "# HELP a_total A.\n# TYPE a_total counter\na_total{x=\"1\"} 1\na_total{x=\"2\"} 2\n\n# HELP b B.\n# TYPE b gauge\nb 3\n"
	series, families := countSeries([]byte(body))
	if series != 3 || families != 2 {
		t.Errorf("countSeries = %d series, %d families; want 3, 2", series, families)
	}
}

func TestFillQuantiles(t *testing.T) {
	var lat []float64
	for i := 100; i >= 1; i-- {
		lat = append(lat, float64(i))
	}
	var r Result
	fill(&r, lat)
	if r.P50 != 50 || r.P90 != 90 || r.P99 != 99 || r.Max != 100 {
		t.Errorf("quantiles of 1..100: p50 %v p90 %v p99 %v max %v", r.P50, r.P90, r.P99, r.Max)
	}
	var one Result
	fill(&one, []float64{7})
	if one.P50 != 7 || one.P99 != 7 {
		t.Errorf("quantiles of one sample: %+v", one)
	}
}

func TestProcessAccounting(t *testing.T) {
	pid := os.Getpid()
	// Burn a little CPU so the counter is likely above zero.
	x := 0
	for i := 0; i < 50_000_000; i++ {
		x += i
	}
	_ = x
	cpu, err := cpuSeconds(pid)
	if err != nil {
		t.Fatal(err)
	}
	if cpu < 0 {
		t.Errorf("cpu = %v", cpu)
	}
	rss, peak, err := memory(pid)
	if err != nil {
		t.Fatal(err)
	}
	if rss <= 0 || peak < rss {
		t.Errorf("rss %d, peak %d", rss, peak)
	}
}

// TestMeasureAndReport runs the measurements against a local server and
// turns them into a report, as bench/compare.sh does.
func TestMeasureAndReport(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "# HELP x X.\n# TYPE x gauge\nx{a=\"1\"} 1\nx{a=\"2\"} 2\n")
	}))
	defer srv.Close()
	dir := t.TempDir()
	out := filepath.Join(dir, "r.jsonl")
	pid := fmt.Sprint(os.Getpid())
	for _, exporter := range []string{"nic_exporter", "node_exporter"} {
		for _, args := range [][]string{
			{"series", "-url", srv.URL},
			{"idle", "-pid", pid, "-duration", "10ms"},
			{"steady", "-url", srv.URL, "-pid", pid, "-rate", "1000", "-n", "5"},
			{"steady", "-url", srv.URL, "-pid", pid, "-rate", "1000", "-n", "5", "-gzip"},
			{"concurrent", "-url", srv.URL, "-pid", pid, "-c", "4", "-duration", "50ms", "-gzip"},
			{"burst", "-url", srv.URL, "-pid", pid, "-c", "3", "-rate", "100", "-duration", "50ms", "-gzip"},
		} {
			args = append(args, "-exporter", exporter, "-size", "large", "-out", out)
			if err := measure(args[0], args[1:]); err != nil {
				t.Fatalf("%v: %v", args, err)
			}
		}
	}
	rs, sizes, err := readResults(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(sizes) != 1 || len(rs) != 12 {
		t.Fatalf("%d sizes, %d results; want 1, 12", len(sizes), len(rs))
	}
	r, ok := rs.get("nic_exporter", "large", "steady", true)
	if !ok || r.Scrapes != 5 || r.Errors != 0 || r.P50 <= 0 {
		b, _ := json.Marshal(r)
		t.Errorf("steady gzip result: %s", b)
	}
	// 3 scrapers at 100/s for 50 ms start about 5 scrapes each.
	if r, _ := rs.get("nic_exporter", "large", "burst", true); r.Scrapes < 6 || r.Scrapes > 30 || r.Concurrency != 3 {
		t.Errorf("burst result: %+v", r)
	}
	if s, _ := rs.get("node_exporter", "large", "series", false); s.Series != 2 || s.Families != 1 {
		t.Errorf("series result: %+v", s)
	}
	md, dat := filepath.Join(dir, "r.md"), filepath.Join(dir, "r.dat")
	if err := report([]string{"-in", out, "-md", md, "-dat", dat, "-header", "HEADER"}); err != nil {
		t.Fatal(err)
	}
	text, _ := os.ReadFile(md)
	for _, want := range []string{"HEADER", "| series | 2 | 2 |", "50 concurrent", "4 closed-loop scrapers, gzip: p99 latency", "3 scrapers at 100/s each, starting together, gzip: p99 latency", "RSS at the end"} {
		if want == "50 concurrent" {
			continue // the test used 4 scrapers
		}
		if !strings.Contains(string(text), want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
	data, _ := os.ReadFile(dat)
	if lines := strings.Split(strings.TrimSpace(string(data)), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[1], "large 2 ") {
		t.Errorf("plot data:\n%s", data)
	}
}

func TestScrapeRejectsErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "busy", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	if _, _, err := scrape(srv.Client(), srv.URL, false); err == nil {
		t.Error("HTTP 503 was not an error")
	}
	if _, _, err := scrapeBody(srv.Client(), srv.URL, false); err == nil {
		t.Error("HTTP 503 was not an error for scrapeBody")
	}
}
