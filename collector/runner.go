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
	// counted as failed and abandoned: the next poll starts on schedule
	// with a fresh builder, and whatever the abandoned one produces when
	// its source finally returns is discarded.
	Timeout time.Duration
	// ErrorLogInterval is how often a repeated source error is logged.
	ErrorLogInterval time.Duration
	// MaxStuck bounds the abandoned polls of the collector that have not
	// returned yet. While that many are stuck, polls that come due are
	// skipped and counted instead of starting one more goroutine that
	// would most likely block on the same source. Zero means
	// DefaultMaxStuck.
	MaxStuck int
}

// DefaultMaxStuck is the number of stuck polls a collector may have
// before the Runner skips polls.
const DefaultMaxStuck = 2

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
	stuck        atomic.Int64 // abandoned polls that have not returned
	skipped      atomic.Uint64

	publishMu  sync.Mutex          // orders publications from polls and events
	builder    *exposition.Builder // reused by polls; replaced when a poll is abandoned with it
	lastRender func(p *Poll)       // latest render function from an event
	lastErr    string
	// lastErrText is lastErr for Status, which other goroutines call:
	// the failed poll's error text, nil after a success.
	lastErrText atomic.Pointer[string]
}

// NewRunner returns a Runner for c.
func NewRunner(c Collector, cfg RunnerConfig, log *zap.Logger) *Runner {
	if cfg.ErrorLogInterval <= 0 {
		cfg.ErrorLogInterval = 10 * time.Minute
	}
	if cfg.MaxStuck <= 0 {
		cfg.MaxStuck = DefaultMaxStuck
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
	// Stuck is the number of polls abandoned at their timeout that have
	// not returned yet: their source blocks, and the goroutine running
	// each of them still exists.
	Stuck int
	// SkippedPolls counts the polls not started because MaxStuck polls
	// were stuck.
	SkippedPolls uint64
	// LastError is the error of the last poll if it failed, "" if it
	// succeeded (or none ran yet). It is the text the log shows once.
	LastError string
}

// State is a collector's state in one word, as the landing page, the
// startup log and /readyz name it.
type State string

// The states, in the order State tests them: a collector that has not
// polled yet is waiting whatever else holds; one with a stuck poll is
// stuck even if its last completed poll failed.
const (
	StateWaiting State = "waiting" // no poll has completed yet
	StateStuck   State = "stuck"   // a poll is past its timeout and has not returned
	StateDown    State = "down"    // the last poll failed
	StateAbsent  State = "absent"  // the source does not exist on this host
	StateUp      State = "up"
)

// State returns the collector's state.
func (s Status) State() State {
	switch {
	case !s.PollingComplete:
		return StateWaiting
	case s.Stuck > 0:
		return StateStuck
	case !s.Up:
		return StateDown
	case s.Absent:
		return StateAbsent
	}
	return StateUp
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
		Stuck:           int(r.stuck.Load()),
		SkippedPolls:    r.skipped.Load(),
	}
	if ns := r.lastSuccess.Load(); ns != 0 {
		st.LastSuccess = time.Unix(0, ns)
	}
	if e := r.lastErrText.Load(); e != nil {
		st.LastError = *e
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

// Poll states, for the hand-over between PollOnce and the goroutine that
// runs Update.
const (
	pollRunning int32 = iota
	pollFinished
	pollAbandoned
)

// PollOnce runs one poll with the configured timeout and publishes its
// result. A poll that fails or times out keeps the last good snapshot. A
// poll that outlives its timeout is abandoned: PollOnce returns at the
// timeout, the poll's goroutine is left to finish whenever its source
// returns, and its result is then discarded, so it can never replace a
// newer snapshot. While MaxStuck abandoned polls have not returned,
// PollOnce skips the poll.
func (r *Runner) PollOnce(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	start := r.now()
	if n := r.stuck.Load(); n >= int64(r.cfg.MaxStuck) {
		r.skipped.Add(1)
		r.up.Store(false)
		r.logFailure(fmt.Errorf("%d polls abandoned at their %s timeout have not returned; skipping polls until one does", n, r.cfg.Timeout))
		return
	}
	pctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()

	r.publishMu.Lock()
	r.builder.Reset()
	b := r.builder
	r.publishMu.Unlock()
	eventsBefore := r.events.Load()

	var state atomic.Int32
	done := make(chan error, 1)
	go func() {
		err := r.c.Update(pctx, NewPoll(b, r.errs))
		if !state.CompareAndSwap(pollRunning, pollFinished) {
			// Abandoned: the Runner has moved on, and b is no longer
			// the builder it publishes from. Drop the result.
			r.stuck.Add(-1)
			r.log.Debug("an abandoned poll returned; its result is discarded",
				zap.Duration("after", r.now().Sub(start)), zap.Error(err))
			return
		}
		done <- err
	}()
	var err error
	select {
	case err = <-done:
		if err == nil && pctx.Err() != nil && ctx.Err() == nil {
			err = pctx.Err()
		}
	case <-pctx.Done():
		// Counted before the hand-over so that the goroutine's decrement
		// always follows this increment.
		r.stuck.Add(1)
		if !state.CompareAndSwap(pollRunning, pollAbandoned) {
			// Update returned just now: take its result.
			r.stuck.Add(-1)
			err = <-done
			if err == nil && ctx.Err() == nil {
				err = pctx.Err()
			}
			break
		}
		// The goroutine keeps b; later polls build into a new one.
		r.publishMu.Lock()
		r.builder = exposition.NewBuilder()
		r.publishMu.Unlock()
		if ctx.Err() != nil {
			// Shutting down: not a failure.
			return
		}
		r.fail(start, fmt.Errorf("poll exceeded its %s timeout and was abandoned; it is counted as stuck until its source returns", r.cfg.Timeout))
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
	r.lastErrText.Store(nil)
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
	r.logFailure(err)
}

// logFailure logs a failure once per distinct message; the self-metrics
// carry every occurrence.
func (r *Runner) logFailure(err error) {
	msg := err.Error()
	r.lastErrText.Store(&msg)
	if msg != r.lastErr {
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
