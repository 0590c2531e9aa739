package deploy

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// catalogueFile is the fault catalogue: one section per demo fault with
// the alerts it fires, after how long, and the alerts it does not fire.
const catalogueFile = "../docs/faults.md"

// catalogueEntry is one fault's section of the catalogue.
type catalogueEntry struct {
	fault string
	// fires maps each alert the fault fires to the documented time from
	// the fault's start until it fires (the fault's onset plus the
	// alert's "for:").
	fires map[string]time.Duration
	// late are the alerts of fires whose condition needs more demo time
	// than the stack test runs (a counter that takes 15 minutes to
	// saturate); the stack test neither expects nor forbids them.
	late map[string]bool
	// quiet are the alerts the section says the fault does not fire.
	quiet []string
}

var (
	faultHeading   = regexp.MustCompile("^### `([a-z0-9_]+)`$")
	firesItem      = regexp.MustCompile("^`(NIC[A-Za-z0-9]+)` after ([0-9hms]+)( \\(.*\\))?$")
	catalogueAlert = regexp.MustCompile("`(NIC[A-Za-z0-9]+)`")
)

// beyondStack marks a fires item whose condition takes longer to arise
// than the stack test runs.
const beyondStack = "not in the stack test"

// readCatalogue parses the fault sections of the catalogue: a heading
// "### `fault`", a line "**Fires:** `Alert` after 1m; `Other` after 0s
// (remark)" (or "none") and a line "**Does not fire:** " naming alerts in
// backquotes (or "none").
func readCatalogue(t *testing.T) map[string]*catalogueEntry {
	t.Helper()
	f, err := os.Open(catalogueFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := make(map[string]*catalogueEntry)
	var cur *catalogueEntry
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if m := faultHeading.FindStringSubmatch(text); m != nil {
			if out[m[1]] != nil {
				t.Errorf("%s:%d: fault %s has two sections", catalogueFile, line, m[1])
			}
			cur = &catalogueEntry{fault: m[1], late: map[string]bool{}}
			out[m[1]] = cur
			continue
		}
		if strings.HasPrefix(text, "#") {
			cur = nil
			continue
		}
		if cur == nil {
			continue
		}
		if rest, ok := strings.CutPrefix(text, "**Fires:** "); ok {
			if cur.fires != nil {
				t.Errorf("%s:%d: fault %s has two Fires lines", catalogueFile, line, cur.fault)
			}
			cur.fires = map[string]time.Duration{}
			if rest == "none" {
				continue
			}
			for _, item := range strings.Split(rest, "; ") {
				m := firesItem.FindStringSubmatch(strings.TrimSpace(item))
				if m == nil {
					t.Errorf("%s:%d: fault %s: %q is not \"`Alert` after DURATION (remark)\"", catalogueFile, line, cur.fault, item)
					continue
				}
				d, err := time.ParseDuration(m[2])
				if err != nil {
					t.Errorf("%s:%d: fault %s: %s after %q: %v", catalogueFile, line, cur.fault, m[1], m[2], err)
				}
				cur.fires[m[1]] = d
				if strings.Contains(m[3], beyondStack) {
					cur.late[m[1]] = true
				}
			}
		}
		if rest, ok := strings.CutPrefix(text, "**Does not fire:** "); ok {
			cur.quiet = []string{}
			for _, m := range catalogueAlert.FindAllStringSubmatch(rest, -1) {
				cur.quiet = append(cur.quiet, m[1])
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// demoFaults returns the faults the demo knows, as the exporter's --help
// lists them (from demo.Faults; the deploy module does not link the demo
// and its netlink dependencies).
func demoFaults(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command(exporterBinary, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("nic_exporter --help: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`Known: ([a-z0-9_, ]+)\.`).FindStringSubmatch(strings.Join(strings.Fields(string(out)), " "))
	if m == nil {
		t.Fatalf("nic_exporter --help lists no known demo faults:\n%s", out)
	}
	return strings.Split(m[1], ", ")
}

// promDuration parses a Prometheus duration of the rule files ("0m",
// "15m", "1h").
func promDuration(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("duration %q: %v", s, err)
	}
	return d
}

// TestFaultCatalogue checks that docs/faults.md stays true to the demo
// and the alert rules: every fault demo.Faults returns has a section,
// every section names a real fault and real alerts, no alert both fires
// and does not, every documented time is at least the alert's "for:",
// the stack test's faultAlerts agree with it, and the README's fault
// examples are documented and linked.
func TestFaultCatalogue(t *testing.T) {
	cat := readCatalogue(t)
	alerts := alertRules(t)
	known := make(map[string]bool)
	faults := demoFaults(t)
	if len(faults) < 10 {
		t.Fatalf("nic_exporter --help lists only %d demo faults: %v", len(faults), faults)
	}
	for _, f := range faults {
		known[f] = true
		if cat[f] == nil {
			t.Errorf("demo fault %s has no section in %s: add \"### `%s`\" with its Fires and Does not fire lines", f, catalogueFile, f)
		}
	}
	for _, name := range sortedKeys(cat) {
		e := cat[name]
		if !known[name] {
			t.Errorf("%s documents fault %s, which the demo does not know (nic_exporter --help: %v)", catalogueFile, name, faults)
		}
		if e.fires == nil || e.quiet == nil {
			t.Errorf("%s: fault %s lacks its **Fires:** or **Does not fire:** line", catalogueFile, name)
		}
		for alert, after := range e.fires {
			r, ok := alerts[alert]
			if !ok {
				t.Errorf("%s: fault %s fires %s, which %s does not define", catalogueFile, name, alert, alertsFile)
				continue
			}
			if r.For != nil && after < promDuration(t, string(*r.For)) {
				t.Errorf("%s: fault %s fires %s after %v, before its for: %s", catalogueFile, name, alert, after, *r.For)
			}
		}
		for _, alert := range e.quiet {
			if _, ok := alerts[alert]; !ok {
				t.Errorf("%s: fault %s does not fire %s, which %s does not define", catalogueFile, name, alert, alertsFile)
			}
			if _, ok := e.fires[alert]; ok {
				t.Errorf("%s: fault %s both fires and does not fire %s", catalogueFile, name, alert)
			}
		}
	}
	for alert, fault := range faultAlerts {
		if e := cat[fault]; e != nil {
			if _, ok := e.fires[alert]; !ok {
				t.Errorf("the stack test's faultAlerts has %s set off by %s, which %s does not list among its alerts", alert, fault, catalogueFile)
			}
		}
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "docs/faults.md") {
		t.Errorf("README.md does not link docs/faults.md")
	}
	examples := regexp.MustCompile(`--demo\.faults=([a-z0-9_@,.-]+)`).FindAllStringSubmatch(string(readme), -1)
	if len(examples) == 0 {
		t.Errorf("README.md has no --demo.faults example")
	}
	for _, m := range examples {
		for _, item := range strings.Split(m[1], ",") {
			name, _, _ := strings.Cut(item, "@")
			if !known[name] || cat[name] == nil {
				t.Errorf("README.md example --demo.faults=%s: fault %s is not a demo fault documented in %s", m[1], name, catalogueFile)
			}
		}
	}
}

// forScale divides every "for:" of the alert rules in the catalogue's
// stack test. The longest "for:" is 15 minutes, the test must finish in
// about three: scaled by 10 it is 90 s. Only the "for:" durations are
// scaled, not the demo's clock nor the rules' range windows, so an alert
// whose condition holds too briefly for its real "for:" (the reason
// ib_link_down was lengthened) would still fire in the test;
// TestFaultCatalogue and the demo's own tests keep the real durations
// true.
const forScale = 10

// scaledRules writes a copy of alerts.yml with every "for:" divided by
// forScale into dir and returns its path.
func scaledRules(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	forLine := regexp.MustCompile(`(?m)^(\s+for: )(\S+)$`)
	n := 0
	out := forLine.ReplaceAllStringFunc(string(b), func(line string) string {
		m := forLine.FindStringSubmatch(line)
		n++
		return fmt.Sprintf("%s%ds", m[1], int(promDuration(t, m[2]).Seconds())/forScale)
	})
	if n != len(alertRules(t)) {
		t.Fatalf("scaled %d for: lines, %s has %d alerts", n, alertsFile, len(alertRules(t)))
	}
	path := filepath.Join(dir, "alerts-scaled.yml")
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// catalogueFaultDelay is when each fault starts after its exporter is
// ready. Prometheus runs before the exporters and picks each up from its
// file_sd targets file, so in this time it scrapes the healthy state
// (every 3 s) and counters that step once when their fault starts
// (link_downed, the evidence captures) are seen to rise. The test checks
// that every exporter was scraped twice before its fault. On a calm
// machine a new target's second scrape comes up to 16 s after the file
// changes: the discovery manager and the scrape manager each pass on
// target updates at most every 5 s, then the first scrape waits for its
// offset in the 3 s interval and the second one interval more. 15 s left
// one second over that bound; a CI run on a busy machine failed this test
// in a way its log did not show, and this check is the one of its checks
// that depends on time, so the delay is about twice the bound.
const catalogueFaultDelay = 30 * time.Second

// catalogueMaxPlan bounds the wait a catalogue test plans once its
// exporters have started (fault delay, longest scaled for: or onset,
// margin). It is about twice the plan of today's catalogue (3 min 35 s),
// so the two catalogue tests and the rest of the package stay within
// DEPLOY_TIMEOUT.
const catalogueMaxPlan = 7 * time.Minute

// catalogueEngine starts the rule engine of a catalogue test in dir: it
// scrapes the file_sd targets of targetsFile (job nic_exporter) every 3 s,
// evaluates the alert rules of the file alerts and the recording rules of
// the file rules every second, and keeps the ALERTS series where the
// returned API queries them. It returns once the engine is ready.
type catalogueEngine func(t *testing.T, dir, targetsFile, alerts, rules string) promAPI

// startPrometheusEngine is the catalogue's engine in one Prometheus.
func startPrometheusEngine(t *testing.T, dir, targetsFile, alerts, rules string) promAPI {
	t.Helper()
	prometheus := testenv.LookPath(t, "prometheus")
	promCfg := fmt.Sprintf(`global:
  scrape_interval: 3s
  scrape_timeout: 3s
  evaluation_interval: 1s
rule_files: [%q, %q]
scrape_configs:
  - job_name: nic_exporter
    file_sd_configs:
      - files: [%q]
`, alerts, rules, targetsFile)
	promAddr := startPrometheus(t, prometheus, dir, promCfg)
	return promAPI{base: "http://" + promAddr}
}

// TestFaultCatalogueInStack runs every catalogued fault on a demo exporter
// of its own, plus a healthy one, as targets of one real Prometheus with
// the shipped alert rules (every "for:" divided by forScale) and checks
// that exactly the catalogue's alerts reach "firing" for each instance
// (ALERTS{alertstate="firing"}) and none for the healthy one. It waits
// until every expected alert has fired and, for every instance, the
// longest scaled "for:" and each expected alert's onset have passed, so
// an alert the catalogue does not expect has had the time to fire too.
// Runtime on the shared 2-core machine, beside TestFaultCatalogueInVMAlert
// and five agents' builds: 4 min 24 s (30 exporters start in 1 min 26 s,
// then 30 s to the last fault, 2 min 53 s for the longest onset,
// optic_degrading's NICTransceiverRxPowerLowAlarm, 15 s of margin, and
// 13 s to stop the exporters together); stopped one by one they took
// 3 min 30 s under such load. On a calm machine the exporters start in
// under 30 s.
func TestFaultCatalogueInStack(t *testing.T) {
	t.Parallel() // see TestMain
	runCatalogue(t, startPrometheusEngine)
}

// runCatalogue is the catalogue stack test with the rule engine start
// (TestFaultCatalogueInStack, TestFaultCatalogueInVMAlert). Its last log
// line lists each alert that fired with the faults it fired for, the
// table of deploy/README.md, "Other engines".
func runCatalogue(t *testing.T, start catalogueEngine) {
	t.Helper()
	cat := readCatalogue(t)
	alerts := alertRules(t)
	dir := t.TempDir()
	begin := time.Now()

	targetsFile := filepath.Join(dir, "targets.json")
	var targets []string
	writeTargets := func() {
		t.Helper()
		tmp := targetsFile + ".tmp"
		if err := os.WriteFile(tmp, []byte(`[{"targets": [`+strings.Join(targets, ", ")+`]}]`), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, targetsFile); err != nil {
			t.Fatal(err)
		}
	}
	writeTargets()
	rules, _ := filepath.Abs(rulesFile)
	api := start(t, dir, targetsFile, scaledRules(t, dir), rules)
	api.start = begin

	instance := make(map[string]string)   // address -> fault ("" healthy)
	faultAt := make(map[string]time.Time) // address -> when its fault starts
	var exporters []*process
	add := func(name, fault string) {
		var schedule string
		if fault != "" {
			schedule = fmt.Sprintf("%s@%v", fault, catalogueFaultDelay)
		}
		ready := time.Now() // the demo clock starts before /readyz answers
		addr, p := startExporterProcess(t, name, schedule)
		exporters = append(exporters, p)
		instance[addr], faultAt[addr] = fault, ready.Add(catalogueFaultDelay)
		targets = append(targets, fmt.Sprintf("%q", addr))
		writeTargets()
	}
	add("exporter-healthy", "")
	for _, f := range sortedKeys(cat) {
		add("exporter-"+f, f)
	}
	started := time.Now()
	t.Logf("%d exporters started in %v", len(instance), started.Sub(begin).Round(time.Second))
	// Registered after the exporters' own cleanups, so it runs before
	// them: the exporters stop together instead of one by one.
	t.Cleanup(func() { stopAll(exporters) })

	// want: instance -> alerts the catalogue says fire within the test.
	// until: instance -> when the test has waited long enough for it.
	// The hostless alerts (rules_test.go) are left out: they have no
	// instance label, so they cannot fire for one of these exporters
	// (one that did would fail the test as an unknown instance), and
	// NICFirmwareSkew's 6h would make every instance wait 36 minutes.
	var longestFor time.Duration
	for name, r := range alerts {
		if _, ok := hostless[name]; !ok && r.For != nil {
			longestFor = max(longestFor, promDuration(t, string(*r.For))/forScale)
		}
	}
	const margin = 15 * time.Second // scrapes, polls and evaluations
	want := make(map[string]map[string]bool)
	maybe := make(map[string]map[string]bool)
	var until time.Time
	for addr, f := range instance {
		want[addr], maybe[addr] = map[string]bool{}, map[string]bool{}
		wait := longestFor
		if f != "" {
			for alert, after := range cat[f].fires {
				if cat[f].late[alert] {
					maybe[addr][alert] = true
					continue
				}
				want[addr][alert] = true
				// The condition's onset is the documented time
				// less the real for:; the test waits the scaled one.
				real := time.Duration(0)
				if r := alerts[alert]; r.For != nil {
					real = promDuration(t, string(*r.For))
				}
				wait = max(wait, after-real+real/forScale)
			}
		}
		if u := faultAt[addr].Add(wait + margin); u.After(until) {
			until = u
		}
	}
	// Past until, only alerts still missing are waited for: a hang
	// guard for a machine busy with other work, not a measure.
	deadline := until.Add(stackWait)
	// The planned wait is bounded before any of it is spent, so a rule
	// or fault with a long onset fails here with its name instead of
	// running the package into its timeout.
	if planned := until.Sub(started); planned > catalogueMaxPlan {
		t.Fatalf("the catalogue would wait %v for its alerts, more than %v: a per-host rule's for: divided by %d (longest %v) or a fault's **Fires:** onset is too long for this test; or mark the alert %q in %s", planned.Round(time.Second), catalogueMaxPlan, forScale, longestFor, beyondStack, catalogueFile)
	}

	fired := make(map[string]map[string]time.Time) // instance -> alert -> first seen firing
	for addr := range instance {
		fired[addr] = map[string]time.Time{}
	}
	missing := func() []string {
		var out []string
		for addr, names := range want {
			for name := range names {
				if _, ok := fired[addr][name]; !ok {
					out = append(out, instance[addr]+": "+name)
				}
			}
		}
		sort.Strings(out)
		return out
	}
	for {
		res, err := api.query(`ALERTS{alertstate="firing"}`, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range res {
			addr, name := s.Metric["instance"], s.Metric["alertname"]
			if fired[addr] == nil {
				t.Fatalf("alert %s fires for unknown instance %q", name, addr)
			}
			if _, ok := fired[addr][name]; !ok {
				fired[addr][name] = time.Now()
			}
		}
		now := time.Now()
		if (len(missing()) == 0 && now.After(until)) || now.After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	// A range query over the whole run catches an alert that fired only
	// between two polls.
	res, err := api.query(`ALERTS{alertstate="firing"}`, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range res {
		addr, name := s.Metric["instance"], s.Metric["alertname"]
		if _, ok := fired[addr][name]; !ok && fired[addr] != nil {
			at, ok := s.first()
			if !ok {
				at = time.Now()
			}
			fired[addr][name] = at
		}
	}
	// Every exporter must have been scraped twice before its fault
	// started, or a counter that stepped at the start was never seen low.
	for addr, f := range instance {
		if f == "" {
			continue
		}
		q := fmt.Sprintf(`count_over_time(up{instance=%q}[%ds] @ %d) >= 2`, addr, int(catalogueFaultDelay.Seconds()), faultAt[addr].Unix())
		res, err := api.query(q, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 1 {
			t.Errorf("%s: the engine did not scrape its exporter twice in the %v before the fault started; raise catalogueFaultDelay", f, catalogueFaultDelay)
		}
	}
	t.Logf("catalogue stack test ran %v", time.Since(begin).Round(time.Second))

	for _, m := range missing() {
		t.Errorf("%s does not fire in time (scaled for: /%d)", m, forScale)
	}
	byAlert := make(map[string][]string)
	for _, addr := range sortedKeys(fired) {
		f := instance[addr]
		for _, name := range sortedKeys(fired[addr]) {
			byAlert[name] = append(byAlert[name], f)
			switch {
			case want[addr][name] || maybe[addr][name]:
				t.Logf("%s: %s fired %v after the fault's start", f, name, fired[addr][name].Sub(faultAt[addr]).Round(time.Second))
			case f == "":
				t.Errorf("the healthy demo host fires %s", name)
			case fired[addr][name].After(until):
				// The test waited past its plan for alerts still
				// missing (a busy machine), and the fault went on
				// to stages the plan does not reach.
				t.Logf("%s: %s fired %v after the fault's start, after the planned end of the test; not checked", f, name, fired[addr][name].Sub(faultAt[addr]).Round(time.Second))
			default:
				t.Errorf("fault %s fires %s, which %s does not list under its **Fires:** line", f, name, catalogueFile)
			}
		}
	}
	var b strings.Builder
	for _, name := range sortedKeys(byAlert) {
		sort.Strings(byAlert[name])
		fmt.Fprintf(&b, "\n%s: %s", name, strings.Join(byAlert[name], ", "))
	}
	t.Logf("the alerts that fired, with their faults:%s", b.String())
}
