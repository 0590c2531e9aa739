package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nic-exporter/nic_exporter/deploy/internal/promstack"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// exporterBinary is nic_exporter, built once by TestMain for the tests
// that run it.
var exporterBinary string

// TestMain builds the exporter once. The tests that run a real
// Prometheus, Alertmanager or promtool call t.Parallel: they spend most of
// their time waiting for rule evaluations and "for:" durations, not on the
// CPU, and the fault catalogue alone waits about 3.5 minutes. One after
// another they took 6.5 minutes; in parallel (at most GOMAXPROCS at a
// time, go test's default -parallel) the others finish while the
// catalogue waits. Each starts its own processes on free ports in its own
// temporary directories, so they share nothing.
func TestMain(m *testing.M) {
	bin, cleanup, err := testenv.BuildExporter("../cmd/nic_exporter")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	exporterBinary = bin
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// stackWait bounds every wait of the stack tests. The slowest condition,
// NICLinkFlapping, needs the demo's second flap (20 s after the start);
// everything else arrives within a few seconds on an idle machine. It is a
// hang guard, not a measure: a wait ends as soon as its condition holds,
// and CI's two cores may be busy with other work (Prometheus' scrapes and
// rule evaluations then fall behind their schedule).
const stackWait = 3 * time.Minute

func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := promstack.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// process is a program the test started; its output goes to a file that
// is shown when the test fails.
type process struct {
	name string
	*promstack.Process
}

// startProcess starts a program for the test's lifetime: the cleanup
// stops it (SIGTERM, then SIGKILL after 10 s) and shows the end of its
// output if the test failed.
func startProcess(t *testing.T, name, bin string, args ...string) *process {
	t.Helper()
	p, err := promstack.Start(promstack.ProcessConfig{Name: name, Path: bin, Args: args,
		LogFile: filepath.Join(t.TempDir(), name+".log")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// SIGKILL only after the hang guard: a demo exporter killed
		// early leaves its directory in /tmp.
		p.Stop(testenv.HangGuard)
		if t.Failed() {
			t.Logf("%s log (tail):\n%s", name, p.LogTail(8000))
		}
	})
	return &process{name: name, Process: p}
}

// waitFor polls cond until it returns nil or the wait is over, then fails
// the test with cond's last error.
func waitFor(t *testing.T, what string, d time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting %v for %s: %v", d, what, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// waitAll polls every check that has not succeeded yet until each has
// succeeded once or the wait is over, then reports the last error of each
// check that never did. Conditions that hold only for a while (a port in
// Polling) are caught whatever order the checks are in.
func waitAll(t *testing.T, d time.Duration, checks map[string]func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	pending := make(map[string]func() error, len(checks))
	for k, v := range checks {
		pending[k] = v
	}
	last := make(map[string]error)
	for {
		for name, check := range pending {
			if err := check(); err != nil {
				last[name] = err
			} else {
				delete(pending, name)
			}
		}
		if len(pending) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	for _, name := range sortedKeys(pending) {
		t.Errorf("after %v: %s: %v", d, name, last[name])
	}
}

func waitHTTP(t *testing.T, p *process, url string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stackWait)
	defer cancel()
	if err := promstack.WaitHTTP(ctx, p.Process, url); err != nil {
		t.Fatal(err)
	}
}

// startExporter runs nic_exporter --demo with the given fault schedule.
// startPrometheus writes cfg as the configuration of a Prometheus server
// (the binary prometheus) with its storage in dir, starts it on a free
// loopback address, waits until it is ready and returns that address.
func startPrometheus(t *testing.T, prometheus, dir, cfg string) string {
	t.Helper()
	file := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	p := startProcess(t, "prometheus", prometheus, promstack.PrometheusArgs(file, filepath.Join(dir, "tsdb"), addr)...)
	waitHTTP(t, p, "http://"+addr+"/-/ready")
	return addr
}

func startExporter(t *testing.T, name, faults string) string {
	t.Helper()
	addr, _ := startExporterProcess(t, name, faults)
	return addr
}

// startExporterProcess is startExporter that also returns the process, for
// a test that stops its exporters together (stopAll).
func startExporterProcess(t *testing.T, name, faults string) (string, *process) {
	t.Helper()
	addr := freeAddr(t)
	// Evidence capture is on, so NICDevlinkEvidenceCaptured can fire; the
	// opt-in fabric collector is on, so its panels have the demo's far end.
	args := []string{"--web.listen-address=" + addr, "--demo", "--log.level=warn",
		"--collector.devlink.capture-dir=" + t.TempDir(), "--collector.phy.module-interval=1s",
		"--collector.fabric"}
	if faults != "" {
		args = append(args, "--demo.faults="+faults)
	}
	p := startProcess(t, name, exporterBinary, args...)
	waitHTTP(t, p, "http://"+addr+"/readyz")
	return addr, p
}

// stopAll sends SIGTERM to every process at once and waits for them all,
// so that a test with many processes does not stop them one after the
// other in its cleanups (each cleanup then finds its process ended). A
// process still running after the hang guard is killed.
func stopAll(ps []*process) {
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Go(func() { p.Stop(testenv.HangGuard) })
	}
	wg.Wait()
}

// sample is one series of a Prometheus query result.
type sample struct {
	Metric map[string]string `json:"metric"`
	// Values are the points of a range query's series, each a Unix time
	// in seconds and the value as a string.
	Values [][2]any `json:"values"`
}

// first returns the time of the series' first point of a range query,
// and false for an instant query's sample.
func (s sample) first() (time.Time, bool) {
	if len(s.Values) == 0 {
		return time.Time{}, false
	}
	sec, ok := s.Values[0][0].(float64)
	if !ok {
		return time.Time{}, false
	}
	return time.UnixMilli(int64(sec * 1000)), true
}

// promAPI is a Prometheus server's HTTP API.
type promAPI struct {
	base  string
	start time.Time // when the test's demo hosts started
}

// query runs an instant query, or a range query from the start of the
// demo hosts until now (as a Grafana graph covers the time of interest)
// when rng is set, and returns the series of the result. A parse or
// evaluation error is returned as an error.
func (p promAPI) query(expr string, rng bool) ([]sample, error) {
	v := url.Values{"query": {expr}}
	path := "/api/v1/query"
	if rng {
		path = "/api/v1/query_range"
		v.Set("start", fmt.Sprint(p.start.Unix()))
		v.Set("end", fmt.Sprint(time.Now().Unix()+1))
		v.Set("step", "1")
	}
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := p.get(path+"?"+v.Encode(), &body); err != nil {
		return nil, err
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("query %q: %s", expr, body.Error)
	}
	switch body.Data.ResultType {
	case "vector", "matrix":
		var out []sample
		if err := json.Unmarshal(body.Data.Result, &out); err != nil {
			return nil, fmt.Errorf("query %q: decoding the result: %w", expr, err)
		}
		return out, nil
	default:
		return []sample{{}}, nil
	}
}

func (p promAPI) get(path string, into any) error {
	resp, err := http.Get(p.base + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		return fmt.Errorf("GET %s: HTTP %d, decoding: %w", path, resp.StatusCode, err)
	}
	return nil
}

// stack is a real Prometheus with the shipped rules, scraping a demo host
// with faults and a healthy demo host, and sending alerts to a real
// Alertmanager that routes pages and tickets to the test's webhook.
type stack struct {
	prom            promAPI
	faulty, healthy string
	hook            *promstack.Webhook
}

// faultAlerts maps each alert that a demo fault sets off to that fault.
// The faulty demo host runs all of them from its start.
var faultAlerts = map[string]string{
	"NICLinkDown":                     "link_down",
	"NICLinkFlapping":                 "link_flap",
	"NICPCIeLinkDegraded":             "pcie_degraded",
	"NICInfiniBandPortNotLinkUp":      "ib_link_down",
	"NICInfiniBandLinkDowned":         "ib_link_down",
	"NICInfiniBandSymbolErrors":       "ib_symbol_errors",
	"NICInfiniBandCounterSaturated":   "ib_symbol_errors",
	"NICInfiniBandRNRRetriesExceeded": "rnr_retry",
	"NICRDMAReceiverNotReady":         "rnr_retry",
	"NICRoCECongestion":               "roce_congestion",
	"NICRDMARetransmissions":          "roce_congestion",
	"NICPFCPauseStorm":                "roce_congestion",
	"NICENAWatchdogExpired":           "wd_expired",
	"NICENAAllowanceExceeded":         "bw_in_allowance",
	"NICRxOutOfBuffer":                "rx_out_of_buffer",
	"NICVMANoBuffers":                 "vma_no_buffers",
	"NICVMADrops":                     "vma_no_buffers",
	"NICVMAOSFallback":                "vma_os_fallback",
	"NICXLIONoBuffers":                "xlio_no_buffers",
	"NICXLIODrops":                    "xlio_no_buffers",
	"NICKernelLogCommandErrors":       "mlx5_cmd_timeout",
	"NICKernelLogCQErrors":            "mlx5_cq_overrun",
	"NICKernelLogHardwareEvent":       "mlx5_module_error",
	"NICKernelLogENAReset":            "ena_reg_read_timeout",
	"NICAppLogVMAErrors":              "vma_daemon_down",
	"NICDevlinkFwFatalError":          "fw_fatal",
	"NICDevlinkFwError":               "fw",
	"NICDevlinkVnicError":             "vnic",
	"NICDevlinkReporterStuck":         "fw",
	"NICDevlinkEvidenceCaptured":      "fw_fatal",
	"NICKernelLogFirmwareError":       "fw_fatal",
	"NICTransceiverRxPowerLow":        "optic_degrading",
	"NICTransceiverRxPowerLowAlarm":   "optic_degrading",
	"NICPreFECBERHigh":                "optic_degrading",
	"NICFECUncorrectableBlocks":       "optic_degrading",
	"NICLinkDownWithReason":           "optic_degrading",
	"NICPhyErrors":                    "optic_degrading",
	"NICPCIeAERUncorrectable":         "pcie_aer",
	"NICPCIeAERCorrectableHigh":       "pcie_aer_corrected",
	"NICFabricRemoteSymbolErrors":     "fabric_symbol_errors",
	"NICFabricRemoteRcvErrors":        "fabric_symbol_errors",
	"NICFabricCongestion":             "fabric_congestion",
	"NICTemperatureHigh":              "nic_overheating",
	"NICTemperatureCritical":          "nic_overheating",
	"NICEFARetransmissions":           "efa_srd_degraded",
	"NICEFARxDrops":                   "efa_srd_degraded",
	"NICEFARemoteUnresponsive":        "efa_srd_degraded",
	"NICEFARemoteConnectionImpaired":  "efa_srd_degraded",
	"NICEFARDMAWorkRequestErrors":     "efa_srd_degraded",
}

// faultStart is when every fault begins on the faulty demo host: after
// Prometheus has scraped the healthy state a few times, so a counter that
// steps once when its fault begins (wd_expired, link_downed) is seen to
// rise, and the dashboards' graphs show the state before the fault (the
// link speed before the link went down), as they would on a real host.
const faultStart = "20s"

// quietAlerts are the alerts the demo host cannot set off, with the
// reason. Their expressions must still parse, evaluate and find every
// metric they read on the faulty demo host (log event series exist only
// after a first match, so not on the healthy one); they must not fire for
// either demo host.
var quietAlerts = map[string]string{
	"NICExporterDown":           "needs a target Prometheus cannot scrape; both demo exporters answer",
	"NICExporterCollectorDown":  "needs a collector whose source fails; no demo fault breaks a source",
	"NICExporterDevicesMissing": "needs a device that disappears after it was seen; the demo host keeps its devices",
	"NICExporterTargetsAbsent":  "needs no target under the selected job; the stack scrapes both demo hosts as job nic_exporter",
	"NICInfiniBandPortNotActive": "the demo's ib_link_down passes through INIT for 5 s only, 2 min 15 s after it starts, " +
		"and the alert needs 5 minutes of it",
	"NICInfiniBandTransportRetriesExceeded": "no demo fault exhausts transport retries",
	"NICInfiniBandRemoteAccessErrors":       "no demo fault makes remote access errors",
	"NICENATxTimeout":                       "no demo fault times out a transmit queue",
	"NICENAAdminQueuePaused":                "no demo fault pauses the admin queue",
	"NICENAMissingTxCompletions":            "no demo fault loses transmit completions",
	"NICENAResets":                          "no demo fault resets the ENA device for a counted cause (wd_expired has its own alert)",
	"NICENAAllocationFailures":              "no demo fault makes allocations fail",
	"NICENAConntrackAllowanceLow":           "no demo fault uses up the conntrack allowance",
	"NICPhyDiscards":                        "no demo fault makes port discards",
	"NICModuleEvent":                        "no demo fault makes module events",
	"NICVMAStatsStale":                      "the demo's statistics file always accepts the reader handshake",
	"NICVMAStatsFilesRejected":              "the demo's statistics directory holds only the application's valid file",
	"NICXLIOOSFallback":                     "no demo fault moves an XLIO socket to the kernel path",
	"NICXLIOStatsStale":                     "the demo's libxlio file always accepts the reader handshake",
	"NICXLIOStatsFilesRejected":             "the demo's libxlio directory holds only the application's valid file",
	"NICDevlinkTxRxErrors":                  "no demo fault breaks a tx or rx queue",
	"NICKernelLogTxTimeout":                 "no demo fault logs a transmit timeout",
	"NICKernelLogPCIeCorrected":             "pcie_aer_corrected logs corrected errors of 0000:08:00.1, whose AER counters replace the log (NICPCIeAERCorrectableHigh)",
	"NICKernelLogPCIeUncorrectable":         "pcie_aer logs an uncorrectable error of 0000:08:00.1, whose AER counters replace the log (NICPCIeAERUncorrectable)",
	"NICKernelLogDeviceInitFailed":          "no demo fault fails a probe",
	"NICKernelLogRDMAErrors":                "no demo fault logs RDMA asynchronous errors",
	"NICKernelLogIOMMUFault":                "no demo fault logs an IOMMU fault",
	"NICTransceiverTemperatureHigh":         "no demo fault heats the module (optic_degrading dims a receiver)",
	"NICENAExpressFallback":                 "the demo's ENA has ENA Express off (ena_srd_mode 0, as the AWS documentation's sample shows)",
	"NICFirmwareSkew":                       "the demo hosts all run the same firmware on each board; the rule is tested in prometheus/tests/firmware.yml",
	"NICFirmwareKnownBad":                   "the shipped known-bad lists are empty; a filled list is tested in TestKnownBadLists",
	"NICDriverKnownBad":                     "the shipped known-bad lists are empty; a filled list is tested in TestKnownBadLists",
	"NICENAExpressResourcesHigh":            "the demo's ENA has ENA Express off (ena_srd_mode 0)",
	// The demo's far end (demo FabricPort) has the faults
	// fabric_symbol_errors and fabric_congestion; collector/fabric's ibsim
	// tests inject the others into a simulated fabric.
	"NICFabricRemoteLinkErrorRecovery": "no demo fault makes the far-end switch port retrain",
	"NICFabricRemoteLinkDowned":        "no demo fault downs the far-end switch port's link on its own (ib_link_down takes the host port down, and the far end is then unreachable)",
	"NICFabricLinkEndsDisagree":        "both ends of the demo's cable are Active, or the far end is unreachable while the link is down",
}

// otherDriverMetrics are metrics that alerts read but the demo host cannot
// export, because they come from a driver the demo host does not have.
// Every alert expression must still read at least one metric the demo
// host exports.
var otherDriverMetrics = map[string]string{
	"nic_infiniband_hw_retry_rnr_exceeded_err_total": "Soft-RoCE (rxe) counter; the demo host has mlx5",
	"nic_infiniband_hw_retry_exceeded_err_total":     "Soft-RoCE (rxe) counter; the demo host has mlx5",
	"nic_ethtool_queue_tx_missing_tx_comp_total":     "older ENA drivers' name; the demo's ENA 2.x prints queue_N_tx_missed_tx",
	"nic_ethtool_in_discards_total":                  "mlx5 name before Linux 4.8 (ConnectX-4 era); the demo's mlx5 prints rx_discards_phy",
	"nic_ethtool_out_discards_total":                 "mlx5 name before Linux 4.8 (ConnectX-4 era); the demo's mlx5 prints tx_discards_phy",
	"nic_ethtool_check_seq_err_total":                "mlx5 name before Linux 4.8 (ConnectX-4 era); the demo's mlx5 prints rx_crc_errors_phy",
	"nic_ethtool_crc_align_errors_total":             "mlx5 name before Linux 4.8 (ConnectX-4 era), dropped by later kernels",
	"nic_ethtool_symbol_err_total":                   "mlx5 name before Linux 4.8 (ConnectX-4 era); the demo's mlx5 prints rx_symbol_err_phy",
}

// lookAlertmanager returns Alertmanager's path under either of its
// names (promstack.LookAlertmanager).
func lookAlertmanager(t *testing.T) string {
	t.Helper()
	if p, err := promstack.LookAlertmanager(); err == nil {
		return p
	}
	return testenv.LookPath(t, "alertmanager") // skips, or fails in CI
}

// startWebhook serves a webhook receiver on a free local port for the
// test's lifetime and returns it with its address.
func startWebhook(t *testing.T) (*promstack.Webhook, string) {
	t.Helper()
	hook := promstack.NewWebhook(nil)
	addr := freeAddr(t)
	srv, err := promstack.Serve(addr, hook)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	return hook, addr
}

// startAlertmanager runs a real Alertmanager with configuration cfg, alone
// (no cluster), in a temporary directory, and returns its address once it
// is ready.
func startAlertmanager(t *testing.T, cfg []byte) string {
	t.Helper()
	alertmanager := lookAlertmanager(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "alertmanager.yml")
	if err := os.WriteFile(file, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	p := startProcess(t, "alertmanager", alertmanager, promstack.AlertmanagerArgs(file, filepath.Join(dir, "am"), addr)...)
	waitHTTP(t, p, "http://"+addr+"/-/ready")
	return addr
}

func startStack(t *testing.T) *stack {
	t.Helper()
	prometheus := testenv.LookPath(t, "prometheus")
	dir := t.TempDir()

	hook, hookAddr := startWebhook(t)
	amAddr := startAlertmanager(t, alertmanagerConfig(t, hookAddr, false))

	s := &stack{hook: hook}

	// The shipped rule files are used as they are: every "for:" in them
	// is either 0 or longer than this test, and the test only asserts
	// notifications for alerts with "for: 0m".
	alerts, _ := filepath.Abs(alertsFile)
	rules, _ := filepath.Abs(rulesFile)
	// Prometheus runs before the demo hosts and scrapes them from its
	// file_sd targets file as soon as they are ready: the faults begin
	// faultStart after the hosts start, and a counter that steps once
	// when its fault begins must be scraped before it does. Started the
	// other way round, a busy machine delayed Prometheus' first scrape
	// past the fault, and NICPCIeAERUncorrectable never saw the step.
	targetsFile := filepath.Join(dir, "targets.json")
	if err := os.WriteFile(targetsFile, []byte("[]"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Scrapes every 2 s with a 2 s timeout: short enough for a test of
	// seconds, long enough that an exporter starved of CPU by parallel
	// tests is not taken for down.
	promCfg := fmt.Sprintf(`global:
  scrape_interval: 2s
  scrape_timeout: 2s
  evaluation_interval: 1s
rule_files: [%q, %q]
alerting:
  alertmanagers:
    - static_configs:
        - targets: [%q]
scrape_configs:
  - job_name: nic_exporter
    file_sd_configs:
      - files: [%q]
`, alerts, rules, amAddr, targetsFile)
	promAddr := startPrometheus(t, prometheus, dir, promCfg)
	s.prom.base = "http://" + promAddr
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		var targets struct {
			Data struct {
				ActiveTargets []struct {
					ScrapeURL  string `json:"scrapeUrl"`
					Health     string `json:"health"`
					LastError  string `json:"lastError"`
					LastScrape string `json:"lastScrape"`
				} `json:"activeTargets"`
			} `json:"data"`
		}
		if err := s.prom.get("/api/v1/targets", &targets); err == nil {
			t.Logf("Prometheus targets: %+v", targets.Data.ActiveTargets)
		}
	})

	var faults []string
	for _, f := range sortedKeys(invert(faultAlerts)) {
		faults = append(faults, f+"@"+faultSchedule(f))
	}
	s.prom.start = time.Now()
	s.faulty = startExporter(t, "exporter-faulty", strings.Join(faults, ","))
	s.healthy = startExporter(t, "exporter-healthy", "")
	tmp := targetsFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(fmt.Sprintf(`[{"targets": [%q, %q]}]`, s.faulty, s.healthy)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, targetsFile); err != nil {
		t.Fatal(err)
	}

	// Wait until both hosts have been scraped a few times, so rate() and
	// increase() have samples to work on.
	waitFor(t, "three scrapes of both demo hosts", stackWait, func() error {
		res, err := s.prom.query(`count_over_time(up{job="nic_exporter"}[1m]) >= 3`, false)
		if err != nil {
			return err
		}
		if len(res) != 2 {
			return fmt.Errorf("%d of 2 targets scraped 3 times", len(res))
		}
		return nil
	})
	return s
}

const alertmanagerFile = "alertmanager/alertmanager.yml"

// alertmanagerConfig returns the shipped Alertmanager configuration with
// every webhook pointed at the test's receiver (path /<receiver name>) and
// every group_wait and group_interval at 1 s, so notifications arrive in
// seconds. The routing tree and its matchers are used as shipped; the
// inhibit rules only if inhibit is set (the routing test needs every alert
// of the faulty host delivered, inhibit_test.go tests the inhibition).
func alertmanagerConfig(t *testing.T, hookAddr string, inhibit bool) []byte {
	t.Helper()
	b, err := os.ReadFile(alertmanagerFile)
	if err != nil {
		t.Fatal(err)
	}
	out, err := promstack.AlertmanagerConfig(b, promstack.AlertmanagerOptions{
		WebhookBase: "http://" + hookAddr, GroupTiming: "1s", DropInhibitRules: !inhibit})
	if err != nil {
		t.Fatalf("%s: %v", alertmanagerFile, err)
	}
	return out
}

// TestAlertmanagerConfigChecks runs amtool check-config on the shipped
// routing.
func TestAlertmanagerConfigChecks(t *testing.T) {
	amtool := testenv.LookPath(t, "amtool")
	if out, err := exec.Command(amtool, "check-config", alertmanagerFile).CombinedOutput(); err != nil {
		t.Fatalf("amtool check-config: %v\n%s", err, out)
	}
}

func invert(m map[string]string) map[string]string {
	out := make(map[string]string)
	for k, v := range m {
		out[v] = k
	}
	return out
}

// metricNames returns the metric names an expression reads.
var metricName = regexp.MustCompile(`\b(nic_[a-z0-9_]+|[a-z_]+:nic_[a-z0-9_]+:[a-z0-9_]+|up)\b`)

func metricNames(expr string) []string {
	seen := make(map[string]bool)
	var out []string
	for _, m := range metricName.FindAllString(expr, -1) {
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	sort.Strings(out)
	return out
}

func instances(res []sample) map[string]bool {
	out := make(map[string]bool)
	for _, s := range res {
		out[s.Metric["instance"]] = true
	}
	return out
}

// TestPrometheusStack runs the shipped rules and dashboards in a real
// Prometheus against two demo hosts, one with every alerting fault and one
// healthy, and the alerts through a real Alertmanager.
func TestPrometheusStack(t *testing.T) {
	t.Parallel() // see TestMain
	s := startStack(t)
	t.Run("rules load and evaluate", s.testRulesHealthy)
	t.Run("alert expressions", s.testAlertExpressions)
	t.Run("optic alert before the flap", s.testOpticAlertBeforeFlap)
	t.Run("recording rules", s.testRecordingRules)
	t.Run("dashboards", s.testDashboards)
	t.Run("routing", s.testRouting)
}

func (s *stack) testRulesHealthy(t *testing.T) {
	want := len(alertRules(t)) + len(recordingRules(t))
	waitFor(t, "every rule evaluated without error", stackWait, func() error {
		var body struct {
			Data struct {
				Groups []struct {
					File  string `json:"file"`
					Rules []struct {
						Name           string `json:"name"`
						Health         string `json:"health"`
						LastError      string `json:"lastError"`
						LastEvaluation string `json:"lastEvaluation"`
					} `json:"rules"`
				} `json:"groups"`
			} `json:"data"`
		}
		if err := s.prom.get("/api/v1/rules", &body); err != nil {
			return err
		}
		n := 0
		for _, g := range body.Data.Groups {
			for _, r := range g.Rules {
				n++
				if r.Health != "ok" || r.LastError != "" {
					return fmt.Errorf("rule %s: health %q, error %q", r.Name, r.Health, r.LastError)
				}
			}
		}
		if n != want {
			return fmt.Errorf("Prometheus loaded %d rules, the files have %d", n, want)
		}
		return nil
	})
}

func (s *stack) testAlertExpressions(t *testing.T) {
	alerts := alertRules(t)
	for _, name := range sortedKeys(alerts) {
		_, fault := faultAlerts[name]
		_, quiet := quietAlerts[name]
		if fault == quiet {
			t.Errorf("alert %s must be listed in exactly one of faultAlerts (with the demo fault that sets it off) and quietAlerts (with the reason the demo cannot)", name)
		}
	}
	// Every fault alert must match the faulty host at some point and never
	// the healthy one.
	checks := make(map[string]func() error)
	var mu sync.Mutex
	for _, name := range sortedKeys(faultAlerts) {
		expr := exprOf(alerts[name])
		checks[name+" matches the faulty demo host"] = func() error {
			res, err := s.prom.query(expr, false)
			if err != nil {
				return err
			}
			got := instances(res)
			if got[s.healthy] {
				mu.Lock()
				t.Errorf("%s matches the healthy demo host", name)
				mu.Unlock()
			}
			if !got[s.faulty] {
				return fmt.Errorf("matches %v, not yet the faulty host %s", got, s.faulty)
			}
			return nil
		}
	}
	waitAll(t, stackWait, checks)
	for _, name := range sortedKeys(alerts) {
		expr := exprOf(alerts[name])
		if _, ok := quietAlerts[name]; !ok {
			continue
		}
		if _, err := s.prom.query(expr, false); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		// Quiet means not firing. A condition may hold for a moment
		// without a fault (a scrape of a CPU-starved exporter that times
		// out makes up 0), which its "for:" is there to ride out.
		res, err := s.prom.query(fmt.Sprintf(`ALERTS{alertname=%q, alertstate="firing"}`, name), false)
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 0 {
			t.Errorf("%s fires for %v on the demo hosts, which should leave it quiet", name, instances(res))
		}
		found := 0
		for _, m := range metricNames(expr) {
			res, err := s.prom.query(fmt.Sprintf(`group by (instance) ({__name__=%q})`, m), false)
			if err != nil {
				t.Fatal(err)
			}
			got := instances(res)
			switch _, other := otherDriverMetrics[m]; {
			case got[s.faulty]:
				found++
			case emptyByDefault[m] != "":
				found++ // TestKnownBadLists checks it with data
			case strings.HasPrefix(m, "nic_fabric_remote_") && got[s.healthy]:
				// The far end of the faulty host's InfiniBand port cannot
				// be read while its ib_link_down fault has the link down.
				found++
			case !other:
				t.Errorf("%s reads %s, which the demo hosts do not export (found on %v)", name, m, got)
			}
		}
		if found == 0 {
			t.Errorf("%s reads no metric the demo hosts export", name)
		}
	}
}

func (s *stack) testRecordingRules(t *testing.T) {
	for _, name := range sortedKeys(recordingRules(t)) {
		switch why, ok := recordingRulesNotPerHost[name]; {
		case ok && strings.HasPrefix(name, "pool:"):
			waitFor(t, name+" ("+why+")", stackWait, func() error {
				res, err := s.prom.query(name, false)
				if err != nil {
					return err
				}
				if len(res) == 0 {
					return fmt.Errorf("%s has no series", name)
				}
				return nil
			})
			continue
		case ok:
			continue
		}
		waitFor(t, name+" for both demo hosts", stackWait, func() error {
			res, err := s.prom.query(name, false)
			if err != nil {
				return err
			}
			if got := instances(res); !got[s.faulty] || !got[s.healthy] {
				return fmt.Errorf("%s has series for %v, want both demo hosts", name, got)
			}
			return nil
		})
	}
}

// recordingRulesNotPerHost are the recording rules that have no series
// for each demo host, and why; a pool: rule must still have a series.
var recordingRulesNotPerHost = map[string]string{
	"pool:nic_firmware_running_versions:count": "one series per pool and board, not per host",
	"device:nic_firmware_known_bad:info":       emptyByDefault["device:nic_firmware_known_bad:info"],
	"device:nic_driver_known_bad:info":         emptyByDefault["device:nic_driver_known_bad:info"],
}

// emptyByDefault are the recorded series that have no data at all under
// the shipped configuration, and why: the alerts and panels that read
// them are checked for valid queries, not for data.
var emptyByDefault = map[string]string{
	"device:nic_firmware_known_bad:info": "the shipped known-bad lists are empty; TestKnownBadLists fills them",
	"device:nic_driver_known_bad:info":   "the shipped known-bad lists are empty; TestKnownBadLists fills them",
}

// testRouting checks what reaches the webhook through the shipped
// Alertmanager routing: the pages of the faulty host at the pager, its
// warnings at the ticket receiver, its info alerts nowhere, and nothing at
// all from the healthy host.
func (s *stack) testRouting(t *testing.T) {
	alerts := alertRules(t)
	// Only alerts with "for: 0m" can fire within the test.
	want := map[string]map[string]bool{"page": {}, "warning": {}, "info": {}}
	for name := range faultAlerts {
		r := alerts[name]
		if r.For == nil || (*r.For != "0m" && *r.For != "0s") {
			continue
		}
		want[r.Labels["severity"]][name] = true
	}
	for sev, names := range want {
		if len(names) == 0 {
			t.Fatalf("no %s alert with for: 0m among faultAlerts: its route is not tested", sev)
		}
	}
	receiver := map[string]string{"page": "/pager", "warning": "/tickets"}
	waitFor(t, fmt.Sprintf("notifications: pager %v, tickets %v", sortedKeys(want["page"]), sortedKeys(want["warning"])), stackWait, func() error {
		got := make(map[string]map[string]bool)
		for _, n := range s.hook.Received() {
			path := n.Path
			if got[path] == nil {
				got[path] = make(map[string]bool)
			}
			if n.Labels["instance"] == s.faulty && n.Status == "firing" {
				got[path][n.Labels["alertname"]] = true
			}
		}
		for _, sev := range []string{"page", "warning"} {
			for name := range want[sev] {
				if !got[receiver[sev]][name] {
					return fmt.Errorf("%s not received at %s yet (it has %v)", name, receiver[sev], sortedKeys(got[receiver[sev]]))
				}
			}
		}
		return nil
	})
	// The info alerts fire in Prometheus, yet reach no receiver.
	for name := range want["info"] {
		res, err := s.prom.query(fmt.Sprintf(`ALERTS{alertname=%q, alertstate="firing", instance=%q}`, name, s.faulty), false)
		if err != nil {
			t.Fatal(err)
		}
		if len(res) == 0 {
			t.Errorf("info alert %s does not fire for the faulty host, so its route is not tested", name)
		}
	}
	for _, n := range s.hook.Received() {
		t.Logf("received at %s: %s %s severity=%s device=%s", n.Receiver, n.Status, n.Labels["alertname"], n.Labels["severity"], n.Labels["device"])
	}
	for _, n := range s.hook.Received() {
		name := n.Labels["alertname"]
		path := n.Path
		switch {
		case n.Labels["instance"] == s.healthy:
			t.Errorf("the healthy demo host sent %s to %s", name, n.Receiver)
		case path != receiver[n.Labels["severity"]]:
			t.Errorf("%s with severity %q was routed to %s", name, n.Labels["severity"], n.Receiver)
		case n.Annotations["runbook_url"] != alerts[name].Annotations["runbook_url"]:
			t.Errorf("%s arrived with runbook_url %q", name, n.Annotations["runbook_url"])
		case n.Labels["job"] != "nic_exporter" || n.Annotations["summary"] == "" || !strings.Contains(n.Annotations["summary"], n.Labels["instance"]):
			t.Errorf("%s arrived without its job label or a summary naming the host: %+v", name, n)
		}
		if _, perDevice := faultAlerts[name]; perDevice && n.Labels["device"] == "" && n.Labels["file"] == "" && (n.Labels["pid"] == "" || n.Labels["comm"] == "") {
			t.Errorf("%s arrived without its device label (or pid and comm of a VMA process, or the log file): %+v", name, n.Labels)
		}
	}
	// No alert of any severity fires for the healthy host.
	res, err := s.prom.query(fmt.Sprintf(`ALERTS{instance=%q, alertstate="firing"}`, s.healthy), false)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		t.Errorf("healthy demo host has alert %s (%s)", r.Metric["alertname"], r.Metric["alertstate"])
	}
}
