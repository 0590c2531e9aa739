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
// **Fires:** alerts. The counters of the faults of carried rise between
// the two samples, and the rules see the rate between them.
var roundTrip = map[string][]string{
	"fw":                   {"NICDevlinkFwError", "NICDevlinkReporterStuck"},
	"fw_fatal":             {"NICDevlinkFwFatalError", "NICDevlinkReporterStuck", "NICKernelLogFirmwareError"},
	"vnic":                 {"NICDevlinkReporterStuck", "NICDevlinkVnicError"},
	"wd_expired":           {"NICKernelLogENAReset"},
	"ena_reg_read_timeout": {"NICKernelLogENAReset"},
	"mlx5_cmd_timeout":     {"NICKernelLogCommandErrors"},
	"mlx5_cq_overrun":      {"NICKernelLogCQErrors"},
	"mlx5_module_error":    {"NICKernelLogHardwareEvent"},
	"pcie_degraded":        {"NICPCIeLinkDegraded"},
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

// notInBundle lists the faults a bundle does not show, and why.
// docs/support-bundles.md has the same table.
var notInBundle = map[string]string{
	"pcie_aer":             "counter: TOTAL_ERR_NONFATAL in pci_sysfs.txt is 1 in both samples (one message per activation, before the first sample), so the rate between them is 0",
	"fabric_congestion":    "far-end switch port counters: collect sends no MADs into the fabric",
	"fabric_symbol_errors": "far-end switch port counters: collect sends no MADs into the fabric",
	"vma_daemon_down":      "application log of a VMA process: not host NIC state, collect does not read application files",
	"vma_hugepages":        "application log of a VMA process: not host NIC state",
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
// with no findings (diagnose exit 0), whose files are the golden list.
func TestRoundTripHealthy(t *testing.T) {
	t.Parallel()
	p := collectDemo(t, "")
	r, code := diagnoseBundle(t, p)
	if code != diagnose.ExitClean || len(r.Findings) > 0 {
		t.Fatalf("healthy demo: exit %d, findings %+v", code, r.Findings)
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
// roundTrip, with their runbooks, none that the catalogue does not say
// the fault fires.
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
			if code != diagnose.ExitFindings {
				t.Fatalf("exit %d, want %d", code, diagnose.ExitFindings)
			}
			got := map[string]bool{}
			for _, fd := range r.Findings {
				got[fd.Alert] = true
				if !contains(cat[f], fd.Alert) {
					t.Errorf("finding %s (%s) is not among the fault's **Fires:** alerts %v", fd.Alert, fd.Evidence, cat[f])
				}
				anchor := "#" + strings.ToLower(fd.Alert)
				if !strings.HasSuffix(fd.Runbook, "docs/runbooks.md"+anchor) || !bytes.Contains(bytes.ToLower(runbooks), []byte("## "+strings.ToLower(fd.Alert))) {
					t.Errorf("finding %s: runbook %q has no section in docs/runbooks.md", fd.Alert, fd.Runbook)
				}
			}
			for _, a := range roundTrip[f] {
				if !got[a] {
					t.Errorf("no %s finding; findings: %+v", a, r.Findings)
				}
				delete(got, a)
			}
			for a := range got {
				t.Errorf("finding %s is not in roundTrip for the fault", a)
			}
		})
	}
}

// TestSupportBundleDocs checks the two fault tables of
// docs/support-bundles.md against roundTrip and notInBundle.
func TestSupportBundleDocs(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "docs", "support-bundles.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `([a-z0-9_]+)` \\| (.*) \\|$")
	shows, notShown := map[string]string{}, map[string]string{}
	var table map[string]string
	for _, l := range strings.Split(string(data), "\n") {
		switch {
		case l == "### Faults a bundle shows":
			table = shows
		case l == "### Faults a bundle does not show":
			table = notShown
		case strings.HasPrefix(l, "#"):
			table = nil
		}
		if m := row.FindStringSubmatch(l); m != nil && table != nil {
			table[m[1]] = m[2]
		}
	}
	for f, alerts := range roundTrip {
		want := "`" + strings.Join(alerts, "`, `") + "`"
		if shows[f] != want {
			t.Errorf("docs: fault %s shows %q, want %q", f, shows[f], want)
		}
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
