package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// waitExit waits up to within for the exporter to exit and returns its
// exit status, or fails the test.
func waitExit(t *testing.T, e *exporter, within time.Duration) int {
	t.Helper()
	select {
	case err := <-e.done:
		e.done <- err // for the cleanup
		return e.cmd.ProcessState.ExitCode()
	case <-time.After(within):
		t.Fatalf("no exit %s after the signal", within)
		return 0
	}
}

// startServing starts the exporter and waits until it serves /healthz,
// without waiting for /readyz.
func startServing(t *testing.T, args ...string) *exporter {
	t.Helper()
	e := &exporter{addr: freePort(t), stderr: &lockedBuffer{}, done: make(chan error, 1)}
	e.cmd = startCmd(t, e, args...)
	deadline := time.Now().Add(testenv.HangGuard)
	for {
		resp, err := http.Get("http://" + e.addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return e
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("exporter not serving after 20 s: %v\n%s", err, e.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSIGHUPIsIgnored sends SIGHUP, which used to end the process with
// status 129: the exporter logs that it reloads nothing and keeps serving.
func TestSIGHUPIsIgnored(t *testing.T) {
	e := start(t, "--demo")
	deadline := time.Now().Add(testenv.HangGuard)
	for i := 1; i <= 2; i++ { // a second one: the first did not use up the handling
		if err := e.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		for strings.Count(e.stderr.String(), "SIGHUP ignored") < i {
			select {
			case err := <-e.done:
				e.done <- err
				t.Fatalf("SIGHUP %d ended the exporter: %v", i, err)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("SIGHUP %d not logged within 10 s", i)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	e.get(t, "/metrics", nil)
	if err := e.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, e, testenv.HangGuard); code != 0 {
		t.Errorf("exit status %d after SIGTERM, want 0", code)
	}
}

// TestSIGTERMDuringAStalledScrape stops the exporter while a scrape's
// client does not read: the exporter closes it after the shutdown grace
// and exits 0, as the README says (it exited 1).
func TestSIGTERMDuringAStalledScrape(t *testing.T) {
	e := start(t, append([]string{"--web.shutdown-grace=1s"}, demoArgs...)...)
	conn := dialSmallWindow(t, e.addr)
	if _, err := io.WriteString(conn, strings.Repeat("GET /metrics HTTP/1.1\r\nHost: exporter\r\n\r\n", 64)); err != nil {
		t.Fatal(err)
	}
	status := make([]byte, len("HTTP/1.1 200"))
	if _, err := io.ReadFull(conn, status); err != nil {
		t.Fatal(err)
	}
	// Between two pipelined answers the connection is briefly idle, and
	// Shutdown closes idle connections at once: let the buffers fill
	// (milliseconds) so the connection is stalled inside a scrape.
	time.Sleep(500 * time.Millisecond)
	for i := 0; i < 2; i++ {
		_, body := scrapeStatus(t, e.addr)
		if n := sampleValue(body, `nic_exporter_scrapes_in_flight{profile="default"}`); n < 2 { // the stalled scrape and this one
			t.Fatalf("scrapes in flight: %v, want the stalled one too", n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := e.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, e, testenv.HangGuard); code != 0 {
		t.Errorf("exit status %d after SIGTERM during a stalled scrape, want 0", code)
	}
	// The log line, not the elapsed time, shows that the scrape in
	// flight was given its grace and the grace ran out.
	if !strings.Contains(e.stderr.String(), "shutdown grace expired") {
		t.Errorf("the scrape in flight did not get its grace: the expired grace is not logged")
	}
}

// TestFIFOPathsDoNotHang gives the exporter a FIFO that nobody writes as
// the kernel log, the rules file and the network namespace: each used to
// hold the startup in open(2), so that even SIGTERM no longer ended the
// process. Each is now refused at startup, at once.
func TestFIFOPathsDoNotHang(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		flag string
		want string
		code int
	}{
		{"--collector.kmsg.path", "is not a character device", 2},
		{"--collector.kmsg.rules-file", "not a regular file (named pipe)", 1},
		{"--collector.applog.rules-file", "not a regular file (named pipe)", 1},
		{"--collector.ethtool.netns", "not a namespace file", 1},
		{"--collector.netdev.netns", "not a namespace file", 1},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		out, err := exec.CommandContext(ctx, binary, "--web.listen-address=127.0.0.1:0", tt.flag+"="+fifo).CombinedOutput()
		timedOut := ctx.Err() != nil
		cancel()
		if timedOut {
			t.Errorf("%s=FIFO: the exporter hung", tt.flag)
			continue
		}
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != tt.code || !strings.Contains(string(out), tt.flag) || !strings.Contains(string(out), tt.want) {
			t.Errorf("%s=FIFO: %v, want exit status %d and an error naming the flag that says %q:\n%s", tt.flag, err, tt.code, tt.want, out)
		}
	}
}
