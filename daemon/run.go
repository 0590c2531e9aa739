package daemon

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/nic-exporter/nic_exporter/demo"
	"go.uber.org/zap"
)

// Run builds the sources (this host, or the demo host started here) and
// the enabled collectors of o, and serves them until ctx ends.
func Run(ctx context.Context, o *Options, log *zap.Logger) error {
	cfg := o.ServeConfig()
	var host *demo.Host
	var src *Sources
	if o.demo {
		var start time.Time
		if o.demoStart != "" {
			start, _ = time.Parse(time.RFC3339Nano, o.demoStart) // checked in check
		}
		var err error
		host, err = demo.New(demo.Config{Faults: o.demoFaults, Elapsed: o.demoElapsed, Start: start}, log.Named("demo"))
		if err != nil {
			return err
		}
		cfg.Background = append(cfg.Background, host.Run)
		src = DemoSources(host, o)
		log.Info("running on the embedded demo host", zap.String("sysfs", src.SysfsPath), zap.String("faults", o.demoFaults))
	} else {
		src = hostSources(o)
	}
	jobs, closers, err := o.Jobs(src, log)
	if err != nil {
		if host != nil {
			_ = host.Close()
		}
		return err
	}
	cfg.Jobs = jobs
	// Serve closes them after the polls stop: the collectors that hold
	// a resource across polls (the fabric collector's MAD clients), then
	// the demo host's directory.
	cfg.Closers = closers
	if host != nil {
		cfg.Closers = append(cfg.Closers, host)
	}
	return Serve(ctx, cfg, log)
}

// ServeConfig returns the configuration of Serve from the flags, without
// the collectors.
func (o *Options) ServeConfig() Config {
	return Config{
		Web:               o.web,
		MetricsPath:       o.metricsPath,
		MaxRequests:       o.maxRequests,
		SeriesBudget:      o.seriesBudget,
		ReadHeaderTimeout: o.readHeader,
		WriteTimeout:      o.writeTimeout,
		IdleTimeout:       o.idleTimeout,
		ShutdownGrace:     o.shutdownGrace,
		ErrorLogInterval:  o.errLogInterval,
		HealthInterval:    o.health.interval,
		HealthClearAfter:  o.health.clearAfter,
		Kubernetes:        o.kubernetes.config(),
	}
}

// Jobs builds the enabled collectors of o on src, with their schedules,
// and returns those that hold a resource across polls as closers. When
// one cannot be built, those built are closed and the error names it.
func (o *Options) Jobs(src *Sources, log *zap.Logger) ([]Job, []io.Closer, error) {
	var jobs []Job
	var closers []io.Closer
	for _, cf := range o.collectors {
		name := cf.common.Spec.Name
		if !cf.common.Enabled {
			log.Info("collector disabled", zap.String("collector", name))
			continue
		}
		c, err := cf.newCollector(src, log.Named(name))
		if err != nil {
			for _, cl := range closers {
				_ = cl.Close()
			}
			return nil, nil, fmt.Errorf("collector %s: %w", name, err)
		}
		if cl, ok := c.(io.Closer); ok {
			closers = append(closers, cl)
		}
		jobs = append(jobs, Job{Collector: c, Interval: cf.common.Interval, Timeout: cf.common.Timeout})
	}
	return jobs, closers, nil
}

// CollectorNames returns the names of every collector, enabled or not, in
// the order their series appear.
func CollectorNames() []string {
	var out []string
	for _, s := range collectorSpecs() {
		out = append(out, s.Name)
	}
	return out
}
