package deploy

import (
	"fmt"
	"net/url"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// restartFaults are the demo faults of the restart test: each logs its
// kernel lines once, when it starts, so every log counter has its final
// value a few seconds after the start and any change across the restart
// is the restart's doing. They start after Prometheus has scraped the
// healthy host, so the AER counter is seen to rise. Together they set off the kernel-log alerts
// NICKernelLogFirmwareError, NICKernelLogENAReset and
// NICKernelLogHardwareEvent, and (from the AER counters) NICPCIeAERUncorrectable.
const restartFaults = "fw_fatal@15s,ena_reg_read_timeout@15s,wd_expired@15s,mlx5_module_error@15s,pcie_aer@15s"

// restartAlerts are the alerts restartFaults must set off before the
// restart and keep, unchanged, after it.
var restartAlerts = []string{"NICKernelLogFirmwareError", "NICKernelLogENAReset", "NICKernelLogHardwareEvent", "NICPCIeAERUncorrectable"}

// firingAlert is one alert instance of Prometheus's /api/v1/alerts.
type firingAlert struct {
	Labels   map[string]string `json:"labels"`
	State    string            `json:"state"`
	ActiveAt string            `json:"activeAt"`
}

func (a firingAlert) key() string {
	keys := make([]string, 0, len(a.Labels))
	for k := range a.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%q,", k, a.Labels[k])
	}
	return b.String()
}

func (p promAPI) alerts() (map[string]firingAlert, error) {
	var body struct {
		Data struct {
			Alerts []firingAlert `json:"alerts"`
		} `json:"data"`
	}
	if err := p.get("/api/v1/alerts", &body); err != nil {
		return nil, err
	}
	out := make(map[string]firingAlert, len(body.Data.Alerts))
	for _, a := range body.Data.Alerts {
		out[a.key()] = a
	}
	return out, nil
}

// valueSample is one series of an instant query with its value.
type valueSample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// values runs an instant query and returns each series' value by its
// label set.
func (p promAPI) values(expr string) (map[string]string, error) {
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []valueSample `json:"result"`
		} `json:"data"`
	}
	if err := p.get("/api/v1/query?query="+url.QueryEscape(expr), &body); err != nil {
		return nil, err
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("query %q: %s", expr, body.Error)
	}
	out := make(map[string]string, len(body.Data.Result))
	for _, r := range body.Data.Result {
		out[firingAlert{Labels: r.Metric}.key()] = fmt.Sprint(r.Value[1])
	}
	return out, nil
}

// TestExporterRestartKeepsLogAlerts runs a real Prometheus with the shipped
// alert rules against a demo exporter whose kernel log has errors, restarts
// the exporter mid-run, and checks that no kernel-log alert fires again:
//
//   - the replayed kernel log gives every event counter the value it had,
//     from the first scrape after the restart (no absent scrape, no 0, no
//     lower value, which Prometheus would take for a counter reset that
//     increase() counts again);
//   - every alert that fired before the restart is still the same firing
//     alert (same activeAt: it never resolved, so Alertmanager sends no new
//     notification), and no other log alert fires.
//
// The demo exporter is restarted with the same --demo.start, so it
// continues the same host, as a restarted exporter on a real host finds
// the same kernel ring buffer. A ring buffer that has since rotated
// records out is not covered here (the demo has no rotation): see "Kernel
// log" in the README and collector/kmsg/state_test.go. extra are more
// exporter arguments, the same for both processes.
func exporterRestartKeepsLogAlerts(t *testing.T, extra ...string) {
	prometheus := testenv.LookPath(t, "prometheus")
	dir := t.TempDir()
	addr := freeAddr(t)
	start := time.Now().UTC().Format(time.RFC3339Nano)
	args := []string{"--web.listen-address=" + addr, "--demo", "--log.level=warn",
		"--demo.start=" + start, "--demo.faults=" + restartFaults}
	args = append(args, extra...)
	exporter := startProcess(t, "exporter-1", exporterBinary, args...)
	waitHTTP(t, exporter, "http://"+addr+"/readyz")

	alertsFile, _ := filepath.Abs("prometheus/alerts.yml")
	promCfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files: [%q]
scrape_configs:
  - job_name: nic_exporter
    static_configs:
      - targets: [%q]
`, alertsFile, addr)
	promAddr := startPrometheus(t, prometheus, dir, promCfg)
	api := promAPI{base: "http://" + promAddr, start: time.Now()}

	// Before: every expected alert fires.
	var before map[string]firingAlert
	waitFor(t, "the log alerts to fire before the restart", stackWait, func() error {
		a, err := api.alerts()
		if err != nil {
			return err
		}
		for _, name := range restartAlerts {
			if !firing(a, name) {
				return fmt.Errorf("%s not firing; alerts: %v", name, alertNames(a))
			}
		}
		before = a
		return nil
	})
	const counters = `nic_kernel_log_events_total or nic_pcie_aer_errors_total{severity!="correctable"}`
	countsBefore, err := api.values(counters)
	if err != nil {
		t.Fatal(err)
	}
	if len(countsBefore) == 0 {
		t.Fatal("no kernel log counters before the restart")
	}

	// Restart: stop the exporter, let Prometheus fail a few scrapes (it
	// marks the series stale), start it again with the same arguments.
	if err := exporter.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exporter.Done():
	case <-time.After(testenv.HangGuard):
		t.Fatalf("the exporter did not stop within %v of SIGTERM", testenv.HangGuard)
	}
	time.Sleep(3 * time.Second)
	restarted := time.Now()
	exporter = startProcess(t, "exporter-2", exporterBinary, args...)
	waitHTTP(t, exporter, "http://"+addr+"/readyz")

	// After: wait for several scrapes of the restarted exporter and
	// evaluations of the rules on them.
	waitFor(t, "five scrapes of the restarted exporter", stackWait, func() error {
		res, err := api.query(fmt.Sprintf(`sum_over_time(up{job="nic_exporter"}[%ds]) >= 5`, int(time.Since(restarted).Seconds())+1), false)
		if err != nil {
			return err
		}
		if len(res) != 1 {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	time.Sleep(3 * time.Second)
	window := fmt.Sprintf("%ds", int(time.Since(restarted).Seconds())+1)

	// The counters kept their values, from the first scrape on.
	countsAfter, err := api.values(counters)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range countsBefore {
		if countsAfter[k] != v {
			t.Errorf("%s: %s after the restart, %s before", k, countsAfter[k], v)
		}
	}
	for k, v := range countsAfter {
		if _, ok := countsBefore[k]; !ok {
			t.Errorf("%s = %s appeared after the restart", k, v)
		}
	}
	resets, err := api.values(fmt.Sprintf(`resets((%s)[5m:1s]) > 0`, counters))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range resets {
		t.Errorf("%s: Prometheus saw %s counter resets", k, v)
	}
	// Every successful scrape since the restart carried every counter:
	// none was absent from the first scrape and appeared later. One
	// query compares the two counts, so both are evaluated at the same
	// instant: two queries a scrape apart disagreed on a busy machine.
	present, err := api.values(fmt.Sprintf(`count_over_time(nic_kernel_log_events_total[%s])`, window))
	if err != nil {
		t.Fatal(err)
	}
	if len(present) == 0 {
		t.Errorf("no kernel log counter in the scrapes since the restart")
	}
	mismatch, err := api.values(fmt.Sprintf(`count_over_time(nic_kernel_log_events_total[%[1]s]) != on(instance) group_left() sum_over_time(up{job="nic_exporter"}[%[1]s])`, window))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range mismatch {
		t.Errorf("%s: in %s scrapes since the restart, not in every scrape the exporter answered", k, v)
	}

	// The alerts: the same ones, still active since before the restart.
	after, err := api.alerts()
	if err != nil {
		t.Fatal(err)
	}
	for k, a := range before {
		if !restartChecked(a) {
			continue
		}
		b, ok := after[k]
		switch {
		case !ok:
			t.Errorf("alert %s resolved after the restart", k)
		case b.ActiveAt != a.ActiveAt || b.State != a.State:
			t.Errorf("alert %s: %s since %s after the restart, %s since %s before: it fired again", k, b.State, b.ActiveAt, a.State, a.ActiveAt)
		}
	}
	for k, a := range after {
		if _, ok := before[k]; !ok && restartChecked(a) {
			t.Errorf("alert %s (%s) is new after the restart", k, a.State)
		}
	}
}

// restartChecked reports whether the restart test checks an alert: the
// kernel-log alerts and the AER alerts. Other alerts with a "for:" start
// their pending time again after the scrape gap of any restart, replay
// or not, as Prometheus documents for a target that was down.
func restartChecked(a firingAlert) bool {
	n := a.Labels["alertname"]
	return strings.HasPrefix(n, "NICKernelLog") || strings.HasPrefix(n, "NICPCIeAER")
}

func firing(alerts map[string]firingAlert, name string) bool {
	for _, a := range alerts {
		if a.Labels["alertname"] == name && a.State == "firing" {
			return true
		}
	}
	return false
}

func alertNames(alerts map[string]firingAlert) []string {
	var out []string
	for _, a := range alerts {
		out = append(out, a.Labels["alertname"]+"/"+a.State)
	}
	sort.Strings(out)
	return out
}
