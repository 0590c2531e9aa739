// Package scrape serves /metrics, /healthz and /readyz. The /metrics
// handler writes the collectors' latest snapshots, which it reads with
// atomic loads only, followed by the exporter's own metrics; it never
// touches a device and never waits for a poll.
package scrape

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector/exposition"
)

// Source is a collector's latest snapshot.
type Source interface {
	Snapshot() *exposition.Snapshot
}

// Config configures the metrics handler.
type Config struct {
	// MaxConcurrent bounds the scrapes served at once; more get HTTP 503.
	// Zero means no bound.
	MaxConcurrent int
	// Gatherer supplies the exporter's own metrics (self-metrics, build
	// info, Go runtime and process metrics). It may be nil.
	Gatherer prometheus.Gatherer
}

// Handler is the /metrics handler.
type Handler struct {
	sources  []Source
	cfg      Config
	log      *zap.Logger
	inflight atomic.Int64
	gzips    sync.Pool
	rejected atomic.Uint64
}

// NewHandler returns a handler that serves the snapshots of sources in
// the given order, then the metrics of cfg.Gatherer.
func NewHandler(sources []Source, cfg Config, log *zap.Logger) *Handler {
	h := &Handler{sources: sources, cfg: cfg, log: log}
	h.gzips.New = func() any {
		w, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed)
		return w
	}
	return h
}

// Rejected returns the number of scrapes refused because MaxConcurrent
// scrapes were already in flight.
func (h *Handler) Rejected() uint64 { return h.rejected.Load() }

const (
	contentTypeText = "text/plain; version=0.0.4; charset=utf-8"
	contentTypeOM   = "application/openmetrics-text; version=1.0.0; charset=utf-8"
)

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if n := h.inflight.Add(1); h.cfg.MaxConcurrent > 0 && n > int64(h.cfg.MaxConcurrent) {
		h.inflight.Add(-1)
		h.rejected.Add(1)
		http.Error(w, fmt.Sprintf("too many concurrent scrapes (limit %d)", h.cfg.MaxConcurrent), http.StatusServiceUnavailable)
		return
	}
	defer h.inflight.Add(-1)

	format := exposition.Text
	encFormat := expfmt.FmtText
	contentType := contentTypeText
	if expfmt.NegotiateAccept(r.Header, expfmt.FmtText, expfmt.FmtOpenMetrics_1_0_0).FormatType() == expfmt.TypeOpenMetrics {
		format, encFormat, contentType = exposition.OpenMetrics, expfmt.FmtOpenMetrics_1_0_0, contentTypeOM
	}
	w.Header().Set("Content-Type", contentType)

	var out io.Writer = w
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Add("Vary", "Accept-Encoding")
		gz := h.gzips.Get().(*gzip.Writer)
		gz.Reset(w)
		defer func() {
			if err := gz.Close(); err != nil {
				h.log.Debug("finishing gzip stream failed", zap.Error(err))
			}
			h.gzips.Put(gz)
		}()
		out = gz
	}
	if err := h.write(out, format, encFormat); err != nil {
		// The client went away or the connection broke; headers are out.
		h.log.Debug("writing scrape failed", zap.Error(err))
	}
}

func (h *Handler) write(w io.Writer, format exposition.Format, encFormat expfmt.Format) error {
	for _, s := range h.sources {
		if _, err := s.Snapshot().WriteTo(w, format); err != nil {
			return err
		}
	}
	enc := expfmt.NewEncoder(w, encFormat)
	if h.cfg.Gatherer != nil {
		mfs, err := h.cfg.Gatherer.Gather()
		if err != nil {
			// Partial results are still written; the error is logged.
			h.log.Warn("gathering the exporter's own metrics failed", zap.Error(err))
		}
		for _, mf := range mfs {
			if err := enc.Encode(mf); err != nil {
				return err
			}
		}
	}
	if c, ok := enc.(expfmt.Closer); ok {
		return c.Close() // "# EOF" for OpenMetrics
	}
	return nil
}

func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		part = strings.TrimSpace(part)
		name, params, _ := strings.Cut(part, ";")
		if strings.TrimSpace(name) != "gzip" {
			continue
		}
		// "gzip;q=0" means the client refuses gzip.
		return strings.ReplaceAll(strings.TrimSpace(params), " ", "") != "q=0"
	}
	return false
}

// Ready reports whether each named collector has completed a poll.
type Ready func() (ready bool, waiting []string)

// Healthz answers 200 while the process serves HTTP.
func Healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, "ok\n")
}

// Readyz returns a handler that answers 200 once every enabled collector
// has completed a poll, and 503 naming the collectors still waiting.
func Readyz(ready Ready) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		ok, waiting := ready()
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = fmt.Fprintf(w, "waiting for the first poll of: %s\n", strings.Join(waiting, ", "))
			return
		}
		_, _ = io.WriteString(w, "ready\n")
	}
}
