package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// stopForLog stops a started exporter with SIGTERM and returns everything
// it logged.
func stopForLog(t *testing.T, e *exporter) string {
	t.Helper()
	if err := e.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-e.done:
		e.done <- err // for the cleanup
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, e.stderr.String())
		}
	case <-time.After(testenv.HangGuard):
		t.Fatalf("no exit after SIGTERM")
	}
	return e.stderr.String()
}

// logfmtLine is one line of log/slog's text handler: time, level, an
// optional source, msg, then key=value pairs whose values are quoted when
// they need to be.
var logfmtLine = regexp.MustCompile(`^time=\S+ level=(DEBUG|INFO|WARN|ERROR)( source=[\w.-]+\.go:\d+)? msg=("(?:[^"\\]|\\.)*"|\S+)( [\w.-]+=("(?:[^"\\]|\\.)*"|\S*))*$`)

// TestLogFormats runs the exporter with each --log.format and checks that
// every line it writes from the start to the exit after SIGTERM is in that
// format, and that the startup line names its source as Prometheus
// components do.
func TestLogFormats(t *testing.T) {
	tests := []struct {
		name string
		args []string
		json bool
	}{
		{"default", nil, false},
		{"logfmt", []string{"--log.format=logfmt"}, false},
		{"console", []string{"--log.format=console"}, false},
		{"json", []string{"--log.format=json"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := start(t, append([]string{"--demo"}, tt.args...)...)
			log := stopForLog(t, e)
			lines := strings.Split(strings.TrimSuffix(log, "\n"), "\n")
			var starts, stops int
			for _, l := range lines {
				var msg, source string
				if tt.json {
					var m map[string]any
					if err := json.Unmarshal([]byte(l), &m); err != nil {
						t.Errorf("not a JSON object: %q: %v", l, err)
						continue
					}
					ts, _ := m["time"].(string)
					if _, err := time.Parse(time.RFC3339Nano, ts); err != nil {
						t.Errorf("time %q is not RFC 3339: %q", ts, l)
					}
					if lvl, _ := m["level"].(string); !regexp.MustCompile(`^(DEBUG|INFO|WARN|ERROR)$`).MatchString(lvl) {
						t.Errorf("level %q: %q", lvl, l)
					}
					msg, _ = m["msg"].(string)
					source, _ = m["source"].(string)
				} else {
					if !logfmtLine.MatchString(l) {
						t.Errorf("not a logfmt line: %q", l)
						continue
					}
					msg = regexp.MustCompile(`msg=("[^"]*"|\S+)`).FindStringSubmatch(l)[1]
					msg = strings.Trim(msg, `"`)
					if m := regexp.MustCompile(` source=(\S+)`).FindStringSubmatch(l); m != nil {
						source = m[1]
					}
				}
				switch msg {
				case "starting nic_exporter":
					starts++
					if !regexp.MustCompile(`^main\.go:\d+$`).MatchString(source) {
						t.Errorf("startup line has source %q, want main.go:<line>: %q", source, l)
					}
				case "nic_exporter stopped":
					stops++
				}
			}
			if starts != 1 || stops != 1 {
				t.Errorf("%d startup and %d stop lines, want one each:\n%s", starts, stops, log)
			}
		})
	}
}

func TestLogFormatRejectsUnknown(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, "--web.listen-address=127.0.0.1:0", "--log.format=text").CombinedOutput()
	if err == nil {
		t.Fatalf("--log.format=text: exit status 0, want an error")
	}
	if want := "must be one of logfmt,json,console"; !strings.Contains(string(out), want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
}
