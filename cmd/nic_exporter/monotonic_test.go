package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/daemon"
	"github.com/nic-exporter/nic_exporter/demo"
)

// counterWatch remembers the last value of every counter series and
// reports decreases.
type counterWatch struct {
	last map[string]float64
	seen int
}

// observe parses one scrape and returns a line for each counter series
// that is lower than in the previous scrape.
func (w *counterWatch) observe(text string) ([]string, error) {
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return nil, err
	}
	var out []string
	for name, mf := range fams {
		if mf.GetType() != dto.MetricType_COUNTER {
			continue
		}
		for _, m := range mf.GetMetric() {
			key := seriesKey(name, m)
			v := m.GetCounter().GetValue()
			if prev, ok := w.last[key]; ok && v < prev {
				out = append(out, fmt.Sprintf("%s went from %v to %v", key, prev, v))
			}
			if _, ok := w.last[key]; !ok {
				w.seen++
			}
			w.last[key] = v
		}
	}
	sort.Strings(out)
	return out, nil
}

func seriesKey(name string, m *dto.Metric) string {
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('{')
	for i, l := range m.GetLabel() {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%q", l.GetName(), l.GetValue())
	}
	b.WriteByte('}')
	return b.String()
}

// staggered schedules every demo fault once, staggered so that each
// starts, runs for long and ends while the others are in other phases.
// short schedules every fault twice: for a few seconds, then from a
// minute later until the end. Both return the schedule and when the last
// fault has ended or run for over two minutes.
func staggered() (string, time.Duration) {
	var s []string
	for i, f := range demo.Faults() {
		start := 10*time.Second + time.Duration(i)*15*time.Second
		s = append(s, fmt.Sprintf("%s@%s-%s", f, start, start+100*time.Second))
	}
	return strings.Join(s, ","), 10*time.Second + time.Duration(len(demo.Faults()))*15*time.Second + 130*time.Second
}

func short() (string, time.Duration) {
	var s []string
	for i, f := range demo.Faults() {
		start := 5*time.Second + time.Duration(i)*7*time.Second
		s = append(s, fmt.Sprintf("%s@%s-%s,%s@%s", f, start, start+12*time.Second, f, start+time.Minute))
	}
	return strings.Join(s, ","), 5*time.Second + time.Duration(len(demo.Faults()))*7*time.Second + 3*time.Minute
}

// long starts every fault at 10 s without an end and runs for 30 minutes:
// faults whose effects grow with time (optic_degrading reaches its worst
// bit error rate after its default 6 minutes) are checked long after
// they have saturated. It is stepped 20 s at a time, which keeps its
// CPU cost near that of the others.
func long() (string, time.Duration) {
	var s []string
	for _, f := range demo.Faults() {
		s = append(s, f+"@10s")
	}
	return strings.Join(s, ","), 10*time.Second + 30*time.Minute
}

// TestDemoCountersMonotonic walks the demo host through fault schedules
// that cover every fault's start, phases and end, and every fault held
// for 30 minutes, on a clock stepped 5 s (20 s for the 30 minutes) at a
// time, polls every collector
// at each step, and fails for each counter series of /metrics or
// /metrics/detail that decreases. The clock is simulated: the 30 minutes
// cost no wall time, only the polls.
func TestDemoCountersMonotonic(t *testing.T) {
	for _, tc := range []struct {
		name     string
		schedule func() (string, time.Duration)
		step     time.Duration
	}{
		{"staggered", staggered, 5 * time.Second},
		{"short and repeated", short, 5 * time.Second},
		{"all for 30 minutes", long, 20 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			faults, end := tc.schedule()
			checkMonotonic(t, faults, end, tc.step)
		})
	}
}

func checkMonotonic(t *testing.T, faults string, end, step time.Duration) {
	o, err := daemon.ParseFlags([]string{"--demo", "--demo.faults=" + faults}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	// The clock jumps from step to step and in between, as a real one,
	// moves by a varying part of a millisecond at every reading, so values
	// the demo derives from two readings in one update must agree.
	start := time.Date(2026, 1, 5, 7, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	now := start
	jitter := rand.New(rand.NewPCG(1, 2))
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Duration(1 + jitter.IntN(1e6)))
		return now
	}
	host, err := demo.New(demo.Config{Faults: faults, Now: clock}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	jobs, closers, err := o.Jobs(daemon.DemoSources(host, o), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, c := range closers {
			c.Close()
		}
	}()
	var cs []collector.Collector
	for _, j := range jobs {
		cs = append(cs, j.Collector)
	}
	w := &counterWatch{last: make(map[string]float64)}
	errs := collector.NewSourceErrors(zap.NewNop(), time.Hour)
	for elapsed := time.Duration(0); elapsed <= end; elapsed += step {
		mu.Lock()
		now = start.Add(elapsed)
		mu.Unlock()
		if err := host.Update(); err != nil {
			t.Fatalf("at %s: %v", elapsed, err)
		}
		for _, c := range cs {
			b := exposition.NewBuilder()
			if err := c.Update(context.Background(), collector.NewPoll(b, errs)); err != nil {
				t.Fatalf("at %s: collector %s: %v", elapsed, c.Name(), err)
			}
			snap := b.Snapshot()
			for part, text := range map[string]string{"/metrics": snap.String(), "/metrics/detail": snap.Detail().String()} {
				dec, err := w.observe(text)
				if err != nil {
					t.Fatalf("at %s: collector %s, %s: %v", elapsed, c.Name(), part, err)
				}
				for _, d := range dec {
					t.Errorf("at %s: %s: %s", elapsed, part, d)
				}
			}
		}
	}
	if w.seen < 100 {
		t.Errorf("only %d counter series checked", w.seen)
	}
	t.Logf("%d counter series checked over %s of faults %s", w.seen, end, faults)
}
