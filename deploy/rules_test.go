package deploy

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"sigs.k8s.io/yaml"

	"github.com/nic-exporter/nic_exporter/deploy/internal/mixin"
	"github.com/nic-exporter/nic_exporter/internal/logrules"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

const (
	alertsFile   = "prometheus/alerts.yml"
	rulesFile    = "prometheus/rules.yml"
	runbooksFile = "../docs/runbooks.md"
	runbookBase  = "https://github.com/nic-exporter/nic_exporter/blob/main/docs/runbooks.md#"
)

// pagers are the only alerts allowed to page: a fatal firmware error and an
// ENA keep-alive watchdog reset (issue 8). Every other alert is a ticket.
var pagers = map[string]bool{
	"NICDevlinkFwFatalError": true,
	"NICENAWatchdogExpired":  true,
}

// ruleFile is a Prometheus rule file. Decoding it strictly into the
// Prometheus Operator's types proves that the same groups fit a
// PrometheusRule object unchanged.
type ruleFile struct {
	Groups []monitoringv1.RuleGroup `json:"groups"`
}

func readRuleFile(t *testing.T, path string) ruleFile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f ruleFile
	if err := yaml.UnmarshalStrict(b, &f); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return f
}

// alertRules returns every alerting rule of alerts.yml by name.
func alertRules(t *testing.T) map[string]monitoringv1.Rule {
	t.Helper()
	out := make(map[string]monitoringv1.Rule)
	for _, g := range readRuleFile(t, alertsFile).Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				t.Errorf("%s group %s: recording rule %q belongs in %s", alertsFile, g.Name, r.Record, rulesFile)
				continue
			}
			if _, dup := out[r.Alert]; dup {
				t.Errorf("%s: alert %s defined twice", alertsFile, r.Alert)
			}
			out[r.Alert] = r
		}
	}
	return out
}

// recordingRules returns every recording rule of rules.yml by name.
func recordingRules(t *testing.T) map[string]monitoringv1.Rule {
	t.Helper()
	out := make(map[string]monitoringv1.Rule)
	for _, g := range readRuleFile(t, rulesFile).Groups {
		for _, r := range g.Rules {
			if r.Record == "" {
				t.Errorf("%s group %s: alert %q belongs in %s", rulesFile, g.Name, r.Alert, alertsFile)
				continue
			}
			out[r.Record] = r
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestPromtoolCheckRules(t *testing.T) {
	promtool := testenv.LookPath(t, "promtool")
	out, err := exec.Command(promtool, "check", "rules", alertsFile, rulesFile).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
}

func TestPromtoolTestRules(t *testing.T) {
	t.Parallel() // see TestMain
	promtool := testenv.LookPath(t, "promtool")
	files, err := filepath.Glob("prometheus/tests/*.yml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no promtool test files in prometheus/tests: %v", err)
	}
	out, err := exec.Command(promtool, append([]string{"test", "rules"}, files...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}

// TestKnownBadLists renders the mixin with the known-bad lists of
// prometheus/tests-config/known-bad.json into a temporary directory and
// runs the promtool tests of prometheus/tests-config there: the default
// render has empty lists, so those rules can only fire in a render of a
// config that fills them, as an operator's does.
func TestKnownBadLists(t *testing.T) {
	t.Parallel() // see TestMain
	promtool := testenv.LookPath(t, "promtool")
	b, err := os.ReadFile("prometheus/tests-config/known-bad.json")
	if err != nil {
		t.Fatal(err)
	}
	var config map[string]any
	if err := json.Unmarshal(b, &config); err != nil {
		t.Fatal(err)
	}
	r, err := mixin.Render(mixinDir, config)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, f := range map[string]mixin.RuleFile{"alerts.yml": r.Alerts, "rules.yml": r.Rules} {
		out, err := mixin.Marshal(f, "# render of tests-config/known-bad.json\n")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests, err := filepath.Glob("prometheus/tests-config/*.yml")
	if err != nil || len(tests) == 0 {
		t.Fatalf("no promtool test files in prometheus/tests-config: %v", err)
	}
	var paths []string
	for _, src := range tests {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.Base(src))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	if out, err := exec.Command(promtool, append([]string{"test", "rules"}, paths...)...).CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules on the known-bad render: %v\n%s", err, out)
	}
}

// unitTestFile is the part of a promtool test file this package checks.
type unitTestFile struct {
	RuleFiles          []string `json:"rule_files"`
	EvaluationInterval string   `json:"evaluation_interval"`
	Tests              []struct {
		Name        string `json:"name"`
		Interval    string `json:"interval"`
		InputSeries []struct {
			Series string `json:"series"`
			Values string `json:"values"`
		} `json:"input_series"`
		AlertRuleTests []struct {
			EvalTime  string `json:"eval_time"`
			Alertname string `json:"alertname"`
			ExpAlerts []struct {
				ExpLabels      map[string]string `json:"exp_labels"`
				ExpAnnotations map[string]string `json:"exp_annotations"`
			} `json:"exp_alerts"`
		} `json:"alert_rule_test"`
		PromqlExprTests []struct {
			Expr       string `json:"expr"`
			EvalTime   string `json:"eval_time"`
			ExpSamples []struct {
				Labels string  `json:"labels"`
				Value  float64 `json:"value"`
			} `json:"exp_samples"`
		} `json:"promql_expr_test"`
	} `json:"tests"`
}

// TestEveryRuleHasUnitTests checks that the promtool tests cover every
// alert both ways (firing with its labels and annotations, and quiet) and
// every recording rule.
func TestEveryRuleHasUnitTests(t *testing.T) {
	alerts := alertRules(t)
	records := recordingRules(t)
	fires := make(map[string]bool)
	quiet := make(map[string]bool)
	recorded := make(map[string]bool)
	files, _ := filepath.Glob("prometheus/tests/*.yml")
	// Rules that only a filled config makes fire (TestKnownBadLists).
	custom, _ := filepath.Glob("prometheus/tests-config/*.yml")
	for _, path := range append(files, custom...) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var f unitTestFile
		if err := yaml.UnmarshalStrict(b, &f); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, tc := range f.Tests {
			for _, at := range tc.AlertRuleTests {
				if _, ok := alerts[at.Alertname]; !ok {
					t.Errorf("%s %q: tests unknown alert %s", path, tc.Name, at.Alertname)
				}
				if len(at.ExpAlerts) == 0 {
					quiet[at.Alertname] = true
					continue
				}
				fires[at.Alertname] = true
				for _, a := range at.ExpAlerts {
					if a.ExpAnnotations["runbook_url"] == "" || a.ExpLabels["severity"] == "" {
						t.Errorf("%s %q: expected %s alert must state its severity and annotations", path, tc.Name, at.Alertname)
					}
				}
			}
			for _, et := range tc.PromqlExprTests {
				if _, ok := records[et.Expr]; ok && len(et.ExpSamples) > 0 {
					recorded[et.Expr] = true
				}
			}
		}
	}
	for _, name := range sortedKeys(alerts) {
		if !fires[name] {
			t.Errorf("alert %s has no promtool test where it fires", name)
		}
		if !quiet[name] {
			t.Errorf("alert %s has no promtool test where it stays quiet", name)
		}
	}
	for _, name := range sortedKeys(records) {
		if !recorded[name] {
			t.Errorf("recording rule %s has no promql_expr_test with expected samples", name)
		}
	}
}

// hostless are the alerts about no host at all, which have no instance
// label to name.
var hostless = map[string]string{
	"NICExporterTargetsAbsent": "absent(up{...}): no target matches the selector, so there is no instance",
	"NICFirmwareSkew":          "counts the firmware versions of a board across the hosts of a pool",
}

// TestAlertConventions checks what an on-call engineer relies on in every
// alert: a known severity (page only where issue 8 allows it), a summary
// and description that name the host, and a runbook link.
func TestAlertConventions(t *testing.T) {
	alerts := alertRules(t)
	for _, name := range sortedKeys(alerts) {
		r := alerts[name]
		sev := r.Labels["severity"]
		switch {
		case sev == "page" && !pagers[name]:
			t.Errorf("%s: severity page is reserved for %v", name, sortedKeys(pagers))
		case sev != "page" && pagers[name]:
			t.Errorf("%s: must page, has severity %q", name, sev)
		case sev != "page" && sev != "warning" && sev != "info":
			t.Errorf("%s: severity %q, want page, warning or info", name, sev)
		}
		for _, a := range []string{"summary", "description", "runbook_url"} {
			if strings.TrimSpace(r.Annotations[a]) == "" {
				t.Errorf("%s: annotation %s missing", name, a)
			}
		}
		if len(r.Annotations) != 3 {
			t.Errorf("%s: annotations %v, want exactly summary, description and runbook_url", name, sortedKeys(r.Annotations))
		}
		if _, ok := hostless[name]; !ok && (!strings.Contains(r.Annotations["summary"], "{{ $labels.instance }}") || !strings.Contains(r.Annotations["description"], "{{ $labels.instance }}")) {
			t.Errorf("%s: summary and description must name the host ({{ $labels.instance }})", name)
		}
		if want := runbookBase + anchor(name); r.Annotations["runbook_url"] != want {
			t.Errorf("%s: runbook_url %q, want %q", name, r.Annotations["runbook_url"], want)
		}
		if r.For == nil {
			t.Errorf("%s: state its for: duration, even 0m, so the choice is visible", name)
		}
	}
}

// TestAlertsNameTheirDevice checks that an alert on a per-device metric
// keeps the device labels in its summary, so the page says which port.
func TestAlertsNameTheirDevice(t *testing.T) {
	perDevice := regexp.MustCompile(`\bnic_(netdev|pcie|devlink|ethtool|infiniband|vma|kernel_log|app_log)_`)
	// hostLevel alerts read a per-host metric of a collector, without a
	// device or process label to name.
	hostLevel := map[string]string{
		"NICVMAStatsFilesRejected": "nic_vma_files counts the files of a host by state",
		"NICFirmwareSkew":          "counts a board's firmware versions across the devices of a pool",
	}
	alerts := alertRules(t)
	for _, name := range sortedKeys(alerts) {
		r := alerts[name]
		if _, ok := hostLevel[name]; ok || !perDevice.MatchString(exprOf(r)) {
			continue
		}
		s := r.Annotations["summary"]
		if !strings.Contains(s, "{{ $labels.device }}") && !strings.Contains(s, "{{ $labels.comm }}") && !strings.Contains(s, "{{ $labels.file }}") {
			t.Errorf("%s: summary %q does not name the device (or process or log file)", name, s)
		}
	}
}

// anchor returns the fragment GitHub gives a Markdown heading: lower case,
// punctuation other than '-' and '_' removed, spaces turned into '-'.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// referenceSections are level-2 sections of docs/runbooks.md that belong
// to no alert: they hold the subsections that the built-in log rules and
// the devlink reporters' documentation link to, and the alerts' sections
// link there in turn.
var referenceSections = map[string]bool{
	"kmsg and applog events":   true,
	"devlink health reporters": true,
}

// runbookSections returns the anchors of the level-2 headings of
// docs/runbooks.md (the alerts' sections) with the heading text.
func runbookSections(t *testing.T) map[string]string {
	t.Helper()
	out := make(map[string]string)
	for a, h := range runbookHeadings(t) {
		if h.level == 2 && !referenceSections[h.text] {
			out[a] = h.text
		}
	}
	return out
}

type heading struct {
	level int
	text  string
}

// runbookHeadings returns every heading of docs/runbooks.md by anchor.
func runbookHeadings(t *testing.T) map[string]heading {
	t.Helper()
	f, err := os.Open(runbooksFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := make(map[string]heading)
	sc := bufio.NewScanner(f)
	inCode := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
		}
		hashes, text, ok := strings.Cut(line, " ")
		if inCode || !ok || hashes == "" || strings.Trim(hashes, "#") != "" {
			continue
		}
		if _, dup := out[anchor(text)]; dup {
			t.Errorf("%s: heading %q twice", runbooksFile, text)
		}
		out[anchor(text)] = heading{level: len(hashes), text: text}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRunbooksMatchAlerts checks that every alert's runbook_url points at
// a section of docs/runbooks.md, and that every section belongs to an
// alert, so neither can be added or renamed without the other.
func TestRunbooksMatchAlerts(t *testing.T) {
	sections := runbookSections(t)
	alerts := alertRules(t)
	linked := make(map[string]bool)
	for _, name := range sortedKeys(alerts) {
		url := alerts[name].Annotations["runbook_url"]
		frag, ok := strings.CutPrefix(url, runbookBase)
		if !ok {
			t.Errorf("%s: runbook_url %q is not under %s", name, url, runbookBase)
			continue
		}
		if _, ok := sections[frag]; !ok {
			t.Errorf("%s: runbook_url anchor #%s has no section in %s", name, frag, runbooksFile)
		}
		linked[frag] = true
	}
	for _, a := range sortedKeys(sections) {
		if !linked[a] {
			t.Errorf("%s: section %q (#%s) belongs to no alert", runbooksFile, sections[a], a)
		}
	}
}

// TestRunbookSectionsAreComplete checks that every runbook section says
// what the alert means, how to confirm it, the fix and the evidence to
// collect.
func TestRunbookSectionsAreComplete(t *testing.T) {
	b, err := os.ReadFile(runbooksFile)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(string(b), "\n## ")
	for _, p := range parts[1:] {
		head, body, _ := strings.Cut(p, "\n")
		if referenceSections[head] {
			continue
		}
		for _, want := range []string{"**Meaning**", "**Confirm**", "**Fix**", "**Evidence**"} {
			if !strings.Contains(body, want) {
				t.Errorf("%s section %q lacks %s", runbooksFile, head, want)
			}
		}
	}
}

// exprOf returns a rule's expression.
func exprOf(r monitoringv1.Rule) string { return r.Expr.StrVal }

// alertedElsewhere are the built-in log events no log alert counts, with
// the alert that covers the condition from a better source.
var alertedElsewhere = map[string]string{
	"mlx5e_link_down":     "NICLinkDown and NICLinkFlapping (carrier state)",
	"pcie_link_limited":   "NICPCIeLinkDegraded (PCIe link width and speed)",
	"mlx5_ib_wc_error":    "the InfiniBand work-completion alerts (hw_counters of the same errors)",
	"ena_reset_completed": "nothing: an info event that follows the reset the ENA alerts report",
	// Issue 13: restricted PFs refuse the register reads counter readers
	// cause; counting them as command errors raised a false alarm.
	"mlx5_access_reg_restricted": "nothing: an info event, outside NICKernelLogCommandErrors (see its promtool test)",
}

// TestLogRulesHaveAlertsAndRunbooks checks that every built-in kernel and
// VMA log rule's event is counted by a log alert (or covered by another
// alert, named above), and that every rule's runbook anchor exists in
// docs/runbooks.md.
func TestLogRulesHaveAlertsAndRunbooks(t *testing.T) {
	headings := runbookHeadings(t)
	var exprs []string
	for _, r := range alertRules(t) {
		exprs = append(exprs, exprOf(r))
	}
	event := regexp.MustCompile(`event=~"([^"]*)"`)
	alerted := make(map[string]bool)
	for _, e := range exprs {
		for _, m := range event.FindAllStringSubmatch(e, -1) {
			for _, ev := range strings.Split(m[1], "|") {
				alerted[ev] = true
			}
		}
	}
	for _, r := range append(logrules.KernelRules(), logrules.VMARules()...) {
		if _, ok := headings[r.Runbook]; !ok {
			t.Errorf("log rule %s: runbook anchor #%s has no heading in %s", r.Event, r.Runbook, runbooksFile)
		}
		_, elsewhere := alertedElsewhere[r.Event]
		if alerted[r.Event] == elsewhere {
			t.Errorf("log event %s: want it in exactly one of an alert's event=~ list and alertedElsewhere", r.Event)
		}
	}
}

// TestRunbooksNameOnlyExistingAlerts checks that every alert name the
// runbooks mention (the conditions table, cross references) exists, so a
// renamed alert cannot leave a stale reference behind.
func TestRunbooksNameOnlyExistingAlerts(t *testing.T) {
	b, err := os.ReadFile(runbooksFile)
	if err != nil {
		t.Fatal(err)
	}
	alerts := alertRules(t)
	mentioned := make(map[string]bool)
	for _, name := range regexp.MustCompile("`(NIC[A-Za-z]+)`").FindAllStringSubmatch(string(b), -1) {
		mentioned[name[1]] = true
		if _, ok := alerts[name[1]]; !ok {
			t.Errorf("%s mentions %s, which is no alert", runbooksFile, name[1])
		}
	}
	for _, name := range sortedKeys(alerts) {
		if !mentioned[name] {
			t.Errorf("%s: the conditions table does not list %s", runbooksFile, name)
		}
	}
}
