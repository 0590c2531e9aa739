package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"
	"go.uber.org/zap/exp/zapslog"
)

// fixedClock stamps every entry with the same time.
type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

func (c fixedClock) NewTicker(d time.Duration) *time.Ticker { return time.NewTicker(d) }

var testTime = time.Date(2026, 3, 4, 5, 6, 7, 89e6, time.UTC)

func newTestLogger(t *testing.T, cfg Config) (*zap.Logger, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	log, err := New(cfg, &buf)
	if err != nil {
		t.Fatal(err)
	}
	return log.WithOptions(zap.WithClock(fixedClock{testTime})), &buf
}

// logPollFailed writes one warning the way the collectors do: a named
// logger with a context field, then string, int, duration and error
// fields. It returns the line of the log call, the entry's source.
func logPollFailed(log *zap.Logger) int {
	log = log.Named("web").With(zap.String("collector", "netdev"))
	_, _, line, _ := runtime.Caller(0)
	log.Warn("poll failed", zap.String("device", "eth0 (PF)"), zap.Int("attempts", 3), zap.Duration("took", 1500*time.Millisecond), zap.Error(errors.New("reading /sys: boom")))
	return line + 1
}

func TestFormats(t *testing.T) {
	logfmt := `time=2026-03-04T05:06:07.089Z level=WARN source=logging_test.go:%d msg="poll failed" collector=netdev component=web device="eth0 (PF)" attempts=3 took=1.5s error="reading /sys: boom"` + "\n"
	tests := []struct {
		format string
		want   string
	}{
		{"logfmt", logfmt},
		{"console", logfmt},
		{"json", `{"time":"2026-03-04T05:06:07.089Z","level":"WARN","source":"logging_test.go:%d","msg":"poll failed","collector":"netdev","component":"web","device":"eth0 (PF)","attempts":3,"took":"1.5s","error":"reading /sys: boom"}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			log, buf := newTestLogger(t, Config{Level: "info", Format: tt.format})
			line := logPollFailed(log)
			if diff := cmp.Diff(fmt.Sprintf(tt.want, line), buf.String()); diff != "" {
				t.Errorf("log line differs (-want +got):\n%s", diff)
			}
			if tt.format == "json" {
				var m map[string]any
				if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
					t.Errorf("not one JSON object: %v", err)
				}
			}
		})
	}
}

func TestLevels(t *testing.T) {
	tests := []struct {
		level string
		want  []string // the messages written, in order
	}{
		{"debug", []string{"d", "i", "w", "e"}},
		{"info", []string{"i", "w", "e"}},
		{"warn", []string{"w", "e"}},
		{"error", []string{"e"}},
	}
	for _, tt := range tests {
		t.Run(tt.level, func(t *testing.T) {
			log, buf := newTestLogger(t, Config{Level: tt.level, Format: "json"})
			log.Debug("d")
			log.Info("i")
			log.Warn("w")
			log.Error("e")
			var got []string
			for _, l := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
				if l == "" {
					continue
				}
				var e struct{ Msg, Level string }
				if err := json.Unmarshal([]byte(l), &e); err != nil {
					t.Fatalf("%q: %v", l, err)
				}
				if want := map[string]string{"d": "DEBUG", "i": "INFO", "w": "WARN", "e": "ERROR"}[e.Msg]; e.Level != want {
					t.Errorf("message %q has level %q, want %q", e.Msg, e.Level, want)
				}
				got = append(got, e.Msg)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("messages written (-want +got):\n%s", diff)
			}
		})
	}
}

// TestThroughSlog covers the exporter-toolkit's logs, which reach the
// logger through zapslog without a caller: they get no source key rather
// than an empty one. (zapslog takes the logger's name as an option; the
// core does not carry it.)
func TestThroughSlog(t *testing.T) {
	log, buf := newTestLogger(t, Config{Level: "info", Format: "logfmt"})
	slog.New(zapslog.NewHandler(log.Core(), zapslog.WithName("web"))).Info("Listening on", "address", "[::]:21180")
	got := buf.String()
	want := `level=INFO msg="Listening on" component=web address=[::]:21180` + "\n"
	if !strings.HasSuffix(got, want) || strings.Contains(got, "source=") {
		t.Errorf("got %q, want a line ending in %q without a source", got, want)
	}
}

// TestReservedKeys checks that a field named like one of the line's own
// keys is renamed instead of writing the key twice.
func TestReservedKeys(t *testing.T) {
	log, buf := newTestLogger(t, Config{Level: "info", Format: "json"})
	log.Info("m", zap.String("time", "t"), zap.String("level", "l"), zap.String("source", "s"))
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"level": "INFO", "logged_time": "t", "logged_level": "l", "logged_source": "s"} {
		if m[k] != want {
			t.Errorf("%s = %v, want %q (line %s)", k, m[k], want, buf.String())
		}
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{Level: "info", Format: "text"}, `unknown log format "text"`},
		{Config{Level: "info", Format: ""}, `unknown log format ""`},
		{Config{Level: "loud", Format: "logfmt"}, `unknown log level "loud"`},
		{Config{Level: "dpanic", Format: "logfmt"}, `unknown log level "dpanic"`},
	}
	for _, tt := range tests {
		_, err := New(tt.cfg, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%+v) = %v, want an error containing %q", tt.cfg, err, tt.want)
		}
	}
}
