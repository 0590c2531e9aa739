package ruleeval

import (
	"context"
	"sort"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/util/annotations"
)

// store is the storage the engine queries: the input series, whose
// samples it generates for each query's range (see the package comment).
type store struct {
	series []storedSeries
	boot   int64 // ms
	now    int64 // ms
	step   int64 // ms
	// sinceBoot is Input.SinceBoot.
	sinceBoot bool
}

type storedSeries struct {
	lset    labels.Labels
	counter bool
	points  []Point
}

func newStore(in Input, step time.Duration) *store {
	s := &store{boot: in.Boot.UnixMilli(), now: in.Now.UnixMilli(), step: step.Milliseconds(), sinceBoot: in.SinceBoot}
	for _, x := range in.Series {
		s.add(x)
	}
	return s
}

func (s *store) add(x Series) {
	if len(x.Points) == 0 {
		return
	}
	pts := append([]Point(nil), x.Points...)
	sort.SliceStable(pts, func(i, j int) bool { return pts[i].T.Before(pts[j].T) })
	s.series = append(s.series, storedSeries{lset: labels.FromMap(x.Labels), counter: x.Counter, points: pts})
}

// samples returns the series' samples in [mint, maxt]: on the grid of
// step ending at now, never before boot, plus for a counter its zero at
// boot; values per the package comment.
func (s *store) samples(x storedSeries, mint, maxt int64) []chunks.Sample {
	if maxt > s.now {
		maxt = s.now
	}
	if mint < s.boot {
		mint = s.boot
	}
	var out []chunks.Sample
	if x.counter && s.boot >= mint && s.boot <= maxt {
		out = append(out, fsample{t: s.boot, f: 0})
	}
	// The grid: now - k*step, oldest first, after boot.
	first := s.now - ((s.now-mint)/s.step)*s.step
	for t := first; t <= maxt; t += s.step {
		if t <= s.boot && x.counter {
			continue
		}
		if v, ok := s.value(x, t); ok {
			out = append(out, fsample{t: t, f: v})
		}
	}
	return out
}

// value returns the series' value at t (ms): a counter interpolated
// linearly between its observations, before them from zero at boot when
// it has one or the store is since boot (Input.SinceBoot), else at the
// rate between its first two; a gauge the last observation at or before
// t, or the first one before it. After the last observation both keep
// its value.
func (s *store) value(x storedSeries, t int64) (float64, bool) {
	pts := x.points
	last := pts[len(pts)-1]
	if t >= last.T.UnixMilli() {
		return last.V, true
	}
	if !x.counter {
		v := pts[0].V
		for _, p := range pts {
			if p.T.UnixMilli() > t {
				break
			}
			v = p.V
		}
		return v, true
	}
	if first := pts[0]; len(pts) > 1 && !s.sinceBoot && t < first.T.UnixMilli() {
		// Two observations or more: the rate between the first two
		// holds back to the start of any window.
		second := pts[1]
		rate := 0.0
		if dt := second.T.Sub(first.T).Milliseconds(); dt > 0 && second.V > first.V {
			rate = (second.V - first.V) / float64(dt)
		}
		return max(0, first.V-rate*float64(first.T.UnixMilli()-t)), true
	}
	prevT, prevV := s.boot, 0.0
	for _, p := range pts {
		pt := p.T.UnixMilli()
		if pt >= t {
			if pt == prevT {
				return p.V, true
			}
			return prevV + (p.V-prevV)*float64(t-prevT)/float64(pt-prevT), true
		}
		prevT, prevV = pt, p.V
	}
	return last.V, true
}

// Querier implements storage.Queryable.
func (s *store) Querier(mint, maxt int64) (storage.Querier, error) {
	return &querier{s: s, mint: mint, maxt: maxt}, nil
}

type querier struct {
	s          *store
	mint, maxt int64
}

// Select implements storage.Querier: the series that match, with their
// samples in the hinted range (the querier's without hints).
func (q *querier) Select(_ context.Context, sortSeries bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	mint, maxt := q.mint, q.maxt
	if hints != nil {
		mint, maxt = hints.Start, hints.End
	}
	var out []storage.Series
	for _, x := range q.s.series {
		match := true
		for _, m := range ms {
			if !m.Matches(x.lset.Get(m.Name)) {
				match = false
				break
			}
		}
		if !match {
			continue
		}
		if smp := q.s.samples(x, mint, maxt); len(smp) > 0 {
			out = append(out, storage.NewListSeries(x.lset, smp))
		}
	}
	if sortSeries {
		sort.Slice(out, func(i, j int) bool { return labels.Compare(out[i].Labels(), out[j].Labels()) < 0 })
	}
	return &seriesSet{series: out, i: -1}
}

// LabelValues implements storage.LabelQuerier; the engine does not call
// it for rule expressions.
func (q *querier) LabelValues(context.Context, string, *storage.LabelHints, ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	return nil, nil, nil
}

// LabelNames implements storage.LabelQuerier, as LabelValues.
func (q *querier) LabelNames(context.Context, *storage.LabelHints, ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	return nil, nil, nil
}

// Close implements storage.LabelQuerier.
func (q *querier) Close() error { return nil }

type seriesSet struct {
	series []storage.Series
	i      int
}

func (s *seriesSet) Next() bool                        { s.i++; return s.i < len(s.series) }
func (s *seriesSet) At() storage.Series                { return s.series[s.i] }
func (s *seriesSet) Err() error                        { return nil }
func (s *seriesSet) Warnings() annotations.Annotations { return nil }

// fsample is a float sample (chunks.Sample).
type fsample struct {
	t int64
	f float64
}

func (s fsample) T() int64                      { return s.t }
func (s fsample) ST() int64                     { return 0 }
func (s fsample) F() float64                    { return s.f }
func (s fsample) H() *histogram.Histogram       { return nil }
func (s fsample) FH() *histogram.FloatHistogram { return nil }
func (s fsample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (s fsample) Copy() chunks.Sample           { return s }
