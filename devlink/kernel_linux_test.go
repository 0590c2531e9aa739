//go:build linux

package devlink_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/devlinkhealth"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/collector/scrape"
	"github.com/nic-exporter/nic_exporter/devlink"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
	"github.com/nic-exporter/nic_exporter/internal/testenv/guest"
)

// TestKernel runs the devlink client and the devlink collector against
// the real devlink family of Debian's kernel with netdevsim, in one qemu
// boot. It skips locally without qemu and the kernel packages, and fails
// in CI.
func TestKernel(t *testing.T) {
	if guest.InGuest() {
		kernelChecks(t)
		return
	}
	res := guest.RunTest(t, guest.Config{
		Run:     "^(TestKernel|TestNewOnThisKernel)$",
		Args:    []string{"-test.v"},
		Modules: []string{"netdevsim"},
		Env:     []string{recordVar + "=" + os.Getenv(recordVar)},
	})
	if os.Getenv(recordVar) == "1" {
		if err := saveRecording(res.Output); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"TestKernel", "TestNewOnThisKernel"} {
		if !strings.Contains(res.Output, "--- PASS: "+name+" ") {
			t.Errorf("guest output lacks the passing %s", name)
		}
	}
	if !strings.Contains(res.Output, "this kernel has devlink") {
		t.Error("TestNewOnThisKernel did not find devlink in the guest")
	}
}

const nsimBus = "/sys/bus/netdevsim"

func nsimHandle(id int) devlink.Handle {
	return devlink.Handle{Bus: "netdevsim", Device: fmt.Sprintf("netdevsim%d", id)}
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0) }

func debugfs(id int, file string) string {
	return fmt.Sprintf("/sys/kernel/debug/netdevsim/netdevsim%d/health/%s", id, file)
}

func kernelChecks(t *testing.T) {
	for _, id := range []int{10, 11} {
		if err := writeFile(nsimBus+"/new_device", fmt.Sprintf("%d 1", id)); err != nil {
			t.Fatalf("creating netdevsim%d: %v", id, err)
		}
	}
	c, err := devlink.New()
	if err != nil {
		t.Fatalf("devlink.New: %v", err)
	}
	defer c.Close()
	ctx := context.Background()
	if os.Getenv(recordVar) == "1" {
		// Recording changes the reporters' state; it runs alone.
		t.Run("record", record)
		return
	}
	t.Run("client", func(t *testing.T) { clientChecks(t, c) })
	t.Run("collector", func(t *testing.T) { collectorChecks(t, ctx, c) })
}

func clientChecks(t *testing.T, c *devlink.Client) {
	ctx := context.Background()
	h := nsimHandle(10)
	devs, err := c.Devices(ctx)
	if err != nil {
		t.Fatalf("Devices: %v", err)
	}
	found := map[devlink.Handle]bool{}
	for _, d := range devs {
		found[d.Handle] = true
	}
	if !found[h] || !found[nsimHandle(11)] {
		t.Errorf("Devices = %v, want netdevsim10 and netdevsim11", devs)
	}

	nets, err := os.ReadDir(nsimBus + "/devices/netdevsim10/net")
	if err != nil || len(nets) != 1 {
		t.Fatalf("netdevsim10's netdev: %v %v", nets, err)
	}
	ports, err := c.Ports(ctx)
	if err != nil {
		t.Fatalf("Ports: %v", err)
	}
	var port *devlink.Port
	for i := range ports {
		if ports[i].Handle == h {
			port = &ports[i]
		}
	}
	if port == nil || port.Netdev != nets[0].Name() || port.Type == nil || *port.Type != devlink.PortTypeEth {
		t.Errorf("netdevsim10's port = %+v, want an eth port with netdev %s", port, nets[0].Name())
	}

	info, err := c.Info(ctx, h)
	if err != nil {
		t.Fatalf("Info: %v", err)
	}
	if info.Driver != "netdevsim" || devlink.Lookup(info.Running, "fw.mgmt") != "10.20.30" || devlink.Lookup(info.Stored, "fw.mgmt") != "10.20.30" {
		t.Errorf("Info = %+v, want driver netdevsim with fw.mgmt 10.20.30 running and stored", info)
	}

	reps, err := c.HealthReporters(ctx)
	if err != nil {
		t.Fatalf("HealthReporters: %v", err)
	}
	byName := map[string]devlink.HealthReporter{}
	for _, r := range reps {
		if r.Handle == h {
			byName[r.Name] = r
		}
	}
	if len(byName) != 2 {
		t.Fatalf("netdevsim10 reporters %v, want empty and dummy", byName)
	}
	empty, dummy := byName["empty"], byName["dummy"]
	if empty.State == nil || *empty.State != devlink.HealthStateHealthy || empty.ErrorCount == nil || *empty.ErrorCount != 0 {
		t.Errorf("empty = %+v, want healthy with no errors", empty)
	}
	if empty.AutoRecover != nil || empty.GracefulPeriod != nil || empty.Port != nil {
		t.Errorf("empty = %+v: has no recover operation, so no auto-recover or grace period", empty)
	}
	if dummy.AutoRecover == nil || !*dummy.AutoRecover || dummy.GracefulPeriod == nil || *dummy.GracefulPeriod != 0 || dummy.LastDump != nil {
		t.Errorf("dummy = %+v, want auto-recover on, grace period 0, no dump yet", dummy)
	}

	// netdevsim's empty reporter has diagnose and dump operations that
	// write nothing.
	if o, err := c.Diagnose(ctx, empty.ReporterID); err != nil || len(o) != 0 {
		t.Errorf("Diagnose(empty) = %v, %v; want an empty object", o, err)
	}
	diag, err := c.Diagnose(ctx, dummy.ReporterID)
	if err != nil {
		t.Fatalf("Diagnose(dummy): %v", err)
	}
	checkDummyFmsg(t, "diagnose", diag)
	js, err := json.Marshal(diag)
	if err != nil {
		t.Fatalf("diagnose as JSON: %v", err)
	}
	t.Logf("dummy diagnose: %s", js)

	dump, err := c.Dump(ctx, dummy.ReporterID)
	if err != nil {
		t.Fatalf("Dump(dummy): %v", err)
	}
	checkDummyFmsg(t, "dump", dump)
	after, err := c.HealthReporter(ctx, dummy.ReporterID)
	if err != nil {
		t.Fatalf("HealthReporter(dummy): %v", err)
	}
	if after.LastDump == nil || time.Since(*after.LastDump) > time.Hour || time.Until(*after.LastDump) > time.Hour {
		t.Errorf("after a dump, dummy's last dump time is %v, want about now", after.LastDump)
	}
	// This kernel sends the dump time both ways; 5.1, 5.2 and 5.3 before
	// 5.3.12 send only the older, jiffies-based one. Placed on the wall
	// clock, it must agree with the newer one to about a second; wrong
	// arithmetic is off by minutes (the 300 s jiffies offset) or days
	// (the 32-bit wrap).
	fromNs, fromMsecs, err := devlink.LastDumpBothWays(ctx, c, dummy.ReporterID)
	switch {
	case err != nil:
		t.Errorf("reading dummy's dump timestamps: %v", err)
	case fromNs == nil || fromMsecs == nil:
		t.Errorf("dummy's dump time from DUMP_TS_NS %v, from DUMP_TS %v; want both", fromNs, fromMsecs)
	default:
		d := fromMsecs.Sub(*fromNs)
		t.Logf("dump time from DUMP_TS_NS %v, from DUMP_TS %v: %v apart", fromNs, fromMsecs, d)
		if d < -5*time.Second || d > 5*time.Second {
			t.Errorf("dump time from DUMP_TS %v is %v off the kernel's wall-clock DUMP_TS_NS %v", fromMsecs, d, fromNs)
		}
	}
}

// checkDummyFmsg checks the fields netdevsim's dummy reporter writes in
// both diagnose and dump (drivers/net/netdevsim/health.c).
func checkDummyFmsg(t *testing.T, what string, o devlink.Object) {
	t.Helper()
	want := map[string]any{
		"test_bool": true, "test_u8": uint8(1), "test_u32": uint32(3), "test_u64": uint64(4), "test_string": "somestring",
	}
	for name, v := range want {
		if got, ok := o.Get(name); !ok || got != v {
			t.Errorf("%s: %s = %#v, want %#v", what, name, got, v)
		}
	}
	if v, _ := o.Get("test_nest"); func() bool { n, ok := v.(devlink.Object); return !ok || len(n) != 2 }() {
		t.Errorf("%s: test_nest = %#v, want an object of two fields", what, v)
	}
	if v, _ := o.Get("test_u32_array"); func() bool { a, ok := v.(devlink.Array); return !ok || len(a) == 0 }() {
		t.Errorf("%s: test_u32_array = %#v, want a non-empty array", what, v)
	}
	if v, _ := o.Get("test_array_of_objects"); func() bool { a, ok := v.(devlink.Array); return !ok || len(a) == 0 }() {
		t.Errorf("%s: test_array_of_objects = %#v, want a non-empty array", what, v)
	}
	if v, _ := o.Get("test_binary"); func() bool { a, ok := v.(devlink.Array); return !ok || len(a) == 0 }() {
		t.Errorf("%s: test_binary = %#v, want binary chunks", what, v)
	}
}

// sample returns the value of one series in a snapshot's text.
func sample(text, series string) (float64, bool) {
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(rest, 64)
			return v, err == nil
		}
	}
	return 0, false
}

func reporterSeries(metric string, id int, reporter string) string {
	return fmt.Sprintf(`%s{device="netdevsim/netdevsim%d",port="",netdev="",reporter="%s"}`, metric, id, reporter)
}

func eventSeries(id int, reporter, state string) string {
	return fmt.Sprintf(`nic_devlink_health_events_total{device="netdevsim/netdevsim%d",port="",netdev="",reporter="%s",state="%s"}`, id, reporter, state)
}

// waitFor polls the runner's snapshot until cond holds; it fails the test
// after 20 s (a bound for a hung kernel, not a timing assertion). cond is
// evaluated again only when a new snapshot is published, so it must depend
// on the snapshot's text alone.
func waitFor(t *testing.T, r *collector.Runner, what string, cond func(text string) bool) {
	t.Helper()
	deadline := time.Now().Add(testenv.HangGuard)
	var last *exposition.Snapshot
	for {
		// Render only new snapshots, so the wait costs the guest's CPUs
		// little while the exporter works.
		if snap := r.Snapshot(); snap != last {
			last = snap
			if cond(snap.String()) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s; runner status %+v; snapshot:\n%s", what, r.Status(), last.String())
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// waitForScrape scrapes url every millisecond until cond holds; it fails
// the test after 20 s.
func waitForScrape(t *testing.T, url, what string, cond func(text string) bool) {
	t.Helper()
	deadline := time.Now().Add(testenv.HangGuard)
	for {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatalf("scraping %s: %v", url, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("scraping %s: %s, %v", url, resp.Status, err)
		}
		if cond(string(body)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s on /metrics:\n%s", what, body)
		}
		time.Sleep(time.Millisecond)
	}
}

// logDurations logs the distribution of ds.
func logDurations(t *testing.T, what string, ds []time.Duration) {
	t.Helper()
	if len(ds) == 0 {
		return
	}
	sorted := append([]time.Duration(nil), ds...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	t.Logf("%s, %d samples: min %v median %v p90 %v max %v", what, len(sorted),
		sorted[0], sorted[len(sorted)/2], sorted[len(sorted)*9/10], sorted[len(sorted)-1])
}

// equals returns a condition that series has value v.
func equals(series string, v float64) func(string) bool {
	return func(text string) bool {
		got, ok := sample(text, series)
		return ok && got == v
	}
}

func all(conds ...func(string) bool) func(string) bool {
	return func(text string) bool {
		for _, c := range conds {
			if !c(text) {
				return false
			}
		}
		return true
	}
}

func collectorChecks(t *testing.T, ctx context.Context, c *devlink.Client) {
	captureDir := t.TempDir()
	filter, err := collector.NewNameFilter("collector.devlink.device", "", "netdevsim/netdevsim11")
	if err != nil {
		t.Fatal(err)
	}
	const maxFiles = 5
	dl := devlinkhealth.New(devlinkhealth.Config{
		Filter:  filter,
		Capture: devlinkhealth.CaptureConfig{Dir: captureDir, MaxFiles: maxFiles},
	}, zap.NewNop())
	// An hour between polls: everything after the first poll reaches the
	// snapshot through events.
	r := collector.NewRunner(dl, collector.RunnerConfig{Interval: time.Hour, Timeout: 10 * time.Second}, zap.NewNop())
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); r.Run(rctx) }()
	defer func() { cancel(); <-done }()

	// Not waitFor, which looks again only when the snapshot changes: the
	// Runner publishes the first poll's snapshot just before it counts the
	// poll, and nothing else changes the snapshot for an hour.
	for deadline := time.Now().Add(testenv.HangGuard); !r.Status().PollingComplete; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for the first poll; runner status %+v", r.Status())
		}
	}
	// /metrics as the exporter serves it, over loopback.
	srv := httptest.NewServer(scrape.NewHandler([]scrape.Source{r}, scrape.Config{}, zap.NewNop()))
	defer srv.Close()
	metricsURL := srv.URL + "/metrics"
	// What one scrape costs in this guest, without any change to wait for.
	var scrapes []time.Duration
	for i := 0; i < 200; i++ {
		start := time.Now()
		waitForScrape(t, metricsURL, "a scrape", func(string) bool { return true })
		scrapes = append(scrapes, time.Since(start))
	}
	logDurations(t, "SCRAPE one /metrics request over loopback, idle exporter", scrapes)
	// The Runner starts watching events alongside the first poll; a
	// device that appears without a poll shows the subscription is live,
	// so no break below can happen before it.
	if err := writeFile(nsimBus+"/new_device", "13 1"); err != nil {
		t.Fatalf("adding netdevsim13: %v", err)
	}
	waitFor(t, r, "netdevsim13 through events", equals(reporterSeries("nic_devlink_health_reporter_healthy", 13, "dummy"), 1))
	if err := writeFile(nsimBus+"/del_device", "13"); err != nil {
		t.Fatalf("removing netdevsim13: %v", err)
	}
	waitFor(t, r, "netdevsim13 gone", func(text string) bool { return !strings.Contains(text, "netdevsim13") })
	text := r.Snapshot().String()
	if st := r.Status(); !st.Up || st.Absent {
		t.Fatalf("collector status %+v, want up with devlink present", st)
	}
	for _, want := range []struct {
		series string
		v      float64
	}{
		{reporterSeries("nic_devlink_health_reporter_healthy", 10, "empty"), 1},
		{reporterSeries("nic_devlink_health_reporter_errors_total", 10, "empty"), 0},
		{reporterSeries("nic_devlink_health_reporter_recoveries_total", 10, "empty"), 0},
		{reporterSeries("nic_devlink_health_reporter_healthy", 10, "dummy"), 1},
		{reporterSeries("nic_devlink_health_reporter_errors_total", 10, "dummy"), 0},
		{reporterSeries("nic_devlink_health_reporter_auto_recover", 10, "dummy"), 1},
		{reporterSeries("nic_devlink_health_reporter_graceful_period_seconds", 10, "dummy"), 0},
		{reporterSeries("nic_devlink_health_captures_total", 10, "dummy"), 0},
		{`nic_devlink_info{device="netdevsim/netdevsim10",driver="netdevsim",serial_number="",board_id="",firmware_running="",firmware_stored=""}`, 1},
	} {
		if got, ok := sample(text, want.series); !ok || got != want.v {
			t.Errorf("%s = %v (present %v), want %v", want.series, got, ok, want.v)
		}
	}
	for _, absent := range []string{reporterSeries("nic_devlink_health_reporter_auto_recover", 10, "empty"), "netdevsim11"} {
		if strings.Contains(text, absent) {
			t.Errorf("snapshot has %s", absent)
		}
	}
	// The dump taken by the client checks stored a dump.
	if _, ok := sample(text, reporterSeries("nic_devlink_health_reporter_last_dump_timestamp_seconds", 10, "dummy")); !ok {
		t.Error("no last dump timestamp for dummy after a dump")
	}
	t.Logf("POLL the first poll (devices, ports, reporters, info of one device) took %v", r.Status().LastDuration)
	t.Logf("first poll:\n%s", text)

	dummy := devlink.ReporterID{Handle: nsimHandle(10), Name: "dummy"}
	errorsTotal := reporterSeries("nic_devlink_health_reporter_errors_total", 10, "dummy")
	recoveries := reporterSeries("nic_devlink_health_reporter_recoveries_total", 10, "dummy")
	healthy := reporterSeries("nic_devlink_health_reporter_healthy", 10, "dummy")
	captures := reporterSeries("nic_devlink_health_captures_total", 10, "dummy")

	// Auto-recover on: each break is an error the kernel recovers within
	// the same write; only the multicast notification shows the error.
	// The first half of the breaks is timed at the Runner's snapshot (the
	// exporter's own latency), the second half through HTTP scrapes of
	// /metrics every millisecond (what a scraper sees, including the
	// guest's loopback TCP and HTTP stack).
	const breaks = 40
	var toSnapshot, toMetrics []time.Duration
	t.Run("auto-recover on", func(t *testing.T) {
		for i := 1; i <= breaks; i++ {
			start := time.Now()
			if err := writeFile(debugfs(10, "break_health"), fmt.Sprintf("break %d", i)); err != nil {
				t.Fatalf("break %d: %v", i, err)
			}
			if i <= breaks/2 {
				waitFor(t, r, fmt.Sprintf("error %d", i), equals(errorsTotal, float64(i)))
				toSnapshot = append(toSnapshot, time.Since(start))
			} else {
				waitForScrape(t, metricsURL, fmt.Sprintf("error %d", i), equals(errorsTotal, float64(i)))
				toMetrics = append(toMetrics, time.Since(start))
			}
			// Wait for the evidence too, so the next measurement starts
			// from an idle exporter.
			waitFor(t, r, fmt.Sprintf("recovery %d", i), all(equals(healthy, 1), equals(recoveries, float64(i)),
				equals(eventSeries(10, "dummy", "error"), float64(i)), equals(eventSeries(10, "dummy", "healthy"), float64(i)),
				equals(captures, float64(i))))
		}
		files, err := filepath.Glob(filepath.Join(captureDir, "*.devlink.json"))
		if err != nil || len(files) != maxFiles {
			t.Fatalf("capture dir holds %d files (%v), want the newest %d", len(files), err, maxFiles)
		}
		sort.Strings(files)
		b, err := os.ReadFile(files[len(files)-1])
		if err != nil {
			t.Fatal(err)
		}
		var ev struct {
			Device, Reporter, Trigger string
			Attributes                struct {
				State      string `json:"state"`
				ErrorCount uint64 `json:"error_count"`
			}
			Diagnose map[string]any
			Dump     map[string]any
		}
		if err := json.Unmarshal(b, &ev); err != nil {
			t.Fatalf("evidence %s: %v", files[len(files)-1], err)
		}
		if ev.Device != "netdevsim/netdevsim10" || ev.Reporter != "dummy" || ev.Trigger != "event" ||
			ev.Attributes.State != "error" || ev.Attributes.ErrorCount != breaks {
			t.Errorf("newest evidence %s:\n%s", files[len(files)-1], b)
		}
		if ev.Diagnose["test_string"] != "somestring" || ev.Dump["test_string"] != "somestring" {
			t.Errorf("newest evidence lacks diagnose or dump output:\n%s", b)
		}
		// The kernel agrees with the exported counts.
		k, err := c.HealthReporter(ctx, dummy)
		if err != nil || *k.ErrorCount != breaks || *k.RecoverCount != breaks || *k.State != devlink.HealthStateHealthy {
			t.Errorf("kernel's dummy after %d breaks: %+v %v", breaks, k, err)
		}
	})
	logDurations(t, "LATENCY break_health write to error in the Runner's snapshot", toSnapshot)
	logDurations(t, "LATENCY break_health write to error on /metrics", toMetrics)

	t.Run("auto-recover off", func(t *testing.T) {
		off, on := false, true
		if err := c.SetHealthReporter(ctx, dummy, devlink.HealthReporterSettings{AutoRecover: &off}); err != nil {
			t.Fatalf("turning auto-recover off: %v", err)
		}
		if err := writeFile(debugfs(10, "break_health"), "stays broken"); err != nil {
			t.Fatalf("break: %v", err)
		}
		waitFor(t, r, "error state", all(equals(healthy, 0), equals(errorsTotal, breaks+1), equals(eventSeries(10, "dummy", "error"), breaks+1)))
		// The error persists: the kernel says so too.
		if k, err := c.HealthReporter(ctx, dummy); err != nil || *k.State != devlink.HealthStateError {
			t.Fatalf("kernel's dummy: %+v %v, want error", k, err)
		}
		if got, _ := sample(r.Snapshot().String(), healthy); got != 0 {
			t.Fatalf("dummy healthy again without a recovery")
		}
		if err := c.Recover(ctx, dummy); err != nil {
			t.Fatalf("Recover: %v", err)
		}
		waitFor(t, r, "manual recovery", all(equals(healthy, 1), equals(recoveries, breaks+1), equals(eventSeries(10, "dummy", "healthy"), breaks+1)))
		if err := c.SetHealthReporter(ctx, dummy, devlink.HealthReporterSettings{AutoRecover: &on}); err != nil {
			t.Fatalf("turning auto-recover on: %v", err)
		}
	})

	t.Run("fail_recover", func(t *testing.T) {
		if err := writeFile(debugfs(10, "fail_recover"), "1"); err != nil {
			t.Fatalf("setting fail_recover: %v", err)
		}
		// With auto-recover on, the failed recovery fails the write.
		if err := writeFile(debugfs(10, "break_health"), "recovery fails"); err == nil {
			t.Error("break_health with fail_recover succeeded, want EINVAL")
		}
		waitFor(t, r, "unrecovered error", all(equals(healthy, 0), equals(errorsTotal, breaks+2), equals(recoveries, breaks+1)))
		if err := c.Recover(ctx, dummy); err == nil {
			t.Error("Recover with fail_recover succeeded, want an error")
		}
		if err := writeFile(debugfs(10, "fail_recover"), "0"); err != nil {
			t.Fatalf("clearing fail_recover: %v", err)
		}
		if err := c.Recover(ctx, dummy); err != nil {
			t.Fatalf("Recover: %v", err)
		}
		waitFor(t, r, "recovery", all(equals(healthy, 1), equals(recoveries, breaks+2)))
		waitFor(t, r, "capture of the failed recovery", equals(captures, breaks+2))
	})

	t.Run("device add and remove", func(t *testing.T) {
		if err := writeFile(nsimBus+"/new_device", "12 1"); err != nil {
			t.Fatalf("adding netdevsim12: %v", err)
		}
		waitFor(t, r, "netdevsim12's reporters", all(
			equals(reporterSeries("nic_devlink_health_reporter_healthy", 12, "dummy"), 1),
			equals(reporterSeries("nic_devlink_health_reporter_healthy", 12, "empty"), 1)))
		if err := writeFile(nsimBus+"/del_device", "12"); err != nil {
			t.Fatalf("removing netdevsim12: %v", err)
		}
		waitFor(t, r, "netdevsim12 gone", func(text string) bool { return !strings.Contains(text, "netdevsim12") })
		if strings.Contains(r.Snapshot().String(), "netdevsim11") {
			t.Error("the excluded netdevsim11 appears in the snapshot")
		}
		if st := r.Status(); st.Polls != 1 {
			t.Errorf("%d polls ran, want 1: the changes must come from events", st.Polls)
		}
	})
}
