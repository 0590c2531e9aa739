package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nic-exporter/nic_exporter/deploy/internal/promstack"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// runMainVar makes the test binary run the command instead of the tests,
// so TestDemoStack runs the real command as a child process.
const runMainVar = "DEMOSTACK_TEST_RUN_MAIN"

// exporterBinary is nic_exporter, built once by TestMain.
var exporterBinary string

func TestMain(m *testing.M) {
	if os.Getenv(runMainVar) == "1" {
		main()
		os.Exit(0)
	}
	bin, cleanup, err := testenv.BuildExporter("../../../cmd/nic_exporter")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	exporterBinary = bin
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// stackWait bounds each wait of TestDemoStack. It is a hang guard, not a
// measure: every wait ends as soon as its line is printed, and on a busy
// machine Prometheus' scrapes and evaluations fall behind their schedule.
const stackWait = 3 * time.Minute

// output collects the lines a child prints.
type output struct {
	mu    sync.Mutex
	lines []string
	done  bool
}

func (o *output) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		o.mu.Lock()
		o.lines = append(o.lines, sc.Text())
		o.mu.Unlock()
	}
	o.mu.Lock()
	o.done = true
	o.mu.Unlock()
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return strings.Join(o.lines, "\n")
}

// wait returns the submatches of the first line matching re, waiting for
// it until the output ends or stackWait has passed.
func (o *output) wait(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	deadline := time.Now().Add(stackWait)
	for {
		o.mu.Lock()
		for _, l := range o.lines {
			if m := re.FindStringSubmatch(l); m != nil {
				o.mu.Unlock()
				return m
			}
		}
		done := o.done
		o.mu.Unlock()
		if done || time.Now().After(deadline) {
			t.Fatalf("demostack printed no line matching %q (output ended: %v; hang guard %v)", re, done, stackWait)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// all returns the submatches of every line matching re.
func (o *output) all(re *regexp.Regexp) [][]string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out [][]string
	for _, l := range o.lines {
		if m := re.FindStringSubmatch(l); m != nil {
			out = append(out, m)
		}
	}
	return out
}

// procStart returns the start time (in clock ticks since boot) and the
// parent pid of a process, from /proc/<pid>/stat, so a pid that was
// reused is not taken for the process it named.
func procStart(pid int) (start string, ppid int, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, err
	}
	// The command name (field 2) may hold spaces; the fields after its
	// closing parenthesis start with field 3, the state.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 20 {
		return "", 0, fmt.Errorf("/proc/%d/stat: %d fields after the name", pid, len(f))
	}
	ppid, err = strconv.Atoi(f[1])
	return f[19], ppid, err
}

// child is a process demostack started.
type child struct {
	name  string
	pid   int
	start string
}

// alive reports whether the child still exists.
func (c child) alive() bool {
	start, _, err := procStart(c.pid)
	return err == nil && start == c.start
}

var (
	tempDirLine   = regexp.MustCompile(`^temporary directory (\S+)$`)
	startedLine   = regexp.MustCompile(`^started (\S+) \(pid (\d+)\)$`)
	upLine        = regexp.MustCompile(`^The demo stack is up`)
	promLine      = regexp.MustCompile(`^  Prometheus +http://(\S+)/alerts`)
	stoppedLine   = regexp.MustCompile(`^stopped every child, removed (\S+)$`)
	firstPageRE   = `^\[\+(\d+)m([0-9.]+)s\] PAGE +firing +%s `
	pageAlert     = "NICDevlinkFwFatalError" // deploy/prometheus/alerts.yml, severity page, for: 0m
	pageFault     = "fw_fatal"
	pageFaultAt   = 5 * time.Second
	stackPrograms = []string{"nic_exporter", "alertmanager", "prometheus"}
)

// TestDemoStack runs demostack as make demo-stack does, on free ports
// with a short fault schedule (fw_fatal 5 s after the demo start), and
// the shipped rules, routing and timings: the webhook prints the page
// NICDevlinkFwFatalError. Then SIGINT stops it: it exits 0, every child
// it started has exited and its temporary directory is gone. The time
// from the fault's start to the page is logged, not asserted.
func TestDemoStack(t *testing.T) {
	testenv.LookPath(t, "prometheus")
	if _, err := promstack.LookAlertmanager(); err != nil {
		testenv.Require(t, false, "alertmanager or prometheus-alertmanager in $PATH")
	}
	// The command's temporary directory lands in the test's, which is
	// removed even if the command is killed before its own cleanup.
	tmp := t.TempDir()
	cmd := exec.Command(os.Args[0], "--exporter="+exporterBinary, "--deploy-dir=../..",
		"--faults="+fmt.Sprintf("%s@%v", pageFault, pageFaultAt),
		"--port.exporter=0", "--port.prometheus=0", "--port.alertmanager=0", "--port.webhook=0")
	cmd.Env = append(os.Environ(), runMainVar+"=1", "TMPDIR="+tmp)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out := &output{}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	readDone := make(chan struct{})
	go func() {
		out.read(stdout)
		close(readDone)
	}()
	// exited is closed once the command has exited; waitErr is then how.
	exited := make(chan struct{})
	var waitErr error
	go func() {
		<-readDone // Wait closes the pipe; read it to the end first
		waitErr = cmd.Wait()
		close(exited)
	}()
	var children []child
	t.Cleanup(func() {
		// Only after a failure is anything left: kill the command, then
		// any child of it that is still there.
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
		for _, c := range children {
			if c.alive() {
				_ = syscall.Kill(c.pid, syscall.SIGKILL)
			}
		}
		if t.Failed() {
			t.Logf("demostack output:\n%s\nstderr:\n%s", out, &stderr)
		}
	})

	dir := out.wait(t, tempDirLine)[1]
	out.wait(t, upLine)
	var names []string
	for _, m := range out.all(startedLine) {
		pid, _ := strconv.Atoi(m[2])
		start, ppid, err := procStart(pid)
		if err != nil {
			t.Fatalf("%s (pid %d): %v", m[1], pid, err)
		}
		if ppid != cmd.Process.Pid {
			t.Errorf("%s (pid %d) has parent %d, not demostack (%d)", m[1], pid, ppid, cmd.Process.Pid)
		}
		children = append(children, child{name: m[1], pid: pid, start: start})
		names = append(names, m[1])
	}
	if diff := cmp.Diff(stackPrograms, names); diff != "" {
		t.Errorf("programs started (-want +got):\n%s", diff)
	}
	prom := out.wait(t, promLine)[1]
	resp, err := http.Get("http://" + prom + "/-/ready")
	if err != nil {
		t.Fatalf("the Prometheus URL demostack printed: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("the Prometheus URL demostack printed: HTTP %d", resp.StatusCode)
	}

	page := out.wait(t, regexp.MustCompile(fmt.Sprintf(firstPageRE, pageAlert)))
	mins, _ := strconv.Atoi(page[1])
	secs, _ := strconv.ParseFloat(page[2], 64)
	at := time.Duration(mins)*time.Minute + time.Duration(secs*float64(time.Second))
	t.Logf("%s page printed %v after the demo start, %v after the %s fault started (scrape and evaluation every 15 s, the shipped group_wait of pages 10 s)",
		pageAlert, at, at-pageFaultAt, pageFault)

	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		if waitErr != nil {
			t.Errorf("demostack after SIGINT: %v", waitErr)
		}
	case <-time.After(testenv.HangGuard):
		t.Fatalf("demostack did not exit within %v of SIGINT", testenv.HangGuard)
	}
	for _, c := range children {
		if c.alive() {
			t.Errorf("%s (pid %d) still runs after demostack exited", c.name, c.pid)
		}
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary directory %s: %v, want it removed", dir, err)
	}
	if m := out.all(stoppedLine); len(m) != 1 || m[0][1] != dir {
		t.Errorf("demostack did not say it removed %s: %v", dir, m)
	}
}

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    func(*config)
		wantErr string
	}{
		{name: "defaults", want: func(c *config) {}},
		{name: "ports and faults", args: []string{"--port.prometheus=0", "--port.webhook=15001", "--faults=fw@1m"},
			want: func(c *config) { c.Ports.Prometheus, c.Ports.Webhook, c.Faults = 0, 15001, "fw@1m" }},
		{name: "healthy host", args: []string{"--faults="}, want: func(c *config) { c.Faults = "" }},
		{name: "port out of range", args: []string{"--port.exporter=70000"}, wantErr: "--port.exporter=70000: not a port"},
		{name: "zero interval", args: []string{"--scrape-interval=0s"}, wantErr: "must be positive"},
		{name: "stray argument", args: []string{"extra"}, wantErr: "unexpected arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseFlags(tt.args, io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := config{Exporter: "nic_exporter", DeployDir: ".", Faults: defaultFaults,
				Ports:          ports{Exporter: 21180, Prometheus: 9090, Alertmanager: 9093, Webhook: 5001},
				ScrapeInterval: 15 * time.Second, EvaluationInterval: 15 * time.Second}
			tt.want(&want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}

func TestElapsed(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                                     "+0m00.0s",
		38*time.Second + 840*time.Millisecond: "+0m38.8s",
		62*time.Second + 300*time.Millisecond: "+1m02.3s",
		-1500 * time.Millisecond:              "-0m01.5s",
	} {
		if got := elapsed(d); got != want {
			t.Errorf("elapsed(%v) = %q, want %q", d, got, want)
		}
	}
}
