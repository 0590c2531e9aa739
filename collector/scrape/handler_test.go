package scrape

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/zap"

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
		{"text with gzip", "text/plain;version=0.0.4", "gzip, deflate", contentTypeText, true, "nic_exporter_test_total 5"},
		{"gzip refused", "", "gzip;q=0", contentTypeText, false, "nic_exporter_test_total 5"},
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
	h := NewHandler([]Source{src}, Config{MaxConcurrent: 2}, zap.NewNop())
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
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("third concurrent scrape: status %d, want 503", rec.Code)
	}
	close(src.release)
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != 200 {
			t.Errorf("admitted scrape: status %d", c)
		}
	}
	if h.Rejected() != 1 {
		t.Errorf("rejected = %d, want 1", h.Rejected())
	}
}

func TestHealthAndReady(t *testing.T) {
	rec := httptest.NewRecorder()
	Healthz(rec, httptest.NewRequest("GET", "/healthz", nil))
	if rec.Code != 200 {
		t.Errorf("healthz: %d", rec.Code)
	}
	ready := false
	h := Readyz(func() (bool, []string) {
		if ready {
			return true, nil
		}
		return false, []string{"devlink", "ethtool"}
	})
	rec = httptest.NewRecorder()
	h(rec, httptest.NewRequest("GET", "/readyz", nil))
	if rec.Code != 503 || !strings.Contains(rec.Body.String(), "devlink, ethtool") {
		t.Errorf("readyz before polls: %d %q", rec.Code, rec.Body.String())
	}
	ready = true
	rec = httptest.NewRecorder()
	h(rec, httptest.NewRequest("GET", "/readyz", nil))
	if rec.Code != 200 {
		t.Errorf("readyz after polls: %d", rec.Code)
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
	}
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
	h := NewHandler([]Source{fixed{snapshotOf(n)}}, Config{MaxConcurrent: 64}, zap.NewNop())
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
