package collector

import (
	"container/list"
	"sort"
	"sync"
	"time"

	"github.com/nic-exporter/nic_exporter/internal/errclass"
	"go.uber.org/zap"
)

// SourceErrors counts and logs errors that drop single series. The first
// occurrence of each key is logged at warn level; repeats are logged at
// most once per interval with the number suppressed in between. Whatever
// the number of distinct failing keys, at most maxLogLines lines are
// logged per interval: past that, errors are only counted, one line says
// so, and the first line of the next interval says how many were not
// logged. It is safe for concurrent use.
type SourceErrors struct {
	log      *zap.Logger
	interval time.Duration
	now      func() time.Time

	mu       sync.Mutex
	keys     map[string]*list.Element // of *logState; lru orders them
	lru      *list.List               // most recently reported first
	byReason map[string]uint64

	windowStart time.Time // start of the current interval of the log budget
	lines       int       // lines logged in it
	unlogged    uint64    // errors not logged in it because the budget was spent
}

type logState struct {
	key        string
	last       time.Time
	suppressed int
}

const (
	// maxKeys bounds the memory the per-key rate limiter uses when a
	// source produces an unbounded set of failing keys; past it the least
	// recently reported key is forgotten. A forgotten key that fails again
	// counts as new, which the log budget bounds.
	maxKeys = 4096
	// maxLogLines bounds the source error lines logged per interval:
	// 30,000 failing files must not mean 30,000 lines per poll.
	maxLogLines = 100
)

// NewSourceErrors returns a SourceErrors that logs to log at most once per
// interval per key, and at most maxLogLines lines per interval in all.
// An interval of zero or less turns rate limiting off.
func NewSourceErrors(log *zap.Logger, interval time.Duration) *SourceErrors {
	return &SourceErrors{
		log:      log,
		interval: interval,
		now:      time.Now,
		keys:     make(map[string]*list.Element),
		lru:      list.New(),
		byReason: make(map[string]uint64),
	}
}

// Report counts err under its reason and logs it unless key was logged
// within the interval or the interval's log budget is spent.
func (s *SourceErrors) Report(key string, err error) {
	now := s.now()
	reason := errclass.Reason(err)
	s.mu.Lock()
	s.byReason[reason]++
	st := s.state(key)
	if !st.last.IsZero() && now.Sub(st.last) < s.interval {
		st.suppressed++
		s.mu.Unlock()
		return
	}
	var unlogged uint64
	if now.Sub(s.windowStart) >= s.interval {
		unlogged = s.unlogged
		s.windowStart, s.lines, s.unlogged = now, 0, 0
	}
	if s.lines >= maxLogLines {
		// Logged again in a later interval, with this one counted.
		st.last = now
		st.suppressed++
		s.unlogged++
		first := s.unlogged == 1
		s.mu.Unlock()
		if first {
			s.log.Warn("more sources fail than the log allows; further source errors are counted but not logged until the interval ends",
				zap.Int("logged", maxLogLines), zap.Duration("interval", s.interval))
		}
		return
	}
	s.lines++
	suppressed := st.suppressed
	st.last, st.suppressed = now, 0
	s.mu.Unlock()
	if unlogged > 0 {
		s.log.Warn("source errors were not logged in the last interval because more sources failed than the log allows; nic_exporter_collector_source_errors_total counts them",
			zap.Uint64("unlogged", unlogged), zap.Duration("interval", s.interval))
	}
	fields := []zap.Field{zap.String("source", key), zap.Error(err), zap.String("reason", reason)}
	if suppressed > 0 {
		fields = append(fields, zap.Int("suppressed", suppressed))
	}
	s.log.Warn("source read failed; the affected series is dropped", fields...)
}

// state returns the log state of key, creating it and forgetting the least
// recently reported key if there are too many. s.mu must be held.
func (s *SourceErrors) state(key string) *logState {
	if e := s.keys[key]; e != nil {
		s.lru.MoveToFront(e)
		return e.Value.(*logState)
	}
	if s.lru.Len() >= maxKeys {
		oldest := s.lru.Back()
		delete(s.keys, oldest.Value.(*logState).key)
		s.lru.Remove(oldest)
	}
	st := &logState{key: key}
	s.keys[key] = s.lru.PushFront(st)
	return st
}

// ReasonCount is the number of errors seen for one reason.
type ReasonCount struct {
	Reason string
	Count  uint64
}

// Counts returns the error counts by reason, sorted by reason.
func (s *SourceErrors) Counts() []ReasonCount {
	s.mu.Lock()
	out := make([]ReasonCount, 0, len(s.byReason))
	for r, c := range s.byReason {
		out = append(out, ReasonCount{Reason: r, Count: c})
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Reason < out[j].Reason })
	return out
}
