package collector

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

var testGauge = exposition.MustNewDesc("nic_test_value", "Test value.", exposition.Gauge, "device")

// scripted is a collector whose polls follow a script.
type scripted struct {
	steps []func(ctx context.Context, p *Poll) error
	n     atomic.Int32
}

func (*scripted) Name() string { return "scripted" }

func (s *scripted) Update(ctx context.Context, p *Poll) error {
	i := int(s.n.Add(1)) - 1
	if i >= len(s.steps) {
		i = len(s.steps) - 1
	}
	return s.steps[i](ctx, p)
}

func emit(v float64) func(context.Context, *Poll) error {
	return func(_ context.Context, p *Poll) error {
		p.Add(testGauge, v, "eth0")
		p.SetDevices(1)
		return nil
	}
}

func fail(err error) func(context.Context, *Poll) error {
	return func(context.Context, *Poll) error { return err }
}

func TestRunnerPollOutcomes(t *testing.T) {
	hang := func(ctx context.Context, _ *Poll) error {
		<-ctx.Done()
		time.Sleep(10 * time.Millisecond) // returns late, after the timeout fired
		return ctx.Err()
	}
	tests := []struct {
		name       string
		steps      []func(context.Context, *Poll) error
		wantUp     []bool
		wantAbsent bool
		wantValue  string // sample line expected in the final snapshot, "" for none
		wantFails  uint64
		wantErr    string // substring of Status().LastError; "" for none
	}{
		{"success", []func(context.Context, *Poll) error{emit(1)}, []bool{true}, false, `nic_test_value{device="eth0"} 1`, 0, ""},
		{"failure keeps last good snapshot", []func(context.Context, *Poll) error{emit(1), fail(syscall.EACCES)}, []bool{true, false}, false, `nic_test_value{device="eth0"} 1`, 1, "permission denied"},
		{"recovery publishes new snapshot", []func(context.Context, *Poll) error{emit(1), fail(errors.New("kernel error")), emit(2)}, []bool{true, false, true}, false, `nic_test_value{device="eth0"} 2`, 1, ""},
		{"absent source is up without series", []func(context.Context, *Poll) error{fail(fmt.Errorf("no devices: %w", ErrNoSource))}, []bool{true}, true, "", 0, ""},
		{"source disappearing clears series", []func(context.Context, *Poll) error{emit(1), fail(ErrNoSource)}, []bool{true, true}, true, "", 0, ""},
		{"timeout keeps last good snapshot", []func(context.Context, *Poll) error{emit(3), hang}, []bool{true, false}, false, `nic_test_value{device="eth0"} 3`, 1, "timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &scripted{steps: tt.steps}
			r := NewRunner(c, RunnerConfig{Interval: time.Hour, Timeout: 50 * time.Millisecond}, zap.NewNop())
			for i, want := range tt.wantUp {
				r.PollOnce(context.Background())
				if got := r.Status().Up; got != want {
					t.Fatalf("after poll %d: up = %v, want %v", i+1, got, want)
				}
			}
			st := r.Status()
			if st.Absent != tt.wantAbsent {
				t.Errorf("absent = %v, want %v", st.Absent, tt.wantAbsent)
			}
			if st.Failures != tt.wantFails {
				t.Errorf("failures = %d, want %d", st.Failures, tt.wantFails)
			}
			if tt.wantErr == "" && st.LastError != "" || !strings.Contains(st.LastError, tt.wantErr) {
				t.Errorf("last error = %q, want %q", st.LastError, tt.wantErr)
			}
			if st.Polls != uint64(len(tt.wantUp)) || !st.PollingComplete {
				t.Errorf("polls = %d, complete = %v", st.Polls, st.PollingComplete)
			}
			out := r.Snapshot().String()
			if tt.wantValue == "" {
				if out != "" || st.Series != 0 {
					t.Errorf("snapshot = %q, want empty", out)
				}
			} else if !strings.Contains(out, tt.wantValue) {
				t.Errorf("snapshot = %q, want it to contain %q", out, tt.wantValue)
			}
		})
	}
}

func TestRunnerLogsAbsentSourceOnce(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	c := &scripted{steps: []func(context.Context, *Poll) error{fail(ErrNoSource)}}
	r := NewRunner(c, RunnerConfig{Interval: time.Hour, Timeout: time.Second}, zap.New(core))
	for i := 0; i < 5; i++ {
		r.PollOnce(context.Background())
	}
	if n := logs.FilterMessage("nothing to collect on this host").Len(); n != 1 {
		t.Errorf("logged %d times, want once", n)
	}
}

func TestRunnerLogsRepeatedFailureOnce(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	c := &scripted{steps: []func(context.Context, *Poll) error{fail(syscall.EACCES), fail(syscall.EACCES), fail(syscall.EACCES), emit(1), fail(syscall.EACCES)}}
	r := NewRunner(c, RunnerConfig{Interval: time.Hour, Timeout: time.Second}, zap.New(core))
	for i := 0; i < 5; i++ {
		r.PollOnce(context.Background())
	}
	if n := logs.FilterMessage("poll failed; keeping the last good snapshot").Len(); n != 2 {
		t.Errorf("failure logged %d times, want 2 (once, and again after a recovery)", n)
	}
	if got := r.Status().Failures; got != 4 {
		t.Errorf("failures = %d, want 4", got)
	}
}

func TestRunnerSourceErrorsCountedAndRateLimited(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	c := &scripted{steps: []func(context.Context, *Poll) error{func(_ context.Context, p *Poll) error {
		p.SourceError("/sys/class/net/eth0/speed", fmt.Errorf("reading: %w", syscall.EINVAL))
		p.SourceError("/sys/class/net/eth0/carrier", fmt.Errorf("reading: %w", syscall.EIO))
		p.Add(testGauge, 1, "eth0")
		return nil
	}}}
	r := NewRunner(c, RunnerConfig{Interval: time.Hour, Timeout: time.Second, ErrorLogInterval: time.Hour}, zap.New(core))
	for i := 0; i < 3; i++ {
		r.PollOnce(context.Background())
	}
	st := r.Status()
	if !st.Up {
		t.Errorf("single-series errors made the poll fail")
	}
	want := []ReasonCount{{"einval", 3}, {"eio", 3}}
	if fmt.Sprint(st.SourceErrors) != fmt.Sprint(want) {
		t.Errorf("source errors = %v, want %v", st.SourceErrors, want)
	}
	if n := logs.FilterMessage("source read failed; the affected series is dropped").Len(); n != 2 {
		t.Errorf("logged %d source errors, want 2 (once per key)", n)
	}
}

func TestSourceErrorsRelogsAfterInterval(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	s := NewSourceErrors(zap.New(core), time.Minute)
	now := time.Unix(1000, 0)
	s.now = func() time.Time { return now }
	for i := 0; i < 4; i++ {
		s.Report("k", syscall.EINVAL)
	}
	now = now.Add(2 * time.Minute)
	s.Report("k", syscall.EINVAL)
	entries := logs.All()
	if len(entries) != 2 {
		t.Fatalf("logged %d entries, want 2", len(entries))
	}
	if got := entries[1].ContextMap()["suppressed"]; got != int64(3) {
		t.Errorf("suppressed = %v, want 3", got)
	}
}

// eventer is an EventSource whose state is the last value it received;
// a poll renders the same state.
type eventer struct {
	values chan float64
	mu     sync.Mutex
	state  float64
	// pollGate, when set, holds each poll after it rendered, so a test can
	// publish an event in the middle of a poll.
	pollGate chan struct{}
}

func (*eventer) Name() string { return "eventer" }

func (e *eventer) render(p *Poll) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p.Add(testGauge, e.state, "eth0")
}

func (e *eventer) Update(_ context.Context, p *Poll) error {
	e.render(p)
	if e.pollGate != nil {
		<-e.pollGate
	}
	return nil
}

func (e *eventer) Watch(ctx context.Context, publish func(func(*Poll))) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case v := <-e.values:
			e.mu.Lock()
			e.state = v
			e.mu.Unlock()
			publish(e.render)
		}
	}
}

// TestRunnerEventDuringPollWins publishes an event while a poll that
// rendered the older state is still in progress: the snapshot after the
// poll must show the event's state, not the poll's older one.
func TestRunnerEventDuringPollWins(t *testing.T) {
	e := &eventer{values: make(chan float64), pollGate: make(chan struct{})}
	r := NewRunner(e, RunnerConfig{Interval: time.Hour, Timeout: time.Minute}, zap.NewNop())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = e.Watch(ctx, r.Publish) }()
	pollDone := make(chan struct{})
	go func() {
		r.PollOnce(ctx)
		close(pollDone)
	}()
	e.values <- 7 // the poll already rendered 0 and waits at the gate
	for r.Status().Events != 1 {
		time.Sleep(time.Millisecond)
	}
	close(e.pollGate)
	<-pollDone
	if out := r.Snapshot().String(); !strings.Contains(out, `nic_test_value{device="eth0"} 7`) {
		t.Errorf("after a poll that overlapped an event, snapshot = %q, want the event's value 7", out)
	}
}

func TestRunnerPublishesEventsBetweenPolls(t *testing.T) {
	e := &eventer{values: make(chan float64)}
	r := NewRunner(e, RunnerConfig{Interval: time.Hour, Timeout: time.Second}, zap.NewNop())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		r.Run(ctx)
		close(done)
	}()
	e.values <- 42 // blocks until Watch runs
	deadline := time.Now().Add(testenv.HangGuard)
	for !strings.Contains(r.Snapshot().String(), `nic_test_value{device="eth0"} 42`) {
		if time.Now().After(deadline) {
			t.Fatalf("event not published; snapshot = %q", r.Snapshot().String())
		}
		time.Sleep(time.Millisecond)
	}
	if r.Status().Events != 1 {
		t.Errorf("events = %d, want 1", r.Status().Events)
	}
	cancel()
	<-done
}

// TestRunnerReturnsOnCancelWhileAPollHangs checks that Run returns when
// its context is cancelled even though the collector's Update ignores its
// context and never returns: the daemon must exit on SIGTERM whatever a
// stuck source does.
func TestRunnerReturnsOnCancelWhileAPollHangs(t *testing.T) {
	for _, tc := range []struct {
		name string
		// timeout is the per-poll timeout: short means the runner is
		// already waiting for an overdue poll when the cancel comes.
		timeout time.Duration
	}{
		{name: "cancel after the poll timed out", timeout: time.Millisecond},
		{name: "cancel before the poll timed out", timeout: time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			defer close(release)
			started := make(chan struct{}, 1)
			c := &scripted{steps: []func(context.Context, *Poll) error{
				func(context.Context, *Poll) error {
					started <- struct{}{}
					<-release // ignores ctx, as a wedged driver read would
					return nil
				},
			}}
			r := NewRunner(c, RunnerConfig{Interval: time.Hour, Timeout: tc.timeout}, zap.NewNop())
			ctx, cancel := context.WithCancel(context.Background())
			returned := make(chan struct{})
			go func() {
				r.Run(ctx)
				close(returned)
			}()
			<-started
			if tc.timeout == time.Millisecond {
				for i := 0; r.Status().Failures == 0; i++ {
					if i > 10000 {
						t.Fatal("the overdue poll was never counted as failed")
					}
					time.Sleep(time.Millisecond)
				}
			}
			cancel()
			select {
			case <-returned:
			case <-time.After(testenv.HangGuard):
				t.Fatal("Run did not return after its context was cancelled while a poll hung")
			}
		})
	}
}

// blockUntil returns a poll step that ignores its context, as a read of a
// FIFO or a wedged driver call would, and returns only when release is
// closed; then it emits v. entered receives once per call.
func blockUntil(release <-chan struct{}, entered chan<- struct{}, v float64) func(context.Context, *Poll) error {
	return func(_ context.Context, p *Poll) error {
		entered <- struct{}{}
		<-release
		p.Add(testGauge, v, "eth0")
		return nil
	}
}

// TestRunnerAbandonsStuckPoll checks that a poll that never returns does
// not wedge the collector: the next poll starts on schedule and publishes.
func TestRunnerAbandonsStuckPoll(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	entered := make(chan struct{}, 1)
	c := &scripted{steps: []func(context.Context, *Poll) error{blockUntil(release, entered, 1), emit(2)}}
	r := NewRunner(c, RunnerConfig{Interval: 20 * time.Millisecond, Timeout: 10 * time.Millisecond}, zap.NewNop())
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan struct{})
	go func() {
		r.Run(ctx)
		close(returned)
	}()
	defer func() {
		cancel()
		<-returned
	}()
	<-entered
	deadline := time.Now().Add(testenv.HangGuard)
	for !strings.Contains(r.Snapshot().String(), `nic_test_value{device="eth0"} 2`) {
		if time.Now().After(deadline) {
			t.Fatalf("no poll after a stuck one; snapshot = %q, status = %+v", r.Snapshot().String(), r.Status())
		}
		time.Sleep(time.Millisecond)
	}
	if st := r.Status(); st.Stuck != 1 || st.Failures != 1 || st.SkippedPolls != 0 {
		t.Errorf("status = %+v, want 1 stuck poll, 1 failure, nothing skipped", st)
	}
}

// TestRunnerBoundsStuckPolls polls a source that blocks every call
// forever: at most MaxStuck calls may be outstanding, later polls are
// skipped and counted, and the collector is down. When the source
// unblocks, every stuck goroutine ends and polling resumes.
func TestRunnerBoundsStuckPolls(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 100)
	var calls atomic.Int32
	c := &scripted{steps: []func(context.Context, *Poll) error{func(ctx context.Context, p *Poll) error {
		calls.Add(1)
		select {
		case <-release:
			p.Add(testGauge, 5, "eth0")
			return nil
		default:
		}
		return blockUntil(release, entered, 5)(ctx, p)
	}}}
	const maxStuck = 3
	r := NewRunner(c, RunnerConfig{Interval: 2 * time.Millisecond, Timeout: time.Millisecond, MaxStuck: maxStuck}, zap.NewNop())
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan struct{})
	go func() {
		r.Run(ctx)
		close(returned)
	}()
	defer func() {
		cancel()
		<-returned
	}()
	deadline := time.Now().Add(testenv.HangGuard)
	for r.Status().SkippedPolls < 20 {
		if time.Now().After(deadline) {
			t.Fatalf("polls were not skipped; status = %+v", r.Status())
		}
		time.Sleep(time.Millisecond)
	}
	st := r.Status()
	if n := calls.Load(); n != maxStuck {
		t.Errorf("%d calls of Update with every call blocked, want at most MaxStuck = %d", n, maxStuck)
	}
	if st.Stuck != maxStuck || st.Up {
		t.Errorf("stuck = %d, up = %v; want %d, down", st.Stuck, st.Up, maxStuck)
	}
	if got := selfMetric(t, r, "nic_exporter_collector_stuck_polls"); got != maxStuck {
		t.Errorf("nic_exporter_collector_stuck_polls = %v, want %d", got, maxStuck)
	}
	if got := selfMetric(t, r, "nic_exporter_collector_skipped_polls_total"); got < 20 {
		t.Errorf("nic_exporter_collector_skipped_polls_total = %v, want at least 20", got)
	}
	close(release)
	deadline = time.Now().Add(testenv.HangGuard)
	for !strings.Contains(r.Snapshot().String(), `nic_test_value{device="eth0"} 5`) || r.Status().Stuck != 0 || !r.Status().Up {
		if time.Now().After(deadline) {
			t.Fatalf("polling did not resume after the source unblocked; status = %+v", r.Status())
		}
		time.Sleep(time.Millisecond)
	}
}

// TestRunnerDiscardsLateResult checks that a poll abandoned at its timeout
// and returning later never replaces the newer snapshot.
func TestRunnerDiscardsLateResult(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	c := &scripted{steps: []func(context.Context, *Poll) error{blockUntil(release, entered, 1), emit(2)}}
	r := NewRunner(c, RunnerConfig{Interval: time.Hour, Timeout: 10 * time.Millisecond}, zap.NewNop())
	pollWithin := func(what string) {
		t.Helper()
		done := make(chan struct{})
		go func() {
			r.PollOnce(context.Background())
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(testenv.HangGuard):
			t.Fatalf("%s: PollOnce did not return after its 10 ms timeout", what)
		}
	}
	pollWithin("stuck poll")
	<-entered
	if st := r.Status(); st.Stuck != 1 || st.Up {
		t.Fatalf("after the timeout: stuck = %d, up = %v; want 1 stuck poll, down", st.Stuck, st.Up)
	}
	pollWithin("poll after the stuck one")
	if out := r.Snapshot().String(); !strings.Contains(out, `nic_test_value{device="eth0"} 2`) {
		t.Fatalf("snapshot after the second poll = %q, want value 2", out)
	}
	close(release) // the stuck poll writes 1 and returns
	deadline := time.Now().Add(testenv.HangGuard)
	for r.Status().Stuck != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the released poll was never accounted for; status = %+v", r.Status())
		}
		time.Sleep(time.Millisecond)
	}
	if out := r.Snapshot().String(); !strings.Contains(out, `nic_test_value{device="eth0"} 2`) {
		t.Errorf("a late result overwrote the newer snapshot: %q", out)
	}
	if st := r.Status(); !st.Up || st.Failures != 1 {
		t.Errorf("status = %+v, want up with one failure (the timeout)", st)
	}
}

// selfMetric gathers r's self-metrics through a pedantic registry and
// returns the value of the family name for r's collector.
func selfMetric(t *testing.T, r *Runner, name string) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewSelfMetrics([]*Runner{r}))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gathering self-metrics: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "collector" && l.GetValue() == r.Name() {
					if m.GetCounter() != nil {
						return m.GetCounter().GetValue()
					}
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("self-metrics lack %s{collector=%q}", name, r.Name())
	return 0
}

// TestSourceErrorsManyFailingSources reports 30,000 distinct failing
// sources in each of several polls: the number of log lines stays bounded
// per interval, every error is still counted, and what was not logged is
// summarised.
func TestSourceErrorsManyFailingSources(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	s := NewSourceErrors(zap.New(core), time.Minute)
	now := time.Unix(1000, 0)
	s.now = func() time.Time { return now }
	const sources, polls = 30_000, 3
	poll := func() {
		for i := 0; i < sources; i++ {
			s.Report(fmt.Sprintf("/sys/class/net/veth%d/mtu", i), syscall.EIO)
		}
		now = now.Add(5 * time.Second)
	}
	for p := 0; p < polls; p++ {
		poll()
	}
	if n := logs.Len(); n > maxLogLines+1 {
		t.Errorf("%d log lines for %d failing sources in one interval, want at most %d", n, sources, maxLogLines+1)
	}
	if got, want := fmt.Sprint(s.Counts()), fmt.Sprint([]ReasonCount{{"eio", sources * polls}}); got != want {
		t.Errorf("counts = %s, want %s", got, want)
	}
	if logs.FilterMessageSnippet("not logged").Len() != 1 {
		t.Errorf("no single line saying that further source errors are not logged")
	}
	// The next interval: a summary of what was not logged, and again a
	// bounded number of lines.
	now = now.Add(time.Minute)
	logs.TakeAll()
	poll()
	if n := logs.Len(); n > maxLogLines+2 {
		t.Errorf("%d log lines in the second interval, want at most %d", n, maxLogLines+2)
	}
	// More keys fail than are tracked, so each report is of a key
	// forgotten since its last one: all but the logged lines are unlogged.
	summary := logs.FilterMessageSnippet("were not logged").All()
	if len(summary) != 1 {
		t.Fatalf("%d summary lines, want 1", len(summary))
	}
	if got, want := summary[0].ContextMap()["unlogged"], uint64(sources*polls-maxLogLines); got != want {
		t.Errorf("summary: unlogged = %v, want %v", got, want)
	}
}

// TestStatusState checks the precedence of Status.State.
func TestStatusState(t *testing.T) {
	for _, tt := range []struct {
		s    Status
		want State
	}{
		{Status{}, StateWaiting},
		{Status{Stuck: 1, Up: false}, StateWaiting},
		{Status{PollingComplete: true, Stuck: 1}, StateStuck},
		{Status{PollingComplete: true, Stuck: 2, Up: true}, StateStuck},
		{Status{PollingComplete: true}, StateDown},
		{Status{PollingComplete: true, Up: true, Absent: true}, StateAbsent},
		{Status{PollingComplete: true, Up: true}, StateUp},
	} {
		if got := tt.s.State(); got != tt.want {
			t.Errorf("%+v: State() = %s, want %s", tt.s, got, tt.want)
		}
	}
}
