package collector

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector/exposition"
)

// RunnerConfig configures the polling of one collector.
type RunnerConfig struct {
	// Interval is the time between the starts of two polls.
	Interval time.Duration
	// Timeout bounds one poll. A poll still running at the timeout is
	// counted as failed; the next one starts only after it returns.
	Timeout time.Duration
	// ErrorLogInterval is how often a repeated source error is logged.
	ErrorLogInterval time.Duration
}

// Runner polls one collector on its own schedule and publishes each
// successful result as an immutable snapshot. Readers call Snapshot and
// Status, which use atomic loads only.
type Runner struct {
	c    Collector
	cfg  RunnerConfig
	log  *zap.Logger
	errs *SourceErrors
	now  func() time.Time

	snap atomic.Pointer[exposition.Snapshot]

	up           atomic.Bool
	absent       atomic.Bool
	polls        atomic.Uint64
	failures     atomic.Uint64
	durationBits atomic.Uint64
	lastSuccess  atomic.Int64 // Unix nanoseconds; 0 before the first success
	invalid      atomic.Uint64
	events       atomic.Uint64

	publishMu  sync.Mutex // orders publications from polls and events
	builder    *exposition.Builder
	lastRender func(p *Poll) // latest render function from an event
	lastErr    string
}

// NewRunner returns a Runner for c.
func NewRunner(c Collector, cfg RunnerConfig, log *zap.Logger) *Runner {
	if cfg.ErrorLogInterval <= 0 {
		cfg.ErrorLogInterval = 10 * time.Minute
	}
	log = log.With(zap.String("collector", c.Name()))
	r := &Runner{
		c:       c,
		cfg:     cfg,
		log:     log,
		errs:    NewSourceErrors(log, cfg.ErrorLogInterval),
		now:     time.Now,
		builder: exposition.NewBuilder(),
	}
	r.snap.Store(exposition.Empty)
	return r
}

// Name returns the collector's name.
func (r *Runner) Name() string { return r.c.Name() }

// Snapshot returns the latest published snapshot; never nil.
func (r *Runner) Snapshot() *exposition.Snapshot { return r.snap.Load() }

// Status is the state of a collector as the self-metrics show it.
type Status struct {
	Name            string
	Up              bool
	Absent          bool
	Polls           uint64
	Failures        uint64
	LastDuration    time.Duration
	LastSuccess     time.Time
	Series          int
	Devices         int
	InvalidSamples  uint64
	Events          uint64
	SourceErrors    []ReasonCount
	PollingComplete bool
}

// Status returns the collector's current state.
func (r *Runner) Status() Status {
	s := r.snap.Load()
	st := Status{
		Name:            r.c.Name(),
		Up:              r.up.Load(),
		Absent:          r.absent.Load(),
		Polls:           r.polls.Load(),
		Failures:        r.failures.Load(),
		LastDuration:    time.Duration(math.Float64frombits(r.durationBits.Load()) * float64(time.Second)),
		Series:          s.Series(),
		Devices:         s.Devices(),
		InvalidSamples:  r.invalid.Load(),
		Events:          r.events.Load(),
		SourceErrors:    r.errs.Counts(),
		PollingComplete: r.polls.Load() > 0,
	}
	if ns := r.lastSuccess.Load(); ns != 0 {
		st.LastSuccess = time.Unix(0, ns)
	}
	return st
}

// Run polls until ctx is done. It polls once at once, then every
// Interval. If the collector is an EventSource, its Watch runs alongside
// and is restarted with a back-off when it fails.
func (r *Runner) Run(ctx context.Context) {
	var wg sync.WaitGroup
	if es, ok := r.c.(EventSource); ok {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.watch(ctx, es)
		}()
	}
	t := time.NewTicker(r.cfg.Interval)
	defer t.Stop()
	for {
		r.PollOnce(ctx)
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case <-t.C:
		}
	}
}

// PollOnce runs one poll with the configured timeout and publishes its
// result. A poll that fails or times out keeps the last good snapshot.
func (r *Runner) PollOnce(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	pctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	start := r.now()

	r.publishMu.Lock()
	r.builder.Reset()
	b := r.builder
	r.publishMu.Unlock()
	eventsBefore := r.events.Load()

	done := make(chan error, 1)
	go func() { done <- r.c.Update(pctx, NewPoll(b, r.errs)) }()
	var err error
	select {
	case err = <-done:
		if err == nil && pctx.Err() != nil && ctx.Err() == nil {
			err = pctx.Err()
		}
	case <-pctx.Done():
		if ctx.Err() != nil {
			// Shutting down: not a failure. Do not wait for a collector
			// that ignores its context; done is buffered, so its
			// goroutine ends whenever Update returns.
			return
		}
		// The collector does not return in time. Report the failure now so
		// it is visible, then wait for it so polls never pile up, but not
		// beyond shutdown.
		r.fail(start, fmt.Errorf("poll exceeded its %s timeout", r.cfg.Timeout))
		select {
		case <-done:
		case <-ctx.Done():
		}
		return
	}
	if ctx.Err() != nil && err != nil {
		return
	}
	if errors.Is(err, ErrNoSource) {
		if !r.absent.Swap(true) {
			r.log.Info("nothing to collect on this host", zap.String("detail", err.Error()))
		}
		r.succeed(start, exposition.Empty)
		return
	}
	if err != nil {
		r.fail(start, err)
		return
	}
	if r.absent.Swap(false) {
		r.log.Info("source appeared; collecting")
	}
	r.publishMu.Lock()
	if r.events.Load() != eventsBefore && r.lastRender != nil {
		// An event was published during the poll; the poll's series may
		// be older than it. Render the current state, which has both.
		b = exposition.NewBuilder()
		r.lastRender(NewPoll(b, r.errs))
	}
	snap := b.Snapshot()
	r.invalid.Add(uint64(b.Invalid()))
	r.snap.Store(snap)
	r.publishMu.Unlock()
	r.succeed(start, nil)
}

func (r *Runner) succeed(start time.Time, snap *exposition.Snapshot) {
	if snap != nil {
		r.snap.Store(snap)
	}
	now := r.now()
	r.durationBits.Store(math.Float64bits(now.Sub(start).Seconds()))
	r.lastSuccess.Store(now.UnixNano())
	r.up.Store(true)
	r.polls.Add(1)
	if r.lastErr != "" {
		r.log.Info("poll succeeds again")
		r.lastErr = ""
	}
}

func (r *Runner) fail(start time.Time, err error) {
	r.durationBits.Store(math.Float64bits(r.now().Sub(start).Seconds()))
	r.up.Store(false)
	r.failures.Add(1)
	r.polls.Add(1)
	// Log a failure once per distinct message; the self-metrics carry
	// every occurrence.
	if msg := err.Error(); msg != r.lastErr {
		r.lastErr = msg
		r.log.Error("poll failed; keeping the last good snapshot", zap.Error(err))
	}
}

// Publish renders the collector's state with render and publishes it as
// the new snapshot at once. EventSources reach it through Watch.
func (r *Runner) Publish(render func(p *Poll)) {
	r.publishMu.Lock()
	defer r.publishMu.Unlock()
	b := exposition.NewBuilder()
	render(NewPoll(b, r.errs))
	r.invalid.Add(uint64(b.Invalid()))
	r.snap.Store(b.Snapshot())
	r.lastRender = render
	r.events.Add(1)
}

func (r *Runner) watch(ctx context.Context, es EventSource) {
	backoff := time.Second
	for {
		err := es.Watch(ctx, r.Publish)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, ErrNoSource) {
			return
		}
		r.errs.Report(r.c.Name()+" events", fmt.Errorf("event watch stopped: %w", err))
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		if backoff < time.Minute {
			backoff *= 2
		}
	}
}
