package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/collector/scrape"
	"github.com/nic-exporter/nic_exporter/daemon"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// blockingSource is a collector whose snapshot is handed out only when
// release is closed; entered receives a value each time a scrape asks.
type blockingSource struct {
	entered chan struct{}
	release chan struct{}
}

func (b blockingSource) Snapshot() *exposition.Snapshot {
	b.entered <- struct{}{}
	<-b.release
	return exposition.Empty
}

// TestMaxRequestsSharedByEndpoints holds --web.max-requests scrapes of
// /metrics in flight and checks that a scrape of /metrics/detail is
// refused too: the flag is one bound for both endpoints. Each handler
// used to have its own, so the exporter served twice the flag at once.
func TestMaxRequestsSharedByEndpoints(t *testing.T) {
	const limit = 2
	o, err := daemon.ParseFlags([]string{"--demo", "--web.max-requests=2"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	src := blockingSource{entered: make(chan struct{}), release: make(chan struct{})}
	metrics, detail := daemon.ScrapeHandlers([]scrape.Source{src}, o.ServeConfig(), prometheus.NewRegistry(), zap.NewNop())
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	released := false
	release := func() {
		if !released {
			released = true
			close(src.release)
		}
	}
	t.Cleanup(release) // first: the held scrapes end before wg.Wait
	serve := func(h http.Handler, path string) <-chan int {
		code := make(chan int, 1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
			code <- rec.Code
		}()
		return code
	}
	for range limit {
		serve(metrics, "/metrics")
		select {
		case <-src.entered:
		case <-time.After(testenv.HangGuard):
			t.Fatal("a /metrics scrape within the limit was not admitted")
		}
	}
	for _, tt := range []struct {
		h    http.Handler
		path string
	}{{detail, "/metrics/detail"}, {metrics, "/metrics"}} {
		code := serve(tt.h, tt.path)
		select {
		case c := <-code:
			if c != http.StatusServiceUnavailable {
				t.Errorf("%s with %d /metrics scrapes in flight and --web.max-requests=%d: status %d, want 503", tt.path, limit, limit, c)
			}
		case <-src.entered:
			t.Errorf("%s admitted with %d /metrics scrapes in flight and --web.max-requests=%d", tt.path, limit, limit)
		case <-time.After(testenv.HangGuard):
			t.Fatalf("%s neither admitted nor refused", tt.path)
		}
	}
	release()
	wg.Wait()
	if got := metrics.Rejected() + detail.Rejected(); got != 2 {
		t.Errorf("rejected scrapes: %d, want 2", got)
	}
}
