package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"golang.org/x/crypto/bcrypt"

	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite golden files and the generated part of docs/metrics.md")

// binary is the exporter built once for all end-to-end tests.
var binary string

func TestMain(m *testing.M) {
	flag.Parse()
	bin, cleanup, err := testenv.BuildExporter(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = bin
	code := m.Run()
	cleanup()
	os.Exit(code)
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// lockedBuffer is a bytes.Buffer that a test may read while the process
// writes to it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// exporter is a running nic_exporter process.
type exporter struct {
	cmd    *exec.Cmd
	addr   string
	stderr *lockedBuffer
	done   chan error
}

// startCmd starts the exporter on e.addr with args and kills it when the
// test ends.
func startCmd(t *testing.T, e *exporter, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"--web.listen-address=" + e.addr}, args...)...)
	cmd.Stderr = e.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { e.done <- cmd.Wait() }()
	t.Cleanup(func() {
		// SIGTERM first, so a demo host removes its directory; kill
		// only an exporter that does not stop within the hang guard:
		// on a busy machine a stop can take longer than a few seconds,
		// and a demo exporter killed early leaves its directory in /tmp.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-e.done:
		case <-time.After(testenv.HangGuard):
			_ = cmd.Process.Kill()
			<-e.done
		}
		if t.Failed() {
			t.Logf("exporter log:\n%s", e.stderr.String())
		}
	})
	return cmd
}

func start(t *testing.T, args ...string) *exporter {
	t.Helper()
	e := &exporter{addr: freePort(t), stderr: &lockedBuffer{}, done: make(chan error, 1)}
	e.cmd = startCmd(t, e, args...)
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + e.addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return e
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("exporter not ready after 20 s: %v\n%s", err, e.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (e *exporter) get(t *testing.T, path string, header map[string]string) (string, http.Header) {
	t.Helper()
	req, err := http.NewRequest("GET", "http://"+e.addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s\n%s", path, resp.Status, body)
	}
	return string(body), resp.Header
}

// demoArgs runs the demo with a frozen clock and faults, so the scrape is
// reproducible.
var demoArgs = []string{"--demo", "--demo.elapsed=10m", "--demo.faults=pcie_degraded@5m,link_flap@1m-3m,fw_fatal@4m,fw@2m-3m,wd_expired@6m,ib_symbol_errors@8m,vma_no_buffers@7m"}

// volatile lists the exporter's own families whose values depend on
// timing; the golden file keeps their series but not their values.
var volatile = map[string]bool{
	"nic_exporter_collector_poll_duration_seconds":          true,
	"nic_exporter_collector_last_success_timestamp_seconds": true,
	"nic_exporter_scrape_duration_seconds_bucket":           true,
	"nic_exporter_scrape_duration_seconds_sum":              true,
	"nic_exporter_scrape_duration_seconds_count":            true,
	// The verdict is computed on its own schedule: a scrape right after
	// the collectors' first polls may come before its first evaluation.
	"nic_exporter_node_condition": true,
}

// normalize keeps the families a golden file can pin down: everything
// but the Go runtime and process metrics, with volatile values masked.
func normalize(scrape string) string {
	var out strings.Builder
	sc := bufio.NewScanner(strings.NewReader(scrape))
	sc.Buffer(make([]byte, 0, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		name := line
		if strings.HasPrefix(line, "# ") {
			if f := strings.Fields(line); len(f) >= 3 {
				name = f[2]
			}
		} else if i := strings.IndexAny(line, "{ "); i >= 0 {
			name = line[:i]
		}
		if strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") || name == "nic_exporter_build_info" {
			continue
		}
		if volatile[name] && !strings.HasPrefix(line, "#") {
			line = line[:strings.LastIndexByte(line, ' ')] + " <volatile>"
		}
		out.WriteString(line + "\n")
	}
	return out.String()
}

func TestDemoScrapeGolden(t *testing.T) {
	e := start(t, demoArgs...)
	scrape, hdr := e.get(t, "/metrics", nil)
	if ct := hdr.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type = %q", ct)
	}
	got := normalize(scrape)
	path := filepath.Join("testdata", "demo.prom")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/nic_exporter -update)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("demo scrape differs from %s (-want +got); run go test ./cmd/nic_exporter -update if intended:\n%s", path, diff)
	}
	// The detail profile of the same snapshots has a golden file of its own.
	detail, _ := e.get(t, "/metrics/detail", nil)
	detailPath := filepath.Join("testdata", "demo-detail.prom")
	if *update {
		if err := os.WriteFile(detailPath, []byte(detail), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wantDetail, err := os.ReadFile(detailPath)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/nic_exporter -update)", err)
	}
	if diff := cmp.Diff(string(wantDetail), detail); diff != "" {
		t.Errorf("demo detail scrape differs from %s (-want +got); run go test ./cmd/nic_exporter -update if intended:\n%s", detailPath, diff)
	}
	// No series twice and no family split, over all collectors together
	// (each collector's own tests check its output alone).
	for path, text := range map[string]string{"/metrics": scrape, "/metrics/detail": detail} {
		if err := exposition.Check([]byte(text)); err != nil {
			t.Errorf("%s: %v", path, err)
		}
	}
	for _, must := range []string{
		`nic_pcie_link_degraded{device="enp8s0f1np1",pci_address="0000:08:00.1"} 1`,
		`nic_netdev_carrier_changes_total{device="enp8s0f1np1"} 26`,
		`nic_exporter_collector_up{collector="netdev"} 1`,
	} {
		if !strings.Contains(scrape, must) {
			t.Errorf("demo scrape lacks %q", must)
		}
	}
	if !strings.Contains(scrape, "nic_exporter_build_info{") || !strings.Contains(scrape, "go_goroutines ") || !strings.Contains(scrape, "process_resident_memory_bytes ") {
		t.Errorf("build info, Go or process metrics missing")
	}
}

func TestDemoScrapePassesPromtool(t *testing.T) {
	promtool := testenv.LookPath(t, "promtool")
	e := start(t, demoArgs...)
	for _, path := range []string{"/metrics", "/metrics/detail"} {
		scrape, _ := e.get(t, path, nil)
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = strings.NewReader(scrape)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("promtool check metrics of %s: %v\n%s", path, err, out)
		}
	}
}

func TestOpenMetricsAndGzip(t *testing.T) {
	e := start(t, demoArgs...)
	body, hdr := e.get(t, "/metrics", map[string]string{"Accept": "application/openmetrics-text;version=1.0.0"})
	if ct := hdr.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text; version=1.0.0") {
		t.Errorf("Content-Type = %q", ct)
	}
	if !strings.HasSuffix(body, "# EOF\n") || strings.Count(body, "# EOF") != 1 {
		t.Errorf("OpenMetrics body must end with exactly one # EOF")
	}
	if !strings.Contains(body, "# TYPE nic_netdev_rx_bytes counter\n") {
		t.Errorf("OpenMetrics counter family must be named without _total")
	}
	// Go's client decompresses transparently when it asked for gzip.
	resp, err := http.Get("http://" + e.addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if !resp.Uncompressed {
		t.Errorf("the default Go client asked for gzip but got an uncompressed body")
	}
	// Reading to the end verifies the gzip trailer's CRC-32 and size.
	plain, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the gzip scrape: %v", err)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(plain))
	if err != nil {
		t.Fatalf("gzip scrape does not parse: %v", err)
	}
	if len(fams["nic_netdev_info"].GetMetric()) != 4 {
		t.Errorf("gzip scrape: %d nic_netdev_info series, want 4", len(fams["nic_netdev_info"].GetMetric()))
	}
}

func TestSIGTERMExitsCleanly(t *testing.T) {
	e := start(t, demoArgs...)
	e.get(t, "/metrics", nil)
	if err := e.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-e.done:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v, want status 0\n%s", err, e.stderr.String())
		}
		e.done <- err // for the cleanup
	case <-time.After(15 * time.Second):
		t.Fatalf("no exit 15 s after SIGTERM")
	}
}

func TestRealHostInterfaces(t *testing.T) {
	entries, err := os.ReadDir("/sys/class/net")
	testenv.Require(t, err == nil, "/sys/class/net")
	e := start(t, "--path.sysfs=/sys")
	scrape, _ := e.get(t, "/metrics", nil)
	for _, en := range entries {
		if !strings.Contains(scrape, `nic_netdev_info{device="`+en.Name()+`"`) {
			t.Errorf("real interface %s missing from the scrape", en.Name())
		}
	}
}

func TestStartupErrors(t *testing.T) {
	// Flags that parse but cannot work are refused with status 2, like
	// kingpin's own errors; errors found while building the collectors
	// or the demo host end the process with status 1.
	fifo := filepath.Join(t.TempDir(), "web.yml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
		code int
	}{
		{[]string{"--collector.netdev.device-include=(["}, "--collector.netdev.device-include", 1},
		{[]string{"--demo", "--demo.faults=nonsense@1m"}, "unknown demo fault", 1},
		{[]string{"--demo.faults=link_flap@1m"}, "need --demo", 2},
		{[]string{"--demo.start=2026-11-25T10:00:00Z"}, "need --demo", 2},
		{[]string{"--demo", "--demo.start=yesterday"}, "--demo.start: want an RFC 3339 time", 2},
		{[]string{"--demo", "--demo.start=2026-11-25T10:00:00Z", "--demo.elapsed=1m"}, "--demo.start and --demo.elapsed exclude each other", 2},
		{[]string{"--demo", "--demo.start=2999-01-01T00:00:00Z"}, "demo start 2999-01-01T00:00:00Z is in the future", 1},
		{[]string{"--log.level=loud"}, "must be one of debug,info,warn,error", 2},
		{[]string{"--demo", "--collector.netdev.interval=0"}, "--collector.netdev.interval must be positive", 2},
		{[]string{"--demo", "--collector.kmsg.interval=-5s"}, "--collector.kmsg.interval must be positive", 2},
		{[]string{"--demo", "--collector.netdev.timeout=0s"}, "--collector.netdev.timeout must be positive", 2},
		{[]string{"--demo", "--collector.netdev.interval=1ns"}, "--collector.netdev.interval must be at least 100ms, got 1ns", 2},
		{[]string{"--demo", "--collector.vma.interval=99ms"}, "--collector.vma.interval must be at least 100ms", 2},
		{[]string{"--demo", "--web.telemetry-path="}, "--web.telemetry-path must not be empty", 2},
		{[]string{"--demo", "--web.telemetry-path=metrics"}, `--web.telemetry-path "metrics" must start with /`, 2},
		{[]string{"--demo", "--web.telemetry-path=/healthz"}, `--web.telemetry-path "/healthz" is taken by another endpoint`, 2},
		{[]string{"--demo", "--web.telemetry-path=/readyz"}, `--web.telemetry-path "/readyz" is taken by another endpoint`, 2},
		{[]string{"--demo", "--web.telemetry-path=/"}, `--web.telemetry-path "/" is taken by another endpoint`, 2},
		{[]string{"--demo", "--web.telemetry-path=/metrics/../healthz"}, `--web.telemetry-path "/metrics/../healthz" must be a clean path`, 2},
		{[]string{"--demo", "--web.telemetry-path=/metrics/"}, `--web.telemetry-path "/metrics/" must be a clean path`, 2},
		{[]string{"--demo", "--web.telemetry-path=/a b"}, `--web.telemetry-path "/a b" may not contain`, 2},
		{[]string{"--demo", "--web.telemetry-path=/{x}"}, `--web.telemetry-path "/{x}" may not contain`, 2},
		{[]string{"--demo", "--web.write-timeout=0s"}, "--web.write-timeout must be positive", 2},
		{[]string{"--demo", "--web.idle-timeout=0s"}, "--web.idle-timeout must be positive", 2},
		{[]string{"--demo", "--web.read-header-timeout=-1s"}, "--web.read-header-timeout must be positive", 2},
		{[]string{"--demo", "--web.max-requests=-1"}, "--web.max-requests must not be negative", 2},
		// A timeout of 1ns parsed and made the collector down at every
		// poll; the phy module interval, the series budget and the
		// evidence limits had no check at all.
		{[]string{"--demo", "--collector.netdev.timeout=1ns"}, "--collector.netdev.timeout must be at least 100ms, got 1ns", 2},
		{[]string{"--demo", "--collector.devlink.timeout=99ms"}, "--collector.devlink.timeout must be at least 100ms", 2},
		{[]string{"--demo", "--collector.phy.module-interval=0s"}, "--collector.phy.module-interval must be positive, got 0s", 2},
		{[]string{"--demo", "--collector.phy.module-interval=1ns"}, "--collector.phy.module-interval must be at least 100ms, got 1ns", 2},
		{[]string{"--demo", "--web.series-budget=-1"}, "--web.series-budget must not be negative (0 turns the check off), got -1", 2},
		{[]string{"--demo", "--collector.devlink.capture-max-files=-1"}, "--collector.devlink.capture-max-files must be positive, got -1", 2},
		{[]string{"--demo", "--collector.devlink.capture-max-bytes=-1"}, "--collector.devlink.capture-max-bytes must be positive, got -1", 2},
		{[]string{"--path.sysfs=/nonexistent"}, "--path.sysfs: stat /nonexistent", 2},
		// A web config file that is no regular file: a FIFO used to block
		// every request (the server said "Listening" and answered nothing).
		{[]string{"--demo", "--web.config.file=" + fifo}, "--web.config.file: open " + fifo + ": not a regular file (named pipe)", 2},
		// Explicit paths that do not exist are refused naming the flag
		// (they used to read as "nothing to collect").
		{[]string{"--path.procfs=/nonexistent/proc"}, "--path.procfs: stat /nonexistent/proc", 2},
		{[]string{"--collector.vma.stats-dir=/nonexistent/vma"}, "--collector.vma.stats-dir: stat /nonexistent/vma", 2},
		{[]string{"--collector.kmsg.path=/nonexistent/kmsg"}, "--collector.kmsg.path: stat /nonexistent/kmsg", 2},
		{[]string{"--collector.kmsg.path=/dev/zero/.."}, "--collector.kmsg.path", 2},
		{[]string{"--collector.applog.files=/nonexistent/log/*.log"}, `--collector.applog.files "/nonexistent/log/*.log": stat /nonexistent/log`, 2},
		// Unusable files fail at once with a clear error (a rules file
		// of /dev/zero used to be read until memory ran out).
		{[]string{"--collector.kmsg.rules-file=/dev/zero"}, "--collector.kmsg.rules-file: reading rules file: open /dev/zero: not a regular file (character device)", 1},
		{[]string{"--collector.ethtool.netns=/proc/self/stat"}, "not a namespace file", 1},
		{[]string{"--collector.netdev.netns=/proc/self/stat"}, "--collector.netdev.netns: network namespace /proc/self/stat: not a namespace file", 1},
	}
	for _, tt := range tests {
		// A bound, so that an exporter that starts instead of refusing
		// the flags fails the test rather than hanging it.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, binary, append([]string{"--web.listen-address=127.0.0.1:0"}, tt.args...)...)
		// SIGTERM first, so that an exporter that started where a
		// refusal was expected removes its demo directory; SIGKILL
		// only if that does not end it.
		cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
		cmd.WaitDelay = 10 * time.Second
		out, err := cmd.CombinedOutput()
		cancel()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != tt.code {
			t.Errorf("%v: %v, want exit status %d", tt.args, err, tt.code)
		}
		if !strings.Contains(string(out), tt.want) {
			t.Errorf("%v: output lacks %q:\n%s", tt.args, tt.want, out)
		}
		if strings.Contains(string(out), "goroutine ") {
			t.Errorf("%v: a stack trace instead of a clear message:\n%s", tt.args, out)
		}
	}
}

const (
	docsBegin = "<!-- BEGIN GENERATED METRICS: go test ./cmd/nic_exporter -update -->"
	docsEnd   = "<!-- END GENERATED METRICS -->"
)

// metricsTable renders every family of a default and a detail scrape,
// except the standard Go and process metrics, as a Markdown table; the
// Endpoint column says where each family is served. extra are more
// default scrapes (of a demo host in another state) whose families the
// first two lack are added.
func metricsTable(t *testing.T, scrape, detail string, extra ...string) string {
	t.Helper()
	parse := func(what, text string) map[string]*dto.MetricFamily {
		t.Helper()
		parser := expfmt.NewTextParser(model.LegacyValidation)
		fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
		if err != nil {
			t.Fatalf("%s scrape does not parse: %v", what, err)
		}
		return fams
	}
	fams, detailFams := parse("default", scrape), parse("detail", detail)
	endpoint := map[string]string{}
	for n, f := range detailFams {
		if _, dup := fams[n]; dup {
			t.Fatalf("%s is in both scrapes", n)
		}
		fams[n] = f
		endpoint[n] = "`/metrics/detail`"
	}
	for _, e := range extra {
		for n, f := range parse("extra", e) {
			if _, ok := fams[n]; !ok {
				fams[n] = f
			}
		}
	}
	names := make([]string, 0, len(fams))
	for n := range fams {
		if !strings.HasPrefix(n, "go_") && !strings.HasPrefix(n, "process_") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("| Metric | Endpoint | Type | Labels | Meaning |\n|---|---|---|---|---|\n")
	for _, n := range names {
		f := fams[n]
		labels := map[string]bool{}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = true
			}
		}
		ls := make([]string, 0, len(labels))
		for l := range labels {
			ls = append(ls, "`"+l+"`")
		}
		sort.Strings(ls)
		help := strings.ReplaceAll(f.GetHelp(), "|", `\|`)
		ep := endpoint[n]
		if ep == "" {
			ep = "`/metrics`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", n, ep, strings.ToLower(dto.MetricType_name[int32(f.GetType())]), strings.Join(ls, ", "), help)
	}
	return b.String()
}

// TestDocsMetricsMatchScrape checks that docs/metrics.md lists exactly the
// families a real scrape of the demo host has, with their types, labels
// and help, so the reference cannot drift from the code.
func TestDocsMetricsMatchScrape(t *testing.T) {
	e := start(t, demoArgs...)
	scrape, _ := e.get(t, "/metrics", nil)
	detail, _ := e.get(t, "/metrics/detail", nil)
	// Series that exist only while a link is down: a second demo host
	// whose Ethernet port is down from the start.
	down := start(t, "--demo", "--demo.faults=link_down@0s")
	downScrape, _ := down.get(t, "/metrics", nil)
	if !strings.Contains(downScrape, "\nnic_phy_link_down_reason{") {
		t.Fatalf("the link_down demo host serves no nic_phy_link_down_reason:\n%s", downScrape)
	}
	table := metricsTable(t, scrape, detail, downScrape)
	path := filepath.Join("..", "..", "docs", "metrics.md")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i, j := strings.Index(doc, docsBegin), strings.Index(doc, docsEnd)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the generated-section markers", path)
	}
	current := doc[i+len(docsBegin)+1 : j]
	if *update {
		doc = doc[:i+len(docsBegin)+1] + table + doc[j:]
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if diff := cmp.Diff(current, table); diff != "" {
		t.Errorf("docs/metrics.md is out of date with the demo scrape (-doc +scrape); run go test ./cmd/nic_exporter -update:\n%s", diff)
	}
}

func TestBasicAuthFromWebConfig(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(cfg, []byte("basic_auth_users:\n  prometheus: "+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freePort(t)
	cmd := exec.Command(binary, "--web.listen-address="+addr, "--web.config.file="+cfg, "--demo")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		// SIGTERM, so the demo host removes its directory.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(testenv.HangGuard): // as in start's cleanup
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	get := func(user, pass string) int {
		req, _ := http.NewRequest("GET", "http://"+addr+"/metrics", nil)
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	deadline := time.Now().Add(20 * time.Second)
	for get("prometheus", "s3cret") != 200 {
		if time.Now().After(deadline) {
			t.Fatalf("no authorised scrape within 20 s\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code := get("", ""); code != http.StatusUnauthorized {
		t.Errorf("scrape without credentials: %d, want 401", code)
	}
	if code := get("prometheus", "wrong"); code != http.StatusUnauthorized {
		t.Errorf("scrape with a wrong password: %d, want 401", code)
	}
}
