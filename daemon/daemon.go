// Package daemon is the long-running exporter: ParseFlags reads its
// command line, Run builds the sources (this host, or the embedded demo
// host) and the enabled collectors, and Serve polls them on their own
// schedules, computes the node verdict from their snapshots, and serves
// /metrics, /metrics/detail, /health, /healthz, /readyz and the landing
// page until its context ends, then shuts down within a grace. The
// command (cmd/nic_exporter) only dispatches the subcommands, sets up
// logging and signals, and calls Run.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"
	"go.uber.org/zap"
	"go.uber.org/zap/exp/zapslog"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/scrape"
	"github.com/nic-exporter/nic_exporter/nodehealth"
	"github.com/nic-exporter/nic_exporter/nodehealth/kube"
)

// Job is one collector and its schedule.
type Job struct {
	Collector collector.Collector
	// Interval is the time between the starts of two polls; Timeout
	// bounds one poll.
	Interval, Timeout time.Duration
}

// Config is what Serve runs. The durations and limits are those of the
// command's flags of the same meaning.
type Config struct {
	// Web is the exporter-toolkit listener configuration (addresses,
	// systemd socket, web config file).
	Web *web.FlagConfig
	// MetricsPath is where the default scrape is served; the detail
	// scrape is at DetailPath(MetricsPath).
	MetricsPath string
	// MaxRequests bounds the scrapes prepared at once (0: no bound).
	MaxRequests int
	// SeriesBudget is the per-host series budget (0: off).
	SeriesBudget int
	// ReadHeaderTimeout, WriteTimeout and IdleTimeout configure the
	// HTTP server.
	ReadHeaderTimeout, WriteTimeout, IdleTimeout time.Duration
	// ShutdownGrace is how long in-flight scrapes and polls may take
	// to finish once the context ends.
	ShutdownGrace time.Duration
	// ErrorLogInterval is how often a repeated source error is logged.
	ErrorLogInterval time.Duration
	// HealthInterval and HealthClearAfter configure the node verdict.
	HealthInterval, HealthClearAfter time.Duration
	// Kubernetes, when set, writes the verdict into this host's Node.
	Kubernetes *KubernetesConfig
	// Jobs are the enabled collectors.
	Jobs []Job
	// Background runs beside the polls until they stop (the demo
	// host's clock).
	Background []func(ctx context.Context)
	// Closers are closed in order after the polls and Background have
	// stopped, or the grace ran out: collectors that hold a resource
	// across polls, then the demo host.
	Closers []io.Closer
}

// DetailPath is the path of the detail scrape for the default scrape's
// path.
func DetailPath(metricsPath string) string { return metricsPath + "/detail" }

// Serve runs cfg until ctx ends or the listener fails. It returns nil
// after a clean shutdown; a scrape that outlives the grace loses its
// connection and is no failure.
func Serve(ctx context.Context, cfg Config, log *zap.Logger) error {
	var wg sync.WaitGroup
	pollCtx, cancelPolls := context.WithCancel(context.Background())
	// stopBy is when the shutdown grace ends, once ctx ended: the
	// scrapes in flight and the collectors share it.
	var stopBy time.Time
	defer func() {
		cancelPolls()
		// A source that ignores its context (an event watch blocked in
		// the open of a FIFO) must not keep the process from exiting.
		stopped := make(chan struct{})
		go func() {
			wg.Wait()
			close(stopped)
		}()
		wait := cfg.ShutdownGrace
		if !stopBy.IsZero() {
			wait = max(time.Until(stopBy), 100*time.Millisecond)
		}
		select {
		case <-stopped:
		case <-time.After(wait):
			// The closers run all the same: the process exits now, and
			// a late write into the demo host's directory fails
			// harmlessly instead of leaving it behind.
			log.Warn("collectors did not stop within the shutdown grace; exiting without them", zap.Duration("grace", cfg.ShutdownGrace))
		}
		for _, c := range cfg.Closers {
			if err := c.Close(); err != nil {
				log.Warn("closing after the polls failed", zap.Error(err))
			}
		}
	}()
	for _, run := range cfg.Background {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run(pollCtx)
		}()
	}

	runners := make([]*collector.Runner, len(cfg.Jobs))
	for i, j := range cfg.Jobs {
		runners[i] = collector.NewRunner(j.Collector, collector.RunnerConfig{
			Interval:         j.Interval,
			Timeout:          j.Timeout,
			ErrorLogInterval: cfg.ErrorLogInterval,
		}, log)
	}
	for _, r := range runners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.Run(pollCtx)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		logCollecting(pollCtx, runnerStatuses(runners), log)
	}()

	healthSources := make([]nodehealth.Source, len(runners))
	for i, r := range runners {
		healthSources[i] = r
	}
	var verdict *nodehealth.Evaluator
	var sinks []nodehealth.Sink
	var kubeSink *kube.Sink
	if cfg.Kubernetes != nil {
		var err error
		// The sink reads the evaluator's latest verdict, and the
		// evaluator, made next, hands the sink its transitions.
		kubeSink, err = newKubeSink(cfg.Kubernetes, func() *nodehealth.Verdict { return verdict.Verdict() }, log.Named("kubernetes"))
		if err != nil {
			return err
		}
		sinks = append(sinks, kubeSink)
	}
	verdict, err := nodehealth.New(nodehealth.Config{
		Sources:    healthSources,
		Interval:   cfg.HealthInterval,
		ClearAfter: cfg.HealthClearAfter,
		Ready:      func() bool { return len(readiness(runners).Waiting) == 0 },
		Sinks:      sinks,
	}, log.Named("nodehealth"))
	if err != nil {
		return err
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		verdict.Run(pollCtx)
	}()

	reg := prometheus.NewRegistry()
	if kubeSink != nil {
		reg.MustRegister(kubeSink.Collector())
		wg.Add(1)
		go func() {
			defer wg.Done()
			kubeSink.Run(pollCtx)
		}()
		log.Info("writing the node verdict into the Node", zap.String("node", cfg.Kubernetes.Node), zap.Stringer("taint", taintOrNone(cfg.Kubernetes.Taint)))
	}
	reg.MustRegister(
		verdict.Collector(),
		collector.NewSelfMetrics(runners),
		versioncollector.NewCollector("nic_exporter"),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	sources := make([]scrape.Source, len(runners))
	snapshotters := make([]collector.Snapshotter, len(runners))
	for i, r := range runners {
		sources[i], snapshotters[i] = r, r
	}
	metrics, detail := ScrapeHandlers(sources, cfg, reg, log)
	reg.MustRegister(metrics)
	reg.MustRegister(collector.NewSeriesBudget(snapshotters, cfg.SeriesBudget, log.Named("budget")))

	mux := http.NewServeMux()
	mux.Handle(cfg.MetricsPath, metrics)
	mux.Handle(DetailPath(cfg.MetricsPath), detail)
	mux.HandleFunc("/healthz", scrape.Healthz)
	mux.Handle("/readyz", scrape.Readyz(func() scrape.Readiness { return readiness(runners) }))
	mux.Handle("/health", verdict.Handler())
	landing, err := newStatusPage(web.LandingConfig{
		Name:        "NIC Exporter",
		Description: "Prometheus exporter for the health of high-performance NICs",
		Version:     version.Info(),
		Links: []web.LandingLinks{
			{Address: cfg.MetricsPath, Text: "Metrics"},
			{Address: DetailPath(cfg.MetricsPath), Text: "Detail metrics (per queue, per socket)"},
			{Address: "/healthz", Text: "Health"},
			{Address: "/readyz", Text: "Readiness"},
			{Address: "/health", Text: "Node verdict (JSON)"},
		},
		Profiling: "false", // no pprof handlers are served
	}, runnerStatuses(runners))
	if err != nil {
		return err
	}
	mux.Handle("/", landing)

	// net/http's own errors (TLS handshakes, accept errors, panics) go
	// through zap, in --log.format like every other line, each kind at
	// most once per minute: a client can cause one per connection.
	httpLog := stdlog.New(newHTTPErrorLog(log.Named("http"), httpErrorLogInterval), "", 0)
	server := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		// The metrics handler sets its own deadline when it admits a
		// scrape; this one bounds every other answer.
		WriteTimeout: cfg.WriteTimeout,
		IdleTimeout:  cfg.IdleTimeout,
		ErrorLog:     httpLog,
	}
	serveErr := make(chan error, 1)
	go func() {
		serveErr <- web.ListenAndServe(server, cfg.Web, slog.New(zapslog.NewHandler(log.Core(), zapslog.WithName("web"))))
	}()
	select {
	case err := <-serveErr:
		if !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serving HTTP: %w", err)
		}
		return nil
	case <-ctx.Done():
	}
	log.Info("shutting down: stopping polls and finishing in-flight scrapes")
	stopBy = time.Now().Add(cfg.ShutdownGrace)
	cancelPolls()
	shutdownCtx, cancel := context.WithDeadline(context.Background(), stopBy)
	defer cancel()
	if err := server.Shutdown(shutdownCtx); err != nil {
		if !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("shutting down HTTP: %w", err)
		}
		// A scrape that outlives the grace is the client's problem, not
		// a failure of the exporter: the shutdown still succeeds.
		log.Warn("shutdown grace expired; closing the connections of scrapes still in flight", zap.Duration("grace", cfg.ShutdownGrace))
		_ = server.Close()
	}
	return nil
}

// ScrapeHandlers returns the handlers of /metrics, whose self-metrics
// come from reg, and of /metrics/detail. The detail endpoint serves the
// detail parts of the same snapshots: no extra device reads. Its scrapes
// share the bound of MaxRequests with those of /metrics and are counted
// in the scrape self-metrics of /metrics, under profile="detail".
func ScrapeHandlers(sources []scrape.Source, cfg Config, reg prometheus.Gatherer, log *zap.Logger) (metrics, detail *scrape.Handler) {
	metrics = scrape.NewHandler(sources, scrape.Config{MaxConcurrent: cfg.MaxRequests, WriteTimeout: cfg.WriteTimeout, Gatherer: reg}, log.Named("scrape"))
	detail = scrape.NewHandler(sources, scrape.Config{MaxConcurrent: cfg.MaxRequests, WriteTimeout: cfg.WriteTimeout, Detail: true, Stats: metrics.Stats(), Limiter: metrics.Limiter()}, log.Named("scrape.detail"))
	return metrics, detail
}

// readiness is what /readyz reports about runners: the collectors still
// waiting for their first poll, those with a stuck poll and those whose
// last poll failed.
func readiness(runners []*collector.Runner) scrape.Readiness {
	var st scrape.Readiness
	for _, r := range runners {
		s := r.Status()
		if s.State() == collector.StateWaiting {
			st.Waiting = append(st.Waiting, s.Name)
			continue
		}
		// Stuck and down are both reported: a stuck collector's last
		// completed poll may have failed too.
		if s.Stuck > 0 {
			st.Stuck = append(st.Stuck, s.Name)
		}
		if !s.Up {
			st.Down = append(st.Down, s.Name)
		}
	}
	return st
}
