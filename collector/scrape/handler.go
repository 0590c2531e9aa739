// Package scrape serves /metrics, /healthz and /readyz. The /metrics
// handler writes the collectors' latest snapshots, which it reads with
// atomic loads only, followed by the exporter's own metrics; it never
// touches a device and never waits for a poll.
package scrape

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"go.uber.org/zap"
	"golang.org/x/sync/singleflight"

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
	// tails shares a rendering of the exporter's own metrics, by format,
	// among the scrapes that ask while it is rendered.
	tails    singleflight.Group
	rejected atomic.Uint64
}

// NewHandler returns a handler that serves the snapshots of sources in
// the given order, then the metrics of cfg.Gatherer.
func NewHandler(sources []Source, cfg Config, log *zap.Logger) *Handler {
	return &Handler{sources: sources, cfg: cfg, log: log}
}

// Rejected returns the number of scrapes refused because MaxConcurrent
// scrapes were already in flight.
func (h *Handler) Rejected() uint64 { return h.rejected.Load() }

const (
	contentTypeText = "text/plain; version=0.0.4; charset=utf-8"
	contentTypeOM   = "application/openmetrics-text; version=1.0.0; charset=utf-8"
	// contentTypeOM001 answers clients that ask for OpenMetrics without a
	// version, which means 0.0.1; the body is the same.
	contentTypeOM001 = "application/openmetrics-text; version=0.0.1; charset=utf-8"
)

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Every answer depends on Accept-Encoding, refusals included.
	w.Header().Set("Vary", "Accept-Encoding")
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
	if f := expfmt.NegotiateAccept(r.Header, expfmt.FmtText, expfmt.FmtOpenMetrics_1_0_0, expfmt.FmtOpenMetrics_0_0_1); f.FormatType() == expfmt.TypeOpenMetrics {
		format, encFormat, contentType = exposition.OpenMetrics, expfmt.FmtOpenMetrics_1_0_0, contentTypeOM
		if f.Version() == expfmt.OpenMetricsVersion_0_0_1 {
			encFormat, contentType = expfmt.FmtOpenMetrics_0_0_1, contentTypeOM001
		}
	}
	w.Header().Set("Content-Type", contentType)

	var err error
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		w.Header().Set("Content-Encoding", "gzip")
		err = h.writeGzip(w, format, encFormat)
	} else {
		err = h.writePlain(w, format, encFormat)
	}
	if err != nil {
		// The client went away or the connection broke; headers are out.
		h.log.Debug("writing scrape failed", zap.Error(err))
	}
}

func (h *Handler) writePlain(w io.Writer, format exposition.Format, encFormat expfmt.Format) error {
	for _, s := range h.sources {
		if _, err := s.Snapshot().WriteTo(w, format); err != nil {
			return err
		}
	}
	tail, err := h.renderSelf(encFormat)
	if _, werr := w.Write(tail); werr != nil {
		return werr
	}
	return err
}

// renderSelf returns the exporter's own metrics in encFormat. Scrapes
// that arrive while a rendering is in flight wait for it and share its
// bytes instead of gathering again: gathering the Go runtime and process
// metrics (procfs reads, about 1,000 allocations) is most of a cached
// scrape's cost, and 50 scrapers that start together would each pay it.
// Sequential scrapes always gather afresh. The bytes are shared: callers
// must not modify them.
func (h *Handler) renderSelf(encFormat expfmt.Format) ([]byte, error) {
	v, err, _ := h.tails.Do(string(encFormat), func() (any, error) {
		var buf bytes.Buffer
		err := h.writeSelf(&buf, encFormat)
		return buf.Bytes(), err
	})
	return v.([]byte), err
}

// gzipHeader is a gzip member header: deflate, no flags, no time, unknown OS.
var gzipHeader = []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff}

// writeGzip writes one gzip member made of each snapshot's cached DEFLATE
// segment (compressed once per snapshot, not per scrape), followed by the
// exporter's own metrics (rendered now, sent as stored blocks), and a
// trailer whose CRC-32 is combined from the parts' checksums.
func (h *Handler) writeGzip(w io.Writer, format exposition.Format, encFormat expfmt.Format) error {
	if _, err := w.Write(gzipHeader); err != nil {
		return err
	}
	var crc uint32
	var size int
	for _, s := range h.sources {
		seg := s.Snapshot().Deflated(format)
		if _, err := w.Write(seg.Data); err != nil {
			return err
		}
		crc = exposition.CRC32Combine(crc, seg.CRC, seg.Size)
		size += seg.Size
	}
	tail, err := h.renderSelf(encFormat)
	if err != nil {
		return err
	}
	if err := writeStored(w, tail); err != nil { // ends with the final block
		return err
	}
	crc = exposition.CRC32Combine(crc, crc32.ChecksumIEEE(tail), len(tail))
	size += len(tail)
	var trailer [8]byte
	binary.LittleEndian.PutUint32(trailer[:4], crc)
	binary.LittleEndian.PutUint32(trailer[4:], uint32(size)) // ISIZE is the size mod 2^32
	_, err = w.Write(trailer[:])
	return err
}

// writeSelf writes the exporter's own metrics and, for OpenMetrics, the
// final "# EOF".
func (h *Handler) writeSelf(w io.Writer, encFormat expfmt.Format) error {
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
		if !strings.EqualFold(strings.TrimSpace(name), "gzip") { // content codings are case-insensitive (RFC 9110, 8.4.1)
			continue
		}
		// A weight of zero ("gzip;q=0", "gzip; q=0.000") means the client
		// refuses gzip.
		for _, p := range strings.Split(params, ";") {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			if strings.EqualFold(strings.TrimSpace(k), "q") {
				if q, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && q == 0 {
					return false
				}
			}
		}
		return true
	}
	return false
}

// Readiness is the state /readyz reports, as lists of collector names.
type Readiness struct {
	// Waiting lists the collectors that have not completed a poll yet.
	Waiting []string
	// Stuck lists the collectors with a poll that outlived its timeout
	// and has not returned: one of their sources blocks, and their
	// series are as old as their last successful poll.
	Stuck []string
	// Down lists the collectors whose last poll failed.
	Down []string
}

// Ready returns the current Readiness.
type Ready func() Readiness

// Healthz answers 200 while the process serves HTTP.
func Healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, "ok\n")
}

// Readyz returns a handler that answers 200 once every enabled collector
// has completed a poll and none has a stuck poll, and 503 otherwise. The
// body names the collectors that are waiting, stuck or down, one line
// each kind. A collector that is down (its last poll failed, but
// returned) does not make the exporter unready: it is usually a lasting
// condition of the host (a missing privilege, a source that answers
// with errors) that nic_exporter_collector_up reports, and a probe that
// failed for it would keep the exporter out of service and stall rolling
// updates without making the condition go away.
func Readyz(ready Ready) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		st := ready()
		var b strings.Builder
		if len(st.Waiting) > 0 {
			fmt.Fprintf(&b, "waiting for the first poll of: %s\n", strings.Join(st.Waiting, ", "))
		}
		if len(st.Stuck) > 0 {
			fmt.Fprintf(&b, "stuck (a poll outlived its timeout and has not returned): %s\n", strings.Join(st.Stuck, ", "))
		}
		if len(st.Waiting) > 0 || len(st.Stuck) > 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
		} else {
			b.WriteString("ready\n")
		}
		if len(st.Down) > 0 {
			fmt.Fprintf(&b, "down (last poll failed): %s\n", strings.Join(st.Down, ", "))
		}
		_, _ = io.WriteString(w, b.String())
	}
}

// writeStored writes data as DEFLATE stored (uncompressed) blocks, the
// last one final: the per-scrape tail of a gzip response. The cached
// segments before it end byte-aligned, so each block header is one byte
// plus the length and its complement. The tail (the exporter's own
// metrics, a few kilobytes) is not worth compressing: a flate.Writer
// costs 1.2 MB and 0.4 ms to create, and 50 scrapers that start together
// after a garbage collection emptied a pool would create 50 of them.
func writeStored(w io.Writer, data []byte) error {
	const maxStored = 65535
	for {
		n := min(len(data), maxStored)
		final := byte(0)
		if n == len(data) {
			final = 1
		}
		hdr := [5]byte{final, byte(n), byte(n >> 8), ^byte(n), ^byte(n >> 8)}
		if _, err := w.Write(hdr[:]); err != nil {
			return err
		}
		if _, err := w.Write(data[:n]); err != nil {
			return err
		}
		data = data[n:]
		if final == 1 {
			return nil
		}
	}
}
