package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRun feeds recorded go test -json streams to run and checks what it
// prints and its exit code.
func TestRun(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		wantCode int
		want     []string // lines the output must contain, in order
		notWant  []string
	}{
		{
			name: "pass and skip",
			in: `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:3: chatter\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"--- PASS: TestA (0.00s)\n"}
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"run","Package":"p","Test":"TestQemu"}
{"Action":"output","Package":"p","Test":"TestQemu","Output":"=== RUN   TestQemu\n"}
{"Action":"output","Package":"p","Test":"TestQemu","Output":"    env.go:42: qemu-system-x86_64 not found (set NIC_EXPORTER_REQUIRE_ALL=1 to fail instead)\n"}
{"Action":"output","Package":"p","Test":"TestQemu","Output":"--- SKIP: TestQemu (0.00s)\n"}
{"Action":"skip","Package":"p","Test":"TestQemu"}
{"Action":"output","Package":"p","Output":"ok  \tp\t0.01s\n"}
{"Action":"pass","Package":"p"}
`,
			wantCode: 0,
			want:     []string{"ok  \tp\t0.01s", "=== test summary", "SKIP p TestQemu: env.go:42: qemu-system-x86_64 not found (set NIC_EXPORTER_REQUIRE_ALL=1 to fail instead)", "1 passed, 0 failed, 1 skipped"},
			notWant:  []string{"chatter"},
		},
		{
			name: "failure output kept",
			in: `{"Action":"run","Package":"p","Test":"TestB"}
{"Action":"output","Package":"p","Test":"TestB","Output":"=== RUN   TestB\n"}
{"Action":"output","Package":"p","Test":"TestB","Output":"    b_test.go:9: got 1, want 2\n"}
{"Action":"output","Package":"p","Test":"TestB","Output":"--- FAIL: TestB (0.00s)\n"}
{"Action":"fail","Package":"p","Test":"TestB"}
{"Action":"output","Package":"p","Output":"FAIL\tp\t0.01s\n"}
{"Action":"fail","Package":"p"}
`,
			wantCode: 1,
			want:     []string{"b_test.go:9: got 1, want 2", "--- FAIL: TestB", "FAIL\tp\t0.01s", "0 passed, 1 failed, 0 skipped; 1 packages failed"},
		},
		{
			// A stack test's error lines, then the logs of the
			// processes it ran, printed at cleanup: the summary
			// repeats the message lines, not the continuation lines.
			name: "failure messages repeated in the summary",
			in: `{"Action":"run","Package":"d","Test":"TestStack"}
{"Action":"output","Package":"d","Test":"TestStack","Output":"=== RUN   TestStack\n"}
{"Action":"output","Package":"d","Test":"TestStack","Output":"    faults_test.go:455: wd_expired: NICENAWatchdogExpired does not fire in time\n"}
{"Action":"output","Package":"d","Test":"TestStack","Output":"    stack_test.go:120: prometheus output:\n"}
{"Action":"output","Package":"d","Test":"TestStack","Output":"        ts=2026-11-28T23:23:26.186Z level=info msg=\"Stopping rule manager...\"\n"}
{"Action":"output","Package":"d","Test":"TestStack","Output":"        ts=2026-11-28T23:23:26.194Z level=info msg=\"See you next time!\"\n"}
{"Action":"output","Package":"d","Test":"TestStack","Output":"--- FAIL: TestStack (300.68s)\n"}
{"Action":"fail","Package":"d","Test":"TestStack","Elapsed":300.68}
{"Action":"output","Package":"d","Output":"FAIL\td\t437.698s\n"}
{"Action":"fail","Package":"d"}
`,
			wantCode: 1,
			want: []string{"See you next time!", "=== test summary", "SLOW d TestStack: 300.7s",
				"FAIL d TestStack, its last messages:\n    faults_test.go:455: wd_expired: NICENAWatchdogExpired does not fire in time\n    stack_test.go:120: prometheus output:\n",
				"0 passed, 1 failed"},
		},
		{
			name: "build failure",
			in: `{"ImportPath":"p [p.test]","Action":"build-output","Output":"p/x_test.go:3:1: syntax error\n"}
{"ImportPath":"p [p.test]","Action":"build-fail"}
{"Action":"output","Package":"p","Output":"FAIL\tp [build failed]\n"}
{"Action":"fail","Package":"p"}
`,
			wantCode: 1,
			want:     []string{"syntax error", "FAIL\tp [build failed]", "packages failed"},
		},
		{
			name:     "no events",
			in:       "go: cannot find main module\n",
			wantCode: 1,
			want:     []string{"go: cannot find main module", "no test events read"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			if code := run(strings.NewReader(tt.in), &out); code != tt.wantCode {
				t.Errorf("exit code %d, want %d", code, tt.wantCode)
			}
			rest := out.String()
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Errorf("output lacks %q (in order):\n%s", w, out.String())
					continue
				}
				rest = rest[i+len(w):]
			}
			for _, nw := range tt.notWant {
				if strings.Contains(out.String(), nw) {
					t.Errorf("output has %q, the output of a passing test:\n%s", nw, out.String())
				}
			}
		})
	}
}

// TestRealGoTest runs the real go test -json on a small module with a
// passing, a skipping and a failing test, and checks the summary.
func TestRealGoTest(t *testing.T) {
	events := goTestJSON(t, map[string]string{
		"m_test.go": `package m

import "testing"

func TestPass(t *testing.T) {}
func TestSkip(t *testing.T) { t.Skip("needs a ConnectX card") }
func TestFail(t *testing.T) { t.Error("broken on purpose") }
`,
	}) // go test exits 1: TestFail fails
	var out bytes.Buffer
	if code := run(bytes.NewReader(events), &out); code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	for _, w := range []string{"broken on purpose", "SKIP example.com/m TestSkip: m_test.go:6: needs a ConnectX card", "1 passed, 1 failed, 1 skipped"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("output lacks %q:\n%s", w, out.String())
		}
	}
}

// TestRealGoTestTimeoutAndPanic runs the real go test -json on a package
// whose test hangs past -timeout and one whose goroutine panics, and
// checks that the summary names each unfinished test with its last
// output, the test binary's report and the hung test's stack.
func TestRealGoTestTimeoutAndPanic(t *testing.T) {
	// The timeout is a property of the test binaries under test, not an
	// assertion about this test's time.
	events := goTestJSON(t, map[string]string{
		"hang/hang_test.go": `package hang

import (
	"testing"
	"time"
)

func TestQuick(t *testing.T) {}

func TestHang(t *testing.T) {
	t.Log("waiting for the fabric")
	t.Run("sub", func(t *testing.T) {
		t.Log("polling switch 7")
		time.Sleep(time.Hour)
	})
}
`,
		"crash/crash_test.go": `package crash

import (
	"testing"
	"time"
)

func TestCrash(t *testing.T) {
	t.Log("starting the collector")
	go func() { panic("boom in a collector goroutine") }()
	time.Sleep(time.Hour)
}
`,
	}, "-timeout=3s") // go test exits 1
	var out bytes.Buffer
	if code := run(bytes.NewReader(events), &out); code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	got := out.String()
	for _, w := range []string{
		// The hung test and its subtest, with their own output and
		// go test's report of what was running.
		"--- UNFINISHED: example.com/m/hang TestHang (still running when the package failed)",
		"waiting for the fabric",
		"--- UNFINISHED: example.com/m/hang TestHang/sub (still running when the package failed)",
		"polling switch 7",
		"panic: test timed out after 3s",
		"TestHang/sub",
		"hang.TestHang.func1(",
		// The crash, named with its test.
		"--- UNFINISHED: example.com/m/crash TestCrash",
		"starting the collector",
		"panic: boom in a collector goroutine",
		"crash.TestCrash.func1(",
		"=== test summary",
		"UNFINISHED example.com/m/hang TestHang: still running when the package failed",
		"UNFINISHED example.com/m/crash TestCrash",
		"1 passed, 3 failed, 0 skipped; 2 packages failed",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("output lacks %q:\n%s", w, got)
		}
	}
}

// goTestJSON writes files (paths relative to a new module example.com/m)
// into a temporary directory and returns what the real go test -json
// prints for all its packages with the extra flags.
func goTestJSON(t *testing.T, files map[string]string, flags ...string) []byte {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go not in PATH: %v", err)
	}
	dir := t.TempDir()
	files["go.mod"] = "module example.com/m\n\ngo 1.22\n"
	for name, body := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(goBin, append(append([]string{"test", "-json", "-count=1"}, flags...), "./...")...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	events, _ := cmd.Output() // a failing test makes go test exit 1
	return events
}
