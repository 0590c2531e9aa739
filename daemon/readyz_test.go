package daemon

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/scrape"
)

// TestReadyzSemantics checks /readyz as the README's "Endpoints" section
// documents it, through the handler main serves with real runners: 503
// while a collector waits for its first poll or has a stuck poll; 200 once
// every collector has polled, even with a collector down (named in the
// body), so a node whose NIC collector fails keeps its other metrics in
// service.
func TestReadyzSemantics(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	runner := func(name string, update func(context.Context) error) *collector.Runner {
		return collector.NewRunner(fakeCollector{name, update}, collector.RunnerConfig{Interval: time.Hour, Timeout: 20 * time.Millisecond}, zap.NewNop())
	}
	ok := func(context.Context) error { return nil }
	good := runner("netdev", ok)
	failing := runner("devlink", func(context.Context) error { return errors.New("operation not permitted") })
	fifo := runner("applog", func(context.Context) error { <-release; return nil })
	get := func(runners ...*collector.Runner) (int, string) {
		rec := httptest.NewRecorder()
		scrape.Readyz(func() scrape.Readiness { return readiness(runners) })(rec, httptest.NewRequest("GET", "/readyz", nil))
		return rec.Code, rec.Body.String()
	}
	steps := []struct {
		name     string
		poll     *collector.Runner
		runners  []*collector.Runner
		wantCode int
		wantBody string
	}{
		{"before the first polls", nil, []*collector.Runner{good, failing}, 503, "waiting for the first poll of: netdev, devlink\n"},
		{"one collector polled", good, []*collector.Runner{good, failing}, 503, "waiting for the first poll of: devlink\n"},
		{"a collector down", failing, []*collector.Runner{good, failing}, 200, "ready\ndown (last poll failed): devlink\n"},
		{"a stuck poll", fifo, []*collector.Runner{good, failing, fifo}, 503, "stuck (a poll outlived its timeout and has not returned): applog\ndown (last poll failed): devlink, applog\n"},
	}
	for _, s := range steps {
		if s.poll != nil {
			s.poll.PollOnce(context.Background())
		}
		if code, body := get(s.runners...); code != s.wantCode || body != s.wantBody {
			t.Errorf("%s: /readyz %d %q, want %d %q", s.name, code, body, s.wantCode, s.wantBody)
		}
	}
}
