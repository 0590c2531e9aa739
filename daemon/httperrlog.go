package daemon

import (
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
)

// httpErrorLogInterval is how often net/http error lines of one kind are
// logged, as failed scrapes are (scrape.Config.LogInterval).
const httpErrorLogInterval = time.Minute

// maxHTTPErrorKinds bounds the kinds of net/http error lines remembered;
// lines of further kinds share one.
const maxHTTPErrorKinds = 64

// httpErrorLog is the writer behind net/http's error log
// (http.Server.ErrorLog, written one line per call). Each line goes to
// log at warn level, in --log.format; lines of one kind (errorKind: TLS
// handshake errors, panics, accept errors …) are logged at most once per
// interval, the next one with the number not logged in between. Any
// client can make the server write such a line per connection: 3,000 TLS
// handshake errors (617 KB of log) in 0.1 s from plain HTTP clients at a
// TLS listener. Its methods are safe for concurrent use.
type httpErrorLog struct {
	log      *zap.Logger
	interval time.Duration
	now      func() time.Time

	mu    sync.Mutex
	kinds map[string]*errorKindState
}

// errorKindState is when a kind of line was last logged and how many of
// its lines were not logged since.
type errorKindState struct {
	logged  time.Time
	unnoted uint64
}

func newHTTPErrorLog(log *zap.Logger, interval time.Duration) *httpErrorLog {
	return &httpErrorLog{log: log, interval: interval, now: time.Now, kinds: make(map[string]*errorKindState)}
}

// Write logs one line of net/http's error log, or counts it.
func (l *httpErrorLog) Write(p []byte) (int, error) {
	line := strings.TrimRight(string(p), "\n")
	kind := errorKind(line)
	now := l.now()
	l.mu.Lock()
	st := l.kinds[kind]
	if st == nil {
		if len(l.kinds) >= maxHTTPErrorKinds {
			kind = "other"
			st = l.kinds[kind]
		}
		if st == nil {
			st = &errorKindState{}
			l.kinds[kind] = st
		}
	}
	if !st.logged.IsZero() && now.Sub(st.logged) < l.interval {
		st.unnoted++
		l.mu.Unlock()
		return len(p), nil
	}
	unnoted := st.unnoted
	st.logged, st.unnoted = now, 0
	l.mu.Unlock()
	fields := []zap.Field{zap.String("kind", kind)}
	if unnoted > 0 {
		fields = append(fields, zap.Uint64("not_logged_since_last", unnoted))
	}
	l.log.Warn(line, fields...)
	return len(p), nil
}

// errorKind returns what a net/http error line is about, without what
// differs between connections: its words up to the first after the
// prefix (http:, http2:) that holds a digit (an address, a port), or up
// to and including one that ends in a colon, at most eight. "http: TLS handshake error from
// 192.0.2.1:5555: EOF" is "http: TLS handshake error from", "http:
// Accept error: accept tcp [::]:21180: …" is "http: Accept error:".
func errorKind(line string) string {
	words := strings.Fields(line)
	var kind []string
	for i, w := range words {
		if len(kind) == 8 || i > 0 && strings.ContainsAny(w, "0123456789") {
			break
		}
		kind = append(kind, w)
		if i > 0 && strings.HasSuffix(w, ":") {
			break
		}
	}
	return strings.Join(kind, " ")
}
