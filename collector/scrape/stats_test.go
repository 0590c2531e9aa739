package scrape

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// detailSnapshotOf returns a snapshot of one default series and n detail
// series.
func detailSnapshotOf(n int) *exposition.Snapshot {
	perQueue := exposition.MustNewDesc("nic_t_per_queue_packets_total", "Per queue.", exposition.Counter, "device", "queue").AsDetail()
	b := exposition.NewBuilder()
	b.Add(benchGauge, 1, "eth0")
	for i := range n {
		b.Add(perQueue, float64(i)*1234567, fmt.Sprintf("eth%d", i/1000), fmt.Sprint(i%1000))
	}
	return b.Snapshot()
}

// selfSample is one sample of a scrape's self-metrics: the value of a
// gauge or counter, or the count and sum of a histogram.
type selfSample struct {
	value, count, sum float64
	found             bool
}

// selfMetric finds the series of family name whose labels include want
// in the text answer of a /metrics scrape.
func selfMetric(t *testing.T, body, name string, want map[string]string) selfSample {
	t.Helper()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parsing the scrape: %v\n%s", err, body)
	}
	fam := fams[name]
	if fam == nil {
		return selfSample{}
	}
next:
	for _, m := range fam.GetMetric() {
		have := map[string]string{}
		for _, lp := range m.GetLabel() {
			have[lp.GetName()] = lp.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch fam.GetType() {
		case dto.MetricType_GAUGE:
			return selfSample{value: m.GetGauge().GetValue(), found: true}
		case dto.MetricType_COUNTER:
			return selfSample{value: m.GetCounter().GetValue(), found: true}
		case dto.MetricType_HISTOGRAM:
			h := m.GetHistogram()
			return selfSample{count: float64(h.GetSampleCount()), sum: h.GetSampleSum(), found: true}
		}
	}
	return selfSample{}
}

// TestDetailScrapesInSelfMetrics serves /metrics and /metrics/detail
// over loopback as the exporter does: two handlers sharing one Stats,
// the default one's registry holding it. A detail scrape by a client
// that never reads holds the detail slot; the next detail scrape is
// rejected; the stalled one fails at the write timeout. Each step must
// show in the self-metrics of /metrics under profile="detail", and never
// under profile="default".
func TestDetailScrapesInSelfMetrics(t *testing.T) {
	// The stalled scrape is in flight for writeTimeout, and the checks of
	// the stalled state must run within it: a few requests on an idle
	// machine, so 2 s leave a wide margin on a busy one.
	const writeTimeout = 2 * time.Second
	// About 1.5 MB of detail series: far more than the socket buffers of
	// a client that does not read.
	sources := []Source{fixed{detailSnapshotOf(20_000)}}
	reg := prometheus.NewPedanticRegistry()
	metrics := NewHandler(sources, Config{MaxConcurrent: 1, WriteTimeout: writeTimeout, Gatherer: reg}, zap.NewNop())
	reg.MustRegister(metrics)
	detail := NewHandler(sources, Config{MaxConcurrent: 1, WriteTimeout: writeTimeout, Detail: true, Stats: metrics.Stats()}, zap.NewNop())
	mux := http.NewServeMux()
	mux.Handle("/metrics", metrics)
	mux.Handle("/metrics/detail", detail)
	srv := newSmallBufferServer(mux)
	t.Cleanup(srv.Close) // after the client's cleanup, which runs first
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := client.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		return resp.StatusCode, string(body)
	}
	self := func() string {
		t.Helper()
		code, body := get("/metrics")
		if code != 200 {
			t.Fatalf("GET /metrics: status %d", code)
		}
		return body
	}
	type check struct {
		name   string
		labels map[string]string
		want   float64
	}
	expect := func(step, body string, checks []check) {
		t.Helper()
		for _, c := range checks {
			s := selfMetric(t, body, c.name, c.labels)
			if !s.found {
				t.Errorf("%s: no %s%v", step, c.name, c.labels)
			} else if s.value != c.want {
				t.Errorf("%s: %s%v = %v, want %v", step, c.name, c.labels, s.value, c.want)
			}
		}
	}
	inflight := func(profile string) map[string]string { return map[string]string{"profile": profile} }
	failed := func(profile, reason string) map[string]string {
		return map[string]string{"profile": profile, "reason": reason}
	}

	// Before any detail scrape: every series is there, at zero (the
	// default profile counts the scrape that reads it).
	expect("start", self(), []check{
		{"nic_exporter_scrapes_in_flight", inflight("default"), 1},
		{"nic_exporter_scrapes_in_flight", inflight("detail"), 0},
		{"nic_exporter_scrapes_failed_total", failed("detail", ReasonRejected), 0},
		{"nic_exporter_scrapes_failed_total", failed("detail", ReasonWriteTimeout), 0},
		{"nic_exporter_scrapes_failed_total", failed("detail", ReasonWriteError), 0},
	})

	stalledClientOf(t, strings.TrimPrefix(srv.URL, "http://"), "/metrics/detail")
	deadline := time.Now().Add(testenv.HangGuard)
	for detail.inflight.Load() < 1 {
		if time.Now().After(deadline) {
			t.Fatal("the stalled detail scrape is not in flight")
		}
		time.Sleep(time.Millisecond)
	}
	// The stalled scrape is in flight until the write timeout, but holds
	// no slot: its answer was prepared before it stalled. The checks
	// below run well within the timeout.
	expect("stalled", self(), []check{
		{"nic_exporter_scrapes_in_flight", inflight("detail"), 1},
		{"nic_exporter_scrapes_in_flight", inflight("default"), 1},
		{"nic_exporter_scrapes_failed_total", failed("detail", ReasonRejected), 0},
		{"nic_exporter_scrapes_failed_total", failed("default", ReasonRejected), 0},
	})

	deadline = time.Now().Add(testenv.HangGuard)
	for detail.Failed(ReasonWriteTimeout)+detail.Failed(ReasonWriteError) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the stalled detail scrape did not fail")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// A reading client gets the whole detail scrape. The short write
	// timeout this test needs can also cut a reading client's scrape
	// when the machine is busy (1.5 MB through small buffers under the
	// race detector): such a try is counted below as what the handler
	// counts it, a write timeout or error (the client sees EOF), or a
	// rejection (none expected: a scrape holds its slot only while its
	// answer is prepared).
	var cut, rejected int
	for try := 0; ; try++ {
		if try == 20 {
			t.Fatalf("no whole detail scrape after the stall in %d tries (%d cut, %d rejected)", try, cut, rejected)
		}
		resp, err := client.Get(srv.URL + "/metrics/detail")
		if err != nil {
			cut++
			continue
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable {
			rejected++
			continue
		}
		if err != nil {
			cut++
			continue
		}
		if resp.StatusCode != 200 || !strings.Contains(string(body), "nic_t_per_queue_packets_total{") {
			t.Fatalf("detail scrape after the stall: status %d, %d bytes", resp.StatusCode, len(body))
		}
		break
	}
	// The cut scrapes' handlers may still be counting their failures.
	deadline = time.Now().Add(testenv.HangGuard)
	for detail.Failed(ReasonWriteTimeout)+detail.Failed(ReasonWriteError) < uint64(1+cut) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	after := self()
	expect("after", after, []check{
		{"nic_exporter_scrapes_in_flight", inflight("detail"), 0},
		{"nic_exporter_scrapes_failed_total", failed("detail", ReasonRejected), float64(rejected)},
		{"nic_exporter_scrapes_failed_total", failed("default", ReasonWriteTimeout), 0},
	})
	if n := detail.Failed(ReasonWriteTimeout) + detail.Failed(ReasonWriteError); n != uint64(1+cut) {
		t.Errorf("detail write timeouts and errors: %d, want %d (the stalled scrape and %d cut tries)", n, 1+cut, cut)
	}
	// The admitted detail scrapes (the stalled one, the cut tries and the
	// whole one), at least one write timeout long together; a rejected
	// one is not a duration. The default profile has the two earlier
	// /metrics scrapes.
	d := selfMetric(t, after, "nic_exporter_scrape_duration_seconds", inflight("detail"))
	if want := float64(2 + cut); d.count != want || d.sum < writeTimeout.Seconds() {
		t.Errorf("detail scrape durations: count %v, sum %v; want %v and at least %v", d.count, d.sum, want, writeTimeout.Seconds())
	}
	if d := selfMetric(t, after, "nic_exporter_scrape_duration_seconds", inflight("default")); d.count != 2 {
		t.Errorf("default scrape durations: count %v, want 2 (the scrapes before this one)", d.count)
	}
}

// TestStatsProfiles checks the label profile of handlers with and
// without Detail, alone and sharing a Stats: a handler's Stats reports
// both profiles, and counts each handler's scrapes under its own.
func TestStatsProfiles(t *testing.T) {
	tests := []struct {
		name         string
		shared       bool
		wantDefault  float64 // durations of the default profile
		wantDetail   float64
		registerFrom string // which handler's Stats is registered
	}{
		{"separate/default", false, 2, 0, "default"},
		{"separate/detail", false, 0, 3, "detail"},
		{"shared/default", true, 2, 3, "default"},
		{"shared/detail", true, 2, 3, "detail"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := []Source{fixed{detailSnapshotOf(3)}}
			def := NewHandler(src, Config{}, zap.NewNop())
			cfg := Config{Detail: true}
			if tt.shared {
				cfg.Stats = def.Stats()
			}
			det := NewHandler(src, cfg, zap.NewNop())
			for range 2 {
				def.ServeHTTP(discardWriter{}, &http.Request{Header: http.Header{}})
			}
			for range 3 {
				det.ServeHTTP(discardWriter{}, &http.Request{Header: http.Header{}})
			}
			reg := prometheus.NewPedanticRegistry()
			if tt.registerFrom == "default" {
				reg.MustRegister(def)
			} else {
				reg.MustRegister(det)
			}
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			var sb strings.Builder
			for _, mf := range mfs {
				if _, err := expfmt.MetricFamilyToText(&sb, mf); err != nil {
					t.Fatal(err)
				}
			}
			for profile, want := range map[string]float64{"default": tt.wantDefault, "detail": tt.wantDetail} {
				d := selfMetric(t, sb.String(), "nic_exporter_scrape_duration_seconds", map[string]string{"profile": profile})
				if !d.found || d.count != want {
					t.Errorf("profile %s: %v durations (found %v), want %v", profile, d.count, d.found, want)
				}
				for _, r := range reasons {
					f := selfMetric(t, sb.String(), "nic_exporter_scrapes_failed_total", map[string]string{"profile": profile, "reason": r})
					if !f.found || f.value != 0 {
						t.Errorf("profile %s reason %s: failed %v (found %v), want 0", profile, r, f.value, f.found)
					}
				}
			}
		})
	}
}

// discardWriter is an http.ResponseWriter that discards the answer.
type discardWriter struct{}

func (discardWriter) Header() http.Header         { return http.Header{} }
func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (discardWriter) WriteHeader(int)             {}
