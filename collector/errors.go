package collector

import (
	"errors"
	"io/fs"
	"sort"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/internal/sysfs"
)

// Reason classifies a source error for the self-metrics. The set is small
// and fixed so the label cannot explode.
func Reason(err error) string {
	var errno syscall.Errno
	switch {
	case err == nil:
		return ""
	case errors.As(err, &errno):
		switch errno {
		case syscall.EINVAL:
			return "einval"
		case syscall.ENOENT, syscall.ENODEV, syscall.ENXIO:
			return "enoent"
		case syscall.EACCES, syscall.EPERM:
			return "eacces"
		case syscall.EIO:
			return "eio"
		case syscall.EOPNOTSUPP:
			return "eopnotsupp"
		case syscall.EAGAIN, syscall.EBUSY, syscall.ETIMEDOUT:
			return "busy"
		}
		return "other"
	case errors.Is(err, fs.ErrNotExist):
		return "enoent"
	case errors.Is(err, fs.ErrPermission):
		return "eacces"
	case errors.Is(err, ErrParse):
		return "parse"
	}
	return "other"
}

// ErrParse marks errors that come from content that could not be parsed;
// Reason counts errors that wrap it as "parse". It is sysfs.ErrParse, so
// the shared sysfs parsers and the collectors' own parsers count alike.
var ErrParse = sysfs.ErrParse

// SourceErrors counts and logs errors that drop single series. The first
// occurrence of each key is logged at warn level; repeats are logged at
// most once per interval with the number suppressed in between. It is safe
// for concurrent use.
type SourceErrors struct {
	log      *zap.Logger
	interval time.Duration
	now      func() time.Time

	mu       sync.Mutex
	keys     map[string]*logState
	byReason map[string]uint64
}

type logState struct {
	last       time.Time
	suppressed int
}

// maxKeys bounds the memory the rate limiter uses when a source produces
// an unbounded set of failing keys; past it the oldest entries are dropped.
const maxKeys = 4096

// NewSourceErrors returns a SourceErrors that logs to log at most once per
// interval per key.
func NewSourceErrors(log *zap.Logger, interval time.Duration) *SourceErrors {
	return &SourceErrors{
		log:      log,
		interval: interval,
		now:      time.Now,
		keys:     make(map[string]*logState),
		byReason: make(map[string]uint64),
	}
}

// Report counts err under its reason and logs it unless key was logged
// within the interval.
func (s *SourceErrors) Report(key string, err error) {
	now := s.now()
	s.mu.Lock()
	s.byReason[Reason(err)]++
	st := s.keys[key]
	if st == nil {
		if len(s.keys) >= maxKeys {
			s.evictOldest()
		}
		st = &logState{}
		s.keys[key] = st
	} else if now.Sub(st.last) < s.interval {
		st.suppressed++
		s.mu.Unlock()
		return
	}
	suppressed := st.suppressed
	st.last, st.suppressed = now, 0
	s.mu.Unlock()
	fields := []zap.Field{zap.String("source", key), zap.Error(err), zap.String("reason", Reason(err))}
	if suppressed > 0 {
		fields = append(fields, zap.Int("suppressed", suppressed))
	}
	s.log.Warn("source read failed; the affected series is dropped", fields...)
}

func (s *SourceErrors) evictOldest() {
	var oldestKey string
	var oldest time.Time
	for k, st := range s.keys {
		if oldestKey == "" || st.last.Before(oldest) {
			oldestKey, oldest = k, st.last
		}
	}
	delete(s.keys, oldestKey)
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
