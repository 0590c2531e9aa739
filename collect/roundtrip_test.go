package collect_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collect"
	"github.com/nic-exporter/nic_exporter/collector/collectortest"
	"github.com/nic-exporter/nic_exporter/demo"
	"github.com/nic-exporter/nic_exporter/diagnose"
	"github.com/nic-exporter/nic_exporter/internal/logrules"
	"github.com/nic-exporter/nic_exporter/internal/ruleeval"
)

// clock is a wall clock the test steps: the demo host runs on it and the
// wait between the samples advances it instead of sleeping.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) wait(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
	return ctx.Err()
}

// demoStart is the wall-clock start of the test demo hosts; the samples
// are taken 2 minutes and 2 minutes 10 seconds after it.
var demoStart = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// collectDemo collects the demo host with the faults given, all started
// at its start, into a bundle directory and returns its path.
func collectDemo(t *testing.T, faults string) string {
	t.Helper()
	clk := &clock{t: demoStart.Add(2 * time.Minute)}
	h, err := demo.New(demo.Config{Faults: faults, Start: demoStart, Now: clk.now}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	b, err := collect.Run(context.Background(), collect.Config{
		Sources: collect.DemoSources(h), Interval: 10 * time.Second, Timeout: time.Minute,
		Now: clk.now, Wait: clk.wait,
	}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range b.Manifest.Unreadable {
		// The demo's fw_fatal reporter has no diagnose callback (mlx5's
		// has none either); anything else is a collect bug.
		if !strings.Contains(u.Reason, "has no diagnose") {
			t.Errorf("unreadable on the demo host: %s: %s", u.Source, u.Reason)
		}
	}
	out := filepath.Join(t.TempDir(), "bundle")
	if err := b.Write(out, demoStart); err != nil {
		t.Fatal(err)
	}
	return out
}

// diagnoseBundle runs diagnose over the bundle as the command does.
func diagnoseBundle(t *testing.T, p string) (*diagnose.Report, int) {
	t.Helper()
	rules, err := logrules.Load("", logrules.KernelRules())
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := diagnose.Run(diagnose.Config{Paths: []string{p}, Format: "text", Rules: rules, Limits: diagnose.DefaultLimits, Now: demoStart},
		&stdout, &stderr, zap.NewNop())
	if stderr.Len() > 0 {
		t.Fatalf("diagnose: %s", stderr.String())
	}
	b, err := diagnose.Open(p, diagnose.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	alerts, err := ruleeval.Shipped(nil)
	if err != nil {
		t.Fatal(err)
	}
	r := diagnose.NewAnalyzer(rules, alerts, nil).Analyze(b)
	for _, f := range r.Files {
		if strings.HasPrefix(f.Note, "unparsable") || strings.Contains(f.Note, "not a format diagnose reads") {
			t.Errorf("diagnose did not read %s: %s", f.Name, f.Note)
		}
	}
	return r, code
}

// roundTrip lists, per fault of docs/faults.md that a bundle shows, the
// alerts diagnose names for it: exactly these, each one of the fault's
// **Fires:** alerts, beside the healthy host's findings since boot
// (healthySinceBoot). The counters of the faults of carried rise between
// the two samples, and the rules see the rate between them; those of
// sinceBootOnly rose before the earlier sample only.
var roundTrip = map[string][]string{
	"fw":                   {"NICDevlinkFwError", "NICDevlinkReporterStuck"},
	"fw_fatal":             {"NICDevlinkFwFatalError", "NICDevlinkReporterStuck", "NICKernelLogFirmwareError"},
	"vnic":                 {"NICDevlinkReporterStuck", "NICDevlinkVnicError"},
	"wd_expired":           {"NICENAWatchdogExpired", "NICKernelLogENAReset"},
	"ena_reg_read_timeout": {"NICKernelLogENAReset"},
	"mlx5_cmd_timeout":     {"NICKernelLogCommandErrors"},
	"mlx5_cq_overrun":      {"NICKernelLogCQErrors"},
	"mlx5_module_error":    {"NICKernelLogHardwareEvent"},
	"pcie_degraded":        {"NICPCIeLinkDegraded"},
	"pcie_aer":             {"NICPCIeAERUncorrectable"},
	"pcie_aer_corrected":   {"NICPCIeAERCorrectableHigh"},
	"link_down":            {"NICLinkDown", "NICLinkDownWithReason"},
	"link_flap":            {"NICLinkFlapping"},
	"optic_degrading":      {"NICTransceiverRxPowerLow"},
	"ib_link_down":         {"NICInfiniBandPortNotLinkUp", "NICLinkDown"},
	"ib_symbol_errors":     {"NICInfiniBandCounterSaturated", "NICInfiniBandSymbolErrors"},
	"bw_in_allowance":      {"NICENAAllowanceExceeded"},
	"rx_out_of_buffer":     {"NICRxOutOfBuffer"},
	"roce_congestion":      {"NICPFCPauseStorm", "NICRDMARetransmissions", "NICRoCECongestion"},
	"rnr_retry":            {"NICInfiniBandRNRRetriesExceeded", "NICRDMAReceiverNotReady"},
	"efa_srd_degraded":     {"NICEFARDMAWorkRequestErrors", "NICEFARetransmissions", "NICEFARxDrops"},
	"nic_overheating":      {"NICTemperatureCritical", "NICTemperatureHigh"},
	// The libvma and libxlio statistics files; NICAppLogVMAErrors, which
	// vma_no_buffers fires too, reads the application's log, which a
	// bundle does not hold.
	"vma_no_buffers":  {"NICVMADrops", "NICVMANoBuffers"},
	"vma_os_fallback": {"NICVMAOSFallback"},
	"xlio_no_buffers": {"NICXLIODrops", "NICXLIONoBuffers"},
}

// sinceBootOnly lists, per fault of roundTrip, its alerts that diagnose
// names only since boot (view since_boot_only, not counted in the exit
// status): the fault's counter rose before the earlier sample and not
// between the two, as an event once a minute or once does.
var sinceBootOnly = map[string][]string{
	"pcie_aer":   {"NICPCIeAERUncorrectable"},
	"wd_expired": {"NICENAWatchdogExpired"},
}

// healthySinceBoot lists the findings ("alert device") of the healthy
// demo host, all only since boot: its counters start at the counts of a
// host up for a day (demoUptime) and do not move between the samples.
// docs/support-bundles.md has the same table.
var healthySinceBoot = map[string]string{
	"NICEFARemoteConnectionImpaired rdmap0s6 port 1": "impaired_remote_conn_events 1",
	"NICEFARemoteUnresponsive rdmap0s6 port 1":       "unresponsive_remote_events 3",
	"NICENAAllowanceExceeded ens5":                   "bw_in_allowance_exceeded, bw_out_allowance_exceeded, pps_allowance_exceeded (one finding each)",
	"NICInfiniBandLinkDowned mlx5_0 port 1":          "link_downed 2",
	"NICPhyDiscards enp8s0f1np1":                     "rx_discards_phy 96",
	"NICRxOutOfBuffer enp8s0f1np1":                   "rx_out_of_buffer 1187",
}

// notInBundle lists the faults a bundle does not show, and why.
// docs/support-bundles.md has the same table.
var notInBundle = map[string]string{
	"fabric_congestion":    "far-end switch port counters: collect sends no MADs into the fabric; shown through the daemon's /metrics (collect --url)",
	"fabric_symbol_errors": "far-end switch port counters: collect sends no MADs into the fabric; shown through the daemon's /metrics (collect --url)",
	"vma_daemon_down":      "application log of a VMA process: collect does not read application files; shown through the daemon's /metrics (collect --url)",
	"vma_hugepages":        "application log of a VMA process: collect does not read application files; shown through the daemon's /metrics (collect --url)",
}

// catalogue reads each fault's **Fires:** alerts from docs/faults.md.
func catalogue(t *testing.T) map[string][]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "docs", "faults.md"))
	if err != nil {
		t.Fatal(err)
	}
	heading := regexp.MustCompile("^### `([a-z0-9_]+)`$")
	alert := regexp.MustCompile("`(NIC[A-Za-z0-9]+)`")
	out := map[string][]string{}
	cur := ""
	for _, l := range strings.Split(string(data), "\n") {
		if m := heading.FindStringSubmatch(l); m != nil {
			cur = m[1]
			out[cur] = nil
			continue
		}
		if rest, ok := strings.CutPrefix(l, "**Fires:**"); ok && cur != "" {
			for _, m := range alert.FindAllStringSubmatch(rest, -1) {
				out[cur] = append(out[cur], m[1])
			}
		}
	}
	return out
}

// TestFaultTablesCoverCatalogue checks that every fault of the demo host
// is in docs/faults.md and either round-trips or says why not, and that
// each round-trip alert is one the catalogue says the fault fires.
func TestFaultTablesCoverCatalogue(t *testing.T) {
	cat := catalogue(t)
	for _, f := range demo.Faults() {
		fires, ok := cat[f]
		if !ok {
			t.Errorf("demo fault %s has no section in docs/faults.md", f)
		}
		alerts, rt := roundTrip[f]
		_, no := notInBundle[f]
		if rt == no {
			t.Errorf("fault %s: in both or neither of roundTrip and notInBundle", f)
		}
		for _, a := range alerts {
			if !contains(fires, a) {
				t.Errorf("fault %s: %s is not among its **Fires:** alerts %v", f, a, fires)
			}
		}
	}
	for f := range roundTrip {
		if _, ok := cat[f]; !ok {
			t.Errorf("roundTrip names %s, which docs/faults.md does not", f)
		}
	}
	for f, alerts := range sinceBootOnly {
		for _, a := range alerts {
			if !contains(roundTrip[f], a) {
				t.Errorf("sinceBootOnly: fault %s: %s is not in its roundTrip alerts %v", f, a, roundTrip[f])
			}
		}
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestRoundTripHealthy checks that the healthy demo host gives a bundle
// with no findings that count (diagnose exit 0) and only since boot
// those of healthySinceBoot, whose files are the golden list.
func TestRoundTripHealthy(t *testing.T) {
	t.Parallel()
	p := collectDemo(t, "")
	r, code := diagnoseBundle(t, p)
	if code != diagnose.ExitClean || r.Counted() > 0 {
		t.Fatalf("healthy demo: exit %d, findings %+v", code, r.Findings)
	}
	got := map[string]bool{}
	for _, f := range r.Findings {
		k := f.Alert + " " + f.Device
		got[k] = true
		if _, ok := healthySinceBoot[k]; !ok {
			t.Errorf("healthy demo: finding %s (%s, %s) is not in healthySinceBoot", k, f.View, f.Evidence)
		}
	}
	for k := range healthySinceBoot {
		if !got[k] {
			t.Errorf("healthy demo: no finding %s since boot", k)
		}
	}
	var names []string
	err := filepath.WalkDir(p, func(q string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(p, q)
		names = append(names, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	collectortest.Golden(t, filepath.Join("testdata", "bundle_files.golden"), strings.Join(names, "\n")+"\n")
}

// TestRoundTripFaults collects the demo host with each fault a bundle
// shows and checks that diagnose names exactly the fault's alerts of
// roundTrip beside the healthy host's findings since boot, with their
// runbooks, none that the catalogue does not say the fault fires, those
// of sinceBootOnly only since boot and the others with a finding that
// counts, and that the exit status is 1 when one counts.
func TestRoundTripFaults(t *testing.T) {
	cat := catalogue(t)
	runbooks, err := os.ReadFile(filepath.Join("..", "docs", "runbooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	faults := make([]string, 0, len(roundTrip))
	for f := range roundTrip {
		faults = append(faults, f)
	}
	sort.Strings(faults)
	for _, f := range faults {
		t.Run(f, func(t *testing.T) {
			t.Parallel() // each demo host is its own; the time goes to writing its files
			r, code := diagnoseBundle(t, collectDemo(t, f+"@0s"))
			want := diagnose.ExitClean
			for _, a := range roundTrip[f] {
				if !contains(sinceBootOnly[f], a) {
					want = diagnose.ExitFindings
				}
			}
			if code != want {
				t.Fatalf("exit %d, want %d", code, want)
			}
			got := map[string]bool{} // alert -> whether a finding of it counts
			for _, fd := range r.Findings {
				if _, ok := healthySinceBoot[fd.Alert+" "+fd.Device]; ok && fd.View == diagnose.ViewSinceBootOnly {
					continue
				}
				got[fd.Alert] = got[fd.Alert] || fd.View != diagnose.ViewSinceBootOnly
				if !contains(cat[f], fd.Alert) {
					t.Errorf("finding %s (%s) is not among the fault's **Fires:** alerts %v", fd.Alert, fd.Evidence, cat[f])
				}
				anchor := "#" + strings.ToLower(fd.Alert)
				if !strings.HasSuffix(fd.Runbook, "docs/runbooks.md"+anchor) || !bytes.Contains(bytes.ToLower(runbooks), []byte("## "+strings.ToLower(fd.Alert))) {
					t.Errorf("finding %s: runbook %q has no section in docs/runbooks.md", fd.Alert, fd.Runbook)
				}
			}
			for _, a := range roundTrip[f] {
				counts, ok := got[a]
				if !ok {
					t.Errorf("no %s finding; findings: %+v", a, r.Findings)
				} else if only := contains(sinceBootOnly[f], a); counts == only {
					t.Errorf("%s: a finding that counts %v, only since boot in sinceBootOnly %v", a, counts, only)
				}
				delete(got, a)
			}
			for a := range got {
				t.Errorf("finding %s is not in roundTrip for the fault", a)
			}
		})
	}
}

// TestSupportBundleDocs checks the fault tables of
// docs/support-bundles.md against roundTrip, sinceBootOnly,
// healthySinceBoot and notInBundle.
func TestSupportBundleDocs(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "docs", "support-bundles.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `([a-z0-9_]+|NIC[A-Za-z0-9]+ [^`]+)` \\| (.*) \\|$")
	shows, only, healthy, notShown := map[string]string{}, map[string]string{}, map[string]string{}, map[string]string{}
	var table map[string]string
	for _, l := range strings.Split(string(data), "\n") {
		switch {
		case l == "### Faults a bundle shows":
			table = shows
		case l == "### Alerts found only since boot":
			table = only
		case l == "### The healthy host since boot":
			table = healthy
		case l == "### Faults a bundle does not show":
			table = notShown
		case strings.HasPrefix(l, "#"):
			table = nil
		}
		if m := row.FindStringSubmatch(l); m != nil && table != nil {
			table[m[1]] = m[2]
		}
	}
	list := func(alerts []string) string { return "`" + strings.Join(alerts, "`, `") + "`" }
	for f, alerts := range roundTrip {
		if want := list(alerts); shows[f] != want {
			t.Errorf("docs: fault %s shows %q, want %q", f, shows[f], want)
		}
	}
	for f, alerts := range sinceBootOnly {
		if want := list(alerts); only[f] != want {
			t.Errorf("docs: fault %s shows only since boot %q, want %q", f, only[f], want)
		}
	}
	for k, why := range healthySinceBoot {
		if healthy[k] != why {
			t.Errorf("docs: the healthy host shows %s since boot because %q, want %q", k, healthy[k], why)
		}
	}
	if len(only) != len(sinceBootOnly) || len(healthy) != len(healthySinceBoot) {
		t.Errorf("docs since-boot tables have %d and %d rows, want %d and %d", len(only), len(healthy), len(sinceBootOnly), len(healthySinceBoot))
	}
	for f, why := range notInBundle {
		if notShown[f] != why {
			t.Errorf("docs: fault %s not shown because %q, want %q", f, notShown[f], why)
		}
	}
	if len(shows) != len(roundTrip) || len(notShown) != len(notInBundle) {
		t.Errorf("docs tables have %d and %d rows, want %d and %d", len(shows), len(notShown), len(roundTrip), len(notInBundle))
	}
}

// carried lists, for the faults of roundTrip found by a counter's rate
// between the two samples, the file and counter that show the fault.
var carried = map[string]struct{ file, counter string }{
	"bw_in_allowance":    {"ethtool_-S_ens5.txt", "bw_in_allowance_exceeded"},
	"rx_out_of_buffer":   {"ethtool_-S_enp8s0f1np1.txt", "rx_out_of_buffer"},
	"roce_congestion":    {"hw_counters_mlx5_1_1.txt", "np_ecn_marked_roce_packets"},
	"rnr_retry":          {"hw_counters_mlx5_0_1.txt", "rnr_nak_retry_err"},
	"efa_srd_degraded":   {"hw_counters_rdmap0s6_1.txt", "retrans_pkts"},
	"ib_symbol_errors":   {"ib_counters_mlx5_0_1.txt", "symbol_error"},
	"pcie_aer_corrected": {"pci_sysfs.txt", "TOTAL_ERR_COR"},
	"link_flap":          {"netdev_sysfs.txt", "enp8s0f1np1/carrier_changes"},
}

// counterIn returns the value of counter in a bundle file: "name: N"
// (ethtool -S), "name:N" (sysfs counters), "FUNCTION/attr:NAME N" (AER)
// or "IF/attr:N", the first line that names it, of the function
// 0000:08:00.1 for the AER totals.
func counterIn(t *testing.T, p, counter string) uint64 {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?:^|[\s/:])` + regexp.QuoteMeta(counter) + `(?::\s*|\s)(\d+)$`)
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "0000:") && !strings.HasPrefix(l, "0000:08:00.1/") {
			continue
		}
		if m := re.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			v, err := strconv.ParseUint(m[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("%s: no counter %s", p, counter)
	return 0
}

// TestCarriedFaultsMoveBetweenSamples checks that the faults found by a
// rate are found by the rise between the samples: the fault's counter
// rises more than on the healthy demo host.
func TestCarriedFaultsMoveBetweenSamples(t *testing.T) {
	healthy := collectDemo(t, "")
	delta := func(bundle, file, counter string) uint64 {
		later := counterIn(t, filepath.Join(bundle, file), counter)
		earlier := counterIn(t, filepath.Join(bundle, collect.EarlierDir, file), counter)
		if later < earlier {
			t.Fatalf("%s %s went back from %d to %d", file, counter, earlier, later)
		}
		return later - earlier
	}
	for f, c := range carried {
		if _, ok := roundTrip[f]; !ok {
			t.Errorf("%s: carried, but not in roundTrip", f)
		}
		t.Run(f, func(t *testing.T) {
			t.Parallel()
			got := delta(collectDemo(t, f+"@0s"), c.file, c.counter)
			base := delta(healthy, c.file, c.counter)
			t.Logf("%s %s: +%d between the samples, +%d on the healthy host", c.file, c.counter, got, base)
			if got <= base {
				t.Errorf("%s %s rose by %d between the samples, no more than on the healthy host (%d)", c.file, c.counter, got, base)
			}
		})
	}
}
