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

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/nic-exporter/nic_exporter/collector/exposition"
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
	}{
		{"success", []func(context.Context, *Poll) error{emit(1)}, []bool{true}, false, `nic_test_value{device="eth0"} 1`, 0},
		{"failure keeps last good snapshot", []func(context.Context, *Poll) error{emit(1), fail(syscall.EACCES)}, []bool{true, false}, false, `nic_test_value{device="eth0"} 1`, 1},
		{"recovery publishes new snapshot", []func(context.Context, *Poll) error{emit(1), fail(errors.New("kernel error")), emit(2)}, []bool{true, false, true}, false, `nic_test_value{device="eth0"} 2`, 1},
		{"absent source is up without series", []func(context.Context, *Poll) error{fail(fmt.Errorf("no devices: %w", ErrNoSource))}, []bool{true}, true, "", 0},
		{"source disappearing clears series", []func(context.Context, *Poll) error{emit(1), fail(ErrNoSource)}, []bool{true, true}, true, "", 0},
		{"timeout keeps last good snapshot", []func(context.Context, *Poll) error{emit(3), hang}, []bool{true, false}, false, `nic_test_value{device="eth0"} 3`, 1},
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
	deadline := time.Now().Add(5 * time.Second)
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
			case <-time.After(10 * time.Second):
				t.Fatal("Run did not return after its context was cancelled while a poll hung")
			}
		})
	}
}
