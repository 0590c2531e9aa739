package daemon

import (
	"fmt"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func TestErrorKind(t *testing.T) {
	tests := []struct{ line, want string }{
		{"http: TLS handshake error from 192.0.2.1:5555: EOF", "http: TLS handshake error from"},
		{"http: TLS handshake error from [2001:db8::1]:443: client sent an HTTP request to an HTTPS server", "http: TLS handshake error from"},
		{"http: Accept error: accept tcp [::]:21180: accept4: too many open files; retrying in 5ms", "http: Accept error:"},
		{"http: panic serving 192.0.2.1:5555: runtime error: index out of range", "http: panic serving"},
		{"http2: server: error reading preface from client 192.0.2.1:5555: EOF", "http2: server:"},
		{"a b c d e f g h i j", "a b c d e f g h"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := errorKind(tt.line); got != tt.want {
			t.Errorf("errorKind(%q) = %q, want %q", tt.line, got, tt.want)
		}
	}
}

// TestHTTPErrorLogRateLimit writes 3,000 handshake error lines and one
// panic line within an interval, then one more handshake error after it:
// one line per kind and interval is logged, the later one with the
// number not logged in between, and past maxHTTPErrorKinds kinds the rest
// share one.
func TestHTTPErrorLogRateLimit(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	l := newHTTPErrorLog(zap.New(core), time.Minute)
	now := time.Unix(1_800_000_000, 0)
	l.now = func() time.Time { return now }
	write := func(line string) {
		t.Helper()
		if n, err := l.Write([]byte(line + "\n")); n != len(line)+1 || err != nil {
			t.Fatalf("Write: %d, %v", n, err)
		}
	}
	for i := range 3000 {
		write(fmt.Sprintf("http: TLS handshake error from 127.0.0.1:%d: EOF", 10000+i))
	}
	write("http: panic serving 127.0.0.1:1: boom")
	now = now.Add(time.Minute)
	write("http: TLS handshake error from 127.0.0.1:9: EOF")
	entries := logs.AllUntimed()
	if len(entries) != 3 {
		t.Fatalf("%d lines logged, want 3: %v", len(entries), entries)
	}
	if m := entries[0].Message; m != "http: TLS handshake error from 127.0.0.1:10000: EOF" {
		t.Errorf("first line %q", m)
	}
	if got := entries[2].ContextMap()["not_logged_since_last"]; got != uint64(2999) {
		t.Errorf("not_logged_since_last = %v, want 2999", got)
	}
	for i := range 2 * maxHTTPErrorKinds {
		write(fmt.Sprintf("kind%c%c x", 'a'+i/26, 'a'+i%26))
	}
	if n := len(l.kinds); n != maxHTTPErrorKinds+1 {
		t.Errorf("%d kinds remembered, want %d and other", n, maxHTTPErrorKinds)
	}
}
