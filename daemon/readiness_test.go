package daemon

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/scrape"
)

// fakeCollector is a collector whose Update calls update.
type fakeCollector struct {
	name   string
	update func(ctx context.Context) error
}

func (f fakeCollector) Name() string { return f.name }

func (f fakeCollector) Update(ctx context.Context, _ *collector.Poll) error { return f.update(ctx) }

// TestReadiness runs one poll of collectors that succeed, fail, block
// ignoring their context and have not polled yet, and checks what
// /readyz is told.
func TestReadiness(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	ok := func(context.Context) error { return nil }
	runner := func(name string, update func(context.Context) error) *collector.Runner {
		return collector.NewRunner(fakeCollector{name, update}, collector.RunnerConfig{Interval: time.Hour, Timeout: 20 * time.Millisecond}, zap.NewNop())
	}
	runners := []*collector.Runner{
		runner("good", ok),
		runner("failing", func(context.Context) error { return errors.New("permission denied") }),
		runner("fifo", func(context.Context) error { <-release; return nil }),
		runner("absent", func(context.Context) error { return collector.ErrNoSource }),
		runner("new", ok),
	}
	for _, r := range runners[:4] {
		r.PollOnce(context.Background())
	}
	want := scrape.Readiness{Waiting: []string{"new"}, Stuck: []string{"fifo"}, Down: []string{"failing", "fifo"}}
	if diff := cmp.Diff(want, readiness(runners)); diff != "" {
		t.Errorf("readiness (-want +got):\n%s", diff)
	}
	runners[4].PollOnce(context.Background())
	want.Waiting = nil
	if diff := cmp.Diff(want, readiness(runners)); diff != "" {
		t.Errorf("readiness after every first poll (-want +got):\n%s", diff)
	}
}
