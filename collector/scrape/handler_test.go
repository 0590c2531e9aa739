package scrape

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/nic-exporter/nic_exporter/collector/exposition"
)

type fixed struct{ s *exposition.Snapshot }

func (f fixed) Snapshot() *exposition.Snapshot { return f.s }

var (
	benchCounter = exposition.MustNewDesc("nic_bench_packets_total", "Packets.", exposition.Counter, "device", "queue")
	benchGauge   = exposition.MustNewDesc("nic_bench_state", "State.", exposition.Gauge, "device")
)

// snapshotOf returns a snapshot of n series spread over devices and queues.
func snapshotOf(n int) *exposition.Snapshot {
	b := exposition.NewBuilder()
	for i := 0; i < n; i++ {
		b.Add(benchCounter, float64(i)*1234567, fmt.Sprintf("mlx5_%d", i/1000), fmt.Sprint(i%1000))
	}
	b.Add(benchGauge, 1, "mlx5_0")
	return b.Snapshot()
}

func newTestHandler(n int, g prometheus.Gatherer) *Handler {
	return NewHandler([]Source{fixed{snapshotOf(n)}}, Config{MaxConcurrent: 4, Gatherer: g}, zap.NewNop())
}

func selfRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "nic_exporter_test_total", Help: "Test."})
	c.Add(5)
	reg.MustRegister(c)
	return reg
}

func TestHandlerNegotiation(t *testing.T) {
	h := newTestHandler(3, selfRegistry())
	tests := []struct {
		name, accept, encoding string
		wantType               string
		wantGzip               bool
		wantLast               string
	}{
		{"default text", "", "", contentTypeText, false, "nic_exporter_test_total 5"},
		{"prometheus 2 accept header", "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1", "gzip", contentTypeOM, true, "# EOF"},
		{"openmetrics without a version is 0.0.1", "application/openmetrics-text", "", contentTypeOM001, false, "# EOF"},
		{"text with gzip", "text/plain;version=0.0.4", "gzip, deflate", contentTypeText, true, "nic_exporter_test_total 5"},
		{"gzip refused", "", "gzip;q=0", contentTypeText, false, "nic_exporter_test_total 5"},
		{"gzip refused with a decimal zero", "", "gzip; q=0.0", contentTypeText, false, "nic_exporter_test_total 5"},
		{"gzip refused with three decimals", "", "br, gzip;q=0.000", contentTypeText, false, "nic_exporter_test_total 5"},
		{"gzip with a low weight", "", "gzip;q=0.001", contentTypeText, true, "nic_exporter_test_total 5"},
		{"gzip in capitals", "", "GZIP", contentTypeText, true, "nic_exporter_test_total 5"},
		{"gzip in mixed case with a weight", "", "deflate, Gzip; Q=0.5", contentTypeText, true, "nic_exporter_test_total 5"},
		{"gzip in capitals refused", "", "GZip;q=0", contentTypeText, false, "nic_exporter_test_total 5"},
		{"protobuf falls back to text", "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited", "", contentTypeText, false, "nic_exporter_test_total 5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", "/metrics", nil)
			if tt.accept != "" {
				req.Header.Set("Accept", tt.accept)
			}
			if tt.encoding != "" {
				req.Header.Set("Accept-Encoding", tt.encoding)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != 200 {
				t.Fatalf("status %d", rec.Code)
			}
			if got := rec.Header().Get("Content-Type"); got != tt.wantType {
				t.Errorf("Content-Type = %q, want %q", got, tt.wantType)
			}
			// Caches must key on Accept-Encoding whatever this answer was.
			if got := rec.Header().Values("Vary"); len(got) != 1 || got[0] != "Accept-Encoding" {
				t.Errorf("Vary = %q, want Accept-Encoding once", got)
			}
			var body io.Reader = rec.Body
			if tt.wantGzip {
				if rec.Header().Get("Content-Encoding") != "gzip" {
					t.Fatalf("not gzip-encoded")
				}
				zr, err := gzip.NewReader(rec.Body)
				if err != nil {
					t.Fatal(err)
				}
				body = zr
			} else if rec.Header().Get("Content-Encoding") != "" {
				t.Fatalf("unexpected Content-Encoding %q", rec.Header().Get("Content-Encoding"))
			}
			raw, err := io.ReadAll(body)
			if err != nil {
				t.Fatal(err)
			}
			text := string(raw)
			lines := strings.Split(strings.TrimSpace(text), "\n")
			if last := lines[len(lines)-1]; last != tt.wantLast {
				t.Errorf("last line = %q, want %q", last, tt.wantLast)
			}
			if tt.wantType == contentTypeText {
				p := expfmt.NewTextParser(model.LegacyValidation)
				fams, err := p.TextToMetricFamilies(strings.NewReader(text))
				if err != nil {
					t.Fatalf("scrape does not parse: %v", err)
				}
				if got := len(fams["nic_bench_packets_total"].GetMetric()); got != 3 {
					t.Errorf("got %d bench series, want 3", got)
				}
			} else if !strings.Contains(text, "# TYPE nic_bench_packets counter\n") || !strings.Contains(text, "# TYPE nic_exporter_test counter\n") {
				t.Errorf("OpenMetrics counter metadata missing:\n%s", text)
			}
		})
	}
}

// blockingWriter blocks scrapes in Write until released.
type blockingSource struct {
	entered chan struct{}
	release chan struct{}
}

func (b blockingSource) Snapshot() *exposition.Snapshot {
	b.entered <- struct{}{}
	<-b.release
	return exposition.Empty
}

func TestHandlerBoundsConcurrentScrapes(t *testing.T) {
	src := blockingSource{entered: make(chan struct{}), release: make(chan struct{})}
	core, logs := observer.New(zap.InfoLevel)
	h := NewHandler([]Source{src}, Config{MaxConcurrent: 2}, zap.New(core))
	var wg sync.WaitGroup
	codes := make(chan int, 2)
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
			codes <- rec.Code
		}()
		<-src.entered
	}
	for i := range 3 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		if rec.Code != http.StatusServiceUnavailable {
			t.Errorf("scrape %d over the limit: status %d, want 503", i+1, rec.Code)
		}
		if got := rec.Header().Get("Vary"); got != "Accept-Encoding" {
			t.Errorf("503 answer: Vary = %q, want Accept-Encoding", got)
		}
	}
	if n := logs.FilterField(zap.String("reason", ReasonRejected)).Len(); n != 1 {
		t.Errorf("rejections logged %d times, want once (rate-limited)", n)
	}
	close(src.release)
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != 200 {
			t.Errorf("admitted scrape: status %d", c)
		}
	}
	if h.Rejected() != 3 {
		t.Errorf("rejected = %d, want 3", h.Rejected())
	}
}

func TestHealthz(t *testing.T) {
	rec := httptest.NewRecorder()
	Healthz(rec, httptest.NewRequest("GET", "/healthz", nil))
	if rec.Code != 200 || rec.Body.String() != "ok\n" {
		t.Errorf("healthz: %d %q", rec.Code, rec.Body.String())
	}
}

func TestReadyz(t *testing.T) {
	tests := []struct {
		name     string
		st       Readiness
		wantCode int
		wantBody string
	}{
		{"all polled", Readiness{}, 200, "ready\n"},
		{"waiting for first polls", Readiness{Waiting: []string{"devlink", "ethtool"}}, 503,
			"waiting for the first poll of: devlink, ethtool\n"},
		{"stuck", Readiness{Stuck: []string{"netdev"}}, 503,
			"stuck (a poll outlived its timeout and has not returned): netdev\n"},
		{"down is named but ready", Readiness{Down: []string{"kmsg"}}, 200,
			"ready\ndown (last poll failed): kmsg\n"},
		{"everything at once", Readiness{Waiting: []string{"vma"}, Stuck: []string{"netdev", "infiniband"}, Down: []string{"netdev", "kmsg"}}, 503,
			"waiting for the first poll of: vma\nstuck (a poll outlived its timeout and has not returned): netdev, infiniband\ndown (last poll failed): netdev, kmsg\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			Readyz(func() Readiness { return tt.st })(rec, httptest.NewRequest("GET", "/readyz", nil))
			if rec.Code != tt.wantCode || rec.Body.String() != tt.wantBody {
				t.Errorf("got %d %q, want %d %q", rec.Code, rec.Body.String(), tt.wantCode, tt.wantBody)
			}
		})
	}
}

// constCollector builds every series per scrape with MustNewConstMetric,
// the way node_exporter collects; it is the baseline of the benchmarks.
type constCollector struct {
	n       int
	counter *prometheus.Desc
	gauge   *prometheus.Desc
}

func (c *constCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.counter; ch <- c.gauge }

func (c *constCollector) Collect(ch chan<- prometheus.Metric) {
	for i := 0; i < c.n; i++ {
		ch <- prometheus.MustNewConstMetric(c.counter, prometheus.CounterValue, float64(i)*1234567, fmt.Sprintf("mlx5_%d", i/1000), fmt.Sprint(i%1000))
	}
	ch <- prometheus.MustNewConstMetric(c.gauge, prometheus.GaugeValue, 1, "mlx5_0")
}

func constHandler(n int) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(&constCollector{
		n:       n,
		counter: prometheus.NewDesc("nic_bench_packets_total", "Packets.", []string{"device", "queue"}, nil),
		gauge:   prometheus.NewDesc("nic_bench_state", "State.", []string{"device"}, nil),
	})
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{DisableCompression: true})
}

// gatherCacheHandler serves the series of constHandler the best way an
// exporter built on client_golang can: gathered once into client_golang's
// data model, and every scrape encodes the cached families
// (prometheus.GathererFunc through promhttp.HandlerFor), as an exporter
// that caches its last poll in that model would. It is the fair baseline
// for a snapshot cache: neither builds anything per scrape.
func gatherCacheHandler(b *testing.B, n int) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(&constCollector{
		n:       n,
		counter: prometheus.NewDesc("nic_bench_packets_total", "Packets.", []string{"device", "queue"}, nil),
		gauge:   prometheus.NewDesc("nic_bench_state", "State.", []string{"device"}, nil),
	})
	mfs, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	cached := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) { return mfs, nil })
	return promhttp.HandlerFor(cached, promhttp.HandlerOpts{DisableCompression: true})
}

// copyWriter is a minimal ResponseWriter that copies every byte into a
// reused buffer, as a real connection's buffer would, and counts them.
type copyWriter struct {
	h   http.Header
	n   int64
	buf []byte
}

func (d *copyWriter) Header() http.Header { return d.h }
func (d *copyWriter) Write(p []byte) (int, error) {
	d.n += int64(len(p))
	if len(d.buf)+len(p) > cap(d.buf) {
		d.buf = d.buf[:0]
	}
	if len(p) > cap(d.buf) {
		d.buf = make([]byte, 0, 2*len(p))
	}
	d.buf = append(d.buf, p...)
	return len(p), nil
}
func (d *copyWriter) WriteHeader(int) {}

func benchScrape(b *testing.B, h http.Handler, gz bool) {
	req := httptest.NewRequest("GET", "/metrics", nil)
	if gz {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	w := &copyWriter{h: http.Header{}, buf: make([]byte, 0, 16<<20)}
	b.ReportAllocs()
	for b.Loop() {
		w.buf = w.buf[:0]
		h.ServeHTTP(w, req)
	}
	b.SetBytes(w.n / int64(b.N))
}

func BenchmarkScrape(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("cached/series=%d", n), func(b *testing.B) { benchScrape(b, newTestHandler(n, nil), false) })
		b.Run(fmt.Sprintf("cached-gzip/series=%d", n), func(b *testing.B) { benchScrape(b, newTestHandler(n, nil), true) })
		b.Run(fmt.Sprintf("constmetrics/series=%d", n), func(b *testing.B) { benchScrape(b, constHandler(n), false) })
		b.Run(fmt.Sprintf("gathercache/series=%d", n), func(b *testing.B) { benchScrape(b, gatherCacheHandler(b, n), false) })
		b.Run(fmt.Sprintf("detail-gzip/series=%d", n), func(b *testing.B) { benchScrape(b, detailHandler(n), true) })
	}
}

// detailHandler serves the detail part of a snapshot of n per-queue
// detail series and one default series, as /metrics/detail does.
func detailHandler(n int) http.Handler {
	perQueue := benchCounter.AsDetail()
	b := exposition.NewBuilder()
	for i := 0; i < n; i++ {
		b.Add(perQueue, float64(i)*1234567, fmt.Sprintf("mlx5_%d", i/1000), fmt.Sprint(i%1000))
	}
	b.Add(benchGauge, 1, "mlx5_0")
	return NewHandler([]Source{fixed{b.Snapshot()}}, Config{MaxConcurrent: 4, Detail: true}, zap.NewNop())
}

// BenchmarkConcurrentScrapes serves a snapshot over real HTTP
// on loopback to 50 concurrent scrapers and reports the latency
// percentiles as custom metrics (p50-ms, p99-ms).
func BenchmarkConcurrentScrapes(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("series=%d", n), func(b *testing.B) { benchConcurrent(b, n, false) })
		b.Run(fmt.Sprintf("gzip/series=%d", n), func(b *testing.B) { benchConcurrent(b, n, true) })
	}
}

// benchConcurrent runs 50 scrapers. With gz, they ask for gzip as
// Prometheus does and discard the compressed body (the decompression
// happens on the Prometheus server, not on the exporter's host).
func benchConcurrent(b *testing.B, n int, gz bool) {
	h := NewHandler([]Source{fixed{snapshotOf(n)}}, Config{MaxConcurrent: 64, WriteTimeout: time.Minute}, zap.NewNop()) // as the binary
	srv := httptest.NewServer(h)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}
	var mu sync.Mutex
	var lat []time.Duration
	var failures int
	b.SetParallelism(25) // 25 × GOMAXPROCS(2) = 50 scrapers
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			start := time.Now()
			req, _ := http.NewRequest("GET", srv.URL, nil)
			if gz {
				req.Header.Set("Accept-Encoding", "gzip")
			}
			resp, err := client.Do(req)
			ok := err == nil && resp.StatusCode == 200
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			d := time.Since(start)
			mu.Lock()
			lat = append(lat, d)
			if !ok {
				failures++
			}
			mu.Unlock()
		}
	})
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	}
	b.ReportMetric(float64(failures), "failures")
}

// BenchmarkScrapeWithRuntimeMetrics scrapes 10,000 cached series plus the
// Go runtime and process metrics the exporter serves after them (the
// per-scrape tail), with gzip as Prometheus asks.
func BenchmarkScrapeWithRuntimeMetrics(b *testing.B) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, gz := range []bool{false, true} {
		b.Run(fmt.Sprintf("gzip=%v", gz), func(b *testing.B) { benchScrape(b, newTestHandler(10_000, reg), gz) })
	}
}

func TestGzipTailWithRuntimeMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Big enough that the uncompressed tail spans several stored blocks.
	big := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "nic_exporter_test_big", Help: "Test."}, []string{"i"})
	for i := 0; i < 5000; i++ {
		big.WithLabelValues(fmt.Sprint(i)).Set(float64(i))
	}
	reg.MustRegister(big)
	for _, g := range []prometheus.Gatherer{reg, prometheus.NewRegistry()} {
		h := newTestHandler(1000, g)
		req := httptest.NewRequest("GET", "/metrics", nil)
		req.Header.Set("Accept-Encoding", "gzip")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		zr, err := gzip.NewReader(rec.Body)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(zr) // checks the CRC and length
		if err != nil {
			t.Fatal(err)
		}
		p := expfmt.NewTextParser(model.LegacyValidation)
		mfs, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
		if err != nil {
			t.Fatalf("gzip body does not parse: %v", err)
		}
		if mfs["nic_bench_state"] == nil {
			t.Errorf("gzip body lacks the snapshot")
		}
		if g == reg && (mfs["go_goroutines"] == nil || !strings.Contains(string(body), "nic_exporter_test_big{i=\"4999\"} 4999\n")) {
			t.Errorf("gzip body lacks the tail")
		}
	}
}

// BenchmarkConcurrentScrapesWithRuntimeMetrics is
// BenchmarkScrapeWithRuntimeMetrics with 50 scrapes in flight at once.
func BenchmarkConcurrentScrapesWithRuntimeMetrics(b *testing.B) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	h := NewHandler([]Source{fixed{snapshotOf(10_000)}}, Config{Gatherer: reg}, zap.NewNop())
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	b.SetParallelism(50 / runtime.GOMAXPROCS(0))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		w := &copyWriter{h: http.Header{}, buf: make([]byte, 0, 1<<20)}
		for pb.Next() {
			w.buf = w.buf[:0]
			h.ServeHTTP(w, req)
		}
	})
}

// countingGatherer counts Gather calls; while gate is open, calls block
// until it is closed.
type countingGatherer struct {
	reg   *prometheus.Registry
	mu    sync.Mutex
	calls int
	gate  chan struct{}
}

func (g *countingGatherer) Gather() ([]*dto.MetricFamily, error) {
	g.mu.Lock()
	g.calls++
	gate := g.gate
	g.mu.Unlock()
	if gate != nil {
		<-gate
	}
	return g.reg.Gather()
}

func TestSelfMetricsSharedOnlyByOverlappingScrapes(t *testing.T) {
	g := &countingGatherer{reg: selfRegistry()}
	h := NewHandler([]Source{fixed{snapshotOf(10)}}, Config{Gatherer: g}, zap.NewNop())
	scrapeOnce := func(gz bool) string {
		req := httptest.NewRequest("GET", "/metrics", nil)
		if gz {
			req.Header.Set("Accept-Encoding", "gzip")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		body := rec.Body.String()
		if gz {
			zr, err := gzip.NewReader(strings.NewReader(body))
			if err != nil {
				t.Error(err)
				return ""
			}
			b, err := io.ReadAll(zr)
			if err != nil {
				t.Error(err)
			}
			body = string(b)
		}
		return body
	}
	// Sequential scrapes gather every time: nothing is cached.
	for i := 0; i < 3; i++ {
		scrapeOnce(i%2 == 0)
	}
	if g.calls != 3 {
		t.Fatalf("3 sequential scrapes gathered %d times", g.calls)
	}
	// Overlapping scrapes may share a gathering; each still gets the
	// whole response.
	g.mu.Lock()
	g.calls = 0
	g.gate = make(chan struct{})
	g.mu.Unlock()
	var wg sync.WaitGroup
	bodies := make([]string, 10)
	for i := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bodies[i] = scrapeOnce(i%2 == 0)
		}()
	}
	for h.inflight.Load() < int64(len(bodies)) {
		runtime.Gosched()
	}
	g.mu.Lock()
	close(g.gate)
	g.gate = nil
	g.mu.Unlock()
	wg.Wait()
	if g.calls < 1 || g.calls > len(bodies) {
		t.Errorf("%d overlapping scrapes gathered %d times", len(bodies), g.calls)
	}
	for i, b := range bodies {
		if !strings.Contains(b, "nic_bench_state{") || !strings.Contains(b, "nic_exporter_test_total 5\n") {
			t.Errorf("scrape %d is incomplete:\n%s", i, b)
		}
	}
}

func TestDetailHandlerServesOnlyDetailParts(t *testing.T) {
	sum := exposition.MustNewDesc("nic_t_packets_total", "Summed.", exposition.Counter, "device")
	perQueue := exposition.MustNewDesc("nic_t_per_queue_packets_total", "Per queue.", exposition.Counter, "device", "queue").AsDetail()
	b := exposition.NewBuilder()
	b.Add(sum, 3, "eth0")
	b.Add(perQueue, 1, "eth0", "0")
	b.Add(perQueue, 2, "eth0", "1")
	withDetail := b.Snapshot()
	b = exposition.NewBuilder()
	b.Add(benchGauge, 1, "eth1")
	withoutDetail := b.Snapshot()
	sources := []Source{fixed{withDetail}, fixed{withoutDetail}}

	tests := []struct {
		name   string
		detail bool
		want   map[string]int // family name -> series
	}{
		{"default", false, map[string]int{"nic_t_packets_total": 1, "nic_bench_state": 1, "nic_exporter_test_total": 1}},
		{"detail", true, map[string]int{"nic_t_per_queue_packets_total": 2}},
	}
	for _, tt := range tests {
		h := NewHandler(sources, Config{Gatherer: selfRegistry(), Detail: tt.detail}, zap.NewNop())
		for _, accept := range []string{"", "application/openmetrics-text;version=1.0.0"} {
			for _, enc := range []string{"", "gzip"} {
				t.Run(fmt.Sprintf("%s/%q/%q", tt.name, accept, enc), func(t *testing.T) {
					req := httptest.NewRequest("GET", "/metrics", nil)
					req.Header.Set("Accept", accept)
					req.Header.Set("Accept-Encoding", enc)
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, req)
					var body io.Reader = rec.Body
					if enc == "gzip" {
						zr, err := gzip.NewReader(rec.Body)
						if err != nil {
							t.Fatal(err)
						}
						body = zr
					}
					raw, err := io.ReadAll(body)
					if err != nil {
						t.Fatalf("reading the answer: %v", err)
					}
					if accept != "" && !strings.HasSuffix(string(raw), "# EOF\n") {
						t.Errorf("OpenMetrics answer does not end with # EOF:\n%s", raw)
					}
					got := map[string]int{}
					for _, line := range strings.Split(string(raw), "\n") {
						if line == "" || strings.HasPrefix(line, "#") {
							continue
						}
						name, _, _ := strings.Cut(line, "{")
						name, _, _ = strings.Cut(name, " ")
						got[name]++
					}
					if fmt.Sprint(got) != fmt.Sprint(tt.want) {
						t.Errorf("series by family = %v, want %v\nanswer:\n%s", got, tt.want, raw)
					}
				})
			}
		}
	}
}
