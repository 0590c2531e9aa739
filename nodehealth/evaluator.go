package nodehealth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector/exposition"
)

// Source is what the evaluator reads: a collector's latest published
// snapshot. collector.Runner is one.
type Source interface {
	Name() string
	Snapshot() *exposition.Snapshot
}

// Sink receives the transitions of node conditions: the condition's new
// state, after the verdict that holds it is published. Sinks are called
// in order from the evaluator's goroutine and must return at once; one
// that talks to a remote service (a Kubernetes API server) queues the
// transition and works on it in a goroutine of its own, so a slow or
// unreachable service delays neither the verdict nor /metrics.
type Sink interface {
	ConditionChanged(c Condition)
}

// Config configures an Evaluator.
type Config struct {
	// Sources are the collectors whose snapshots are read.
	Sources []Source
	// Interval is the time between two evaluations.
	Interval time.Duration
	// ClearAfter is how long a true condition must show no evidence
	// before it is cleared.
	ClearAfter time.Duration
	// Ready, when set, reports whether every collector has polled once;
	// until it does the verdict is "unknown".
	Ready func() bool
	// Sinks receive every transition.
	Sinks []Sink
	// Definitions are the conditions; nil means Conditions().
	Definitions []Definition
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Evaluator computes the verdict from the sources' snapshots. Verdict
// and the HTTP handler and metrics collector built on it read the latest
// verdict with an atomic load; only Evaluate, which Run calls, writes it.
type Evaluator struct {
	cfg     Config
	log     *zap.Logger
	want    map[string]bool
	started time.Time

	mu     sync.Mutex // serializes Evaluate
	conds  []*condState
	cache  map[string]cached
	errLog map[string]string

	verdict atomic.Pointer[Verdict]
	// errors counts the snapshots that could not be read
	// (nic_exporter_node_health_snapshot_errors_total).
	errors atomic.Uint64
}

// cached is a source's last parsed snapshot.
type cached struct {
	snap    *exposition.Snapshot
	samples samples
}

// condState is the hysteresis of one condition.
type condState struct {
	def          Definition
	active       bool
	since        time.Time
	lastEvidence time.Time
	last         []evidence
	current      bool // the last evaluation had evidence that held
	pending      map[string]time.Time
	rises        map[string]*riseState
}

// New returns an Evaluator whose verdict is "unknown" until its first
// evaluation.
func New(cfg Config, log *zap.Logger) (*Evaluator, error) {
	if cfg.Interval <= 0 {
		return nil, fmt.Errorf("node health: the evaluation interval must be positive, got %s", cfg.Interval)
	}
	if cfg.ClearAfter < 0 {
		return nil, fmt.Errorf("node health: the clear-after hold time must not be negative, got %s", cfg.ClearAfter)
	}
	if cfg.Definitions == nil {
		cfg.Definitions = Conditions()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	e := &Evaluator{
		cfg:     cfg,
		log:     log,
		want:    make(map[string]bool),
		started: cfg.Now(),
		cache:   make(map[string]cached),
		errLog:  make(map[string]string),
	}
	seen := make(map[string]bool)
	for _, d := range cfg.Definitions {
		if d.Type == "" || d.Reason == "" {
			return nil, errors.New("node health: a condition lacks its type or reason")
		}
		if seen[d.Type] {
			return nil, fmt.Errorf("node health: condition %s is defined twice", d.Type)
		}
		seen[d.Type] = true
		if d.Rule.Op == OpRise && d.Rule.Window <= 0 {
			return nil, fmt.Errorf("node health: condition %s: a rise rule needs a positive window", d.Type)
		}
		for _, m := range d.Rule.metrics() {
			e.want[m] = true
		}
		e.conds = append(e.conds, &condState{
			def:     d,
			since:   e.started,
			pending: make(map[string]time.Time),
			rises:   make(map[string]*riseState),
		})
	}
	e.verdict.Store(e.unknown(e.started, "the node health has not been evaluated yet"))
	return e, nil
}

// Verdict returns the latest verdict; never nil. Callers must not
// modify it.
func (e *Evaluator) Verdict() *Verdict { return e.verdict.Load() }

// Run evaluates at once and then every Interval until ctx is done.
func (e *Evaluator) Run(ctx context.Context) {
	t := time.NewTicker(e.cfg.Interval)
	defer t.Stop()
	for {
		e.Evaluate()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Evaluate reads the sources' snapshots, updates every condition,
// publishes the verdict and tells the sinks of each transition.
func (e *Evaluator) Evaluate() {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.cfg.Now()
	if e.cfg.Ready != nil && !e.cfg.Ready() {
		e.verdict.Store(e.unknown(now, "the collectors have not all polled once yet"))
		return
	}
	all := e.samples()
	v := &Verdict{Time: now, ClearAfterSeconds: e.cfg.ClearAfter.Seconds()}
	var changed []Condition
	for _, c := range e.conds {
		flipped := c.update(all, now, e.cfg.ClearAfter)
		cond := c.condition(e.cfg.ClearAfter)
		v.Conditions = append(v.Conditions, cond)
		if flipped {
			changed = append(changed, cond)
			if cond.Status == StatusTrue {
				e.log.Warn("node condition set", zap.String("condition", cond.Type), zap.String("reason", cond.Reason), zap.String("message", cond.Message))
			} else {
				e.log.Info("node condition cleared", zap.String("condition", cond.Type), zap.Duration("healthy_for", e.cfg.ClearAfter))
			}
		}
	}
	v.summarize()
	e.verdict.Store(v)
	for _, c := range changed {
		for _, s := range e.cfg.Sinks {
			s.ConditionChanged(c)
		}
	}
}

// unknown returns a verdict of status unknown with every condition false.
func (e *Evaluator) unknown(now time.Time, why string) *Verdict {
	v := &Verdict{Status: VerdictUnknown, Reason: why, Time: now, ClearAfterSeconds: e.cfg.ClearAfter.Seconds()}
	for _, c := range e.conds {
		v.Conditions = append(v.Conditions, c.condition(e.cfg.ClearAfter))
	}
	return v
}

// samples returns the families the rules read, from every source's
// latest snapshot. A snapshot is parsed once: later evaluations reuse its
// samples until the source publishes a new one.
func (e *Evaluator) samples() samples {
	all := make(samples)
	for _, s := range e.cfg.Sources {
		snap := s.Snapshot()
		c, ok := e.cache[s.Name()]
		if !ok || c.snap != snap {
			parsed, err := e.parse(snap)
			if err != nil {
				// The last samples that parsed stand in, so that a
				// condition neither clears nor sets on a snapshot
				// that cannot be read. The snapshot is remembered:
				// it is not parsed again, nor logged again.
				e.logOnce(s.Name(), err)
				c.snap = snap
				e.cache[s.Name()] = c
				e.errors.Add(1)
			} else {
				delete(e.errLog, s.Name())
				c = cached{snap: snap, samples: parsed}
				e.cache[s.Name()] = c
			}
		}
		all.merge(c.samples)
	}
	return all
}

// parse reads the families the rules need from a snapshot.
func (e *Evaluator) parse(snap *exposition.Snapshot) (samples, error) {
	// Only the families the rules read are copied and parsed: on a large
	// host the rest is a hundred times more text, and a new snapshot
	// arrives every poll.
	text := snap.AppendFamilies(nil, exposition.Text, func(name string) bool { return e.want[name] })
	return parseSamples(bytes.NewReader(text), e.want)
}

// logOnce logs a source's error when it differs from the last one logged.
func (e *Evaluator) logOnce(source string, err error) {
	if e.errLog[source] == err.Error() {
		return
	}
	e.errLog[source] = err.Error()
	e.log.Error("node health cannot read a collector's snapshot; the collector's last readable snapshot stands in", zap.String("collector", source), zap.Error(err))
}

// update applies one evaluation to the condition and reports whether its
// status changed.
func (c *condState) update(all samples, now time.Time, clearAfter time.Duration) bool {
	ev := c.def.Rule.find(all, now, c.rises)
	var held []evidence
	keep := make(map[string]bool, len(ev))
	for _, x := range ev {
		keep[x.key] = true
		first, ok := c.pending[x.key]
		if !ok {
			first = now
			c.pending[x.key] = now
		}
		if now.Sub(first) >= c.def.For {
			held = append(held, x)
		}
	}
	for k := range c.pending {
		if !keep[k] {
			delete(c.pending, k)
		}
	}
	c.current = len(held) > 0
	if c.current {
		c.lastEvidence = now
		c.last = held
		if !c.active {
			c.active, c.since = true, now
			return true
		}
		return false
	}
	if c.active && now.Sub(c.lastEvidence) >= clearAfter {
		c.active, c.since, c.last = false, now, nil
		return true
	}
	return false
}

// condition returns the condition's state for the verdict.
func (c *condState) condition(clearAfter time.Duration) Condition {
	out := Condition{
		Type:               c.def.Type,
		Severity:           c.def.Severity,
		Alerts:             append([]string(nil), c.def.Alerts...),
		LastTransitionTime: c.since.UTC(),
	}
	if !c.active {
		out.Status, out.Reason = StatusFalse, HealthyReason
		out.Message = "no evidence"
		return out
	}
	out.Status, out.Reason = StatusTrue, c.def.Reason
	for _, x := range c.last {
		out.Evidence = append(out.Evidence, x.text)
	}
	seen := make(map[string]bool)
	for _, x := range c.last {
		if !seen[x.device] {
			seen[x.device] = true
			out.Devices = append(out.Devices, x.device)
		}
	}
	out.Message = fmt.Sprintf("%s: %s (%s)", c.def.Summary, joinDevices(c.last), strings.Join(out.Evidence, "; "))
	if !c.current {
		at := c.lastEvidence.Add(clearAfter).UTC()
		out.ClearsAt = &at
		out.Message = fmt.Sprintf("recovering, clears at %s unless the evidence returns; last evidence at %s: %s", at.Format(time.RFC3339), c.lastEvidence.UTC().Format(time.RFC3339), out.Message)
	}
	return out
}
