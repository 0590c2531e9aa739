package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/nic-exporter/nic_exporter/deploy/internal/mixin"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

const mixinDir = "mixin"

// TestMixinRenderMatchesRuleFiles fails when alerts.yml or rules.yml
// differ from a fresh render of the mixin with its default config: they
// are generated, and an edit belongs in deploy/mixin.
func TestMixinRenderMatchesRuleFiles(t *testing.T) {
	r, err := mixin.Render(mixinDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		path   string
		rules  mixin.RuleFile
		header string
	}{
		{alertsFile, r.Alerts, mixin.AlertsHeader},
		{rulesFile, r.Rules, mixin.RulesHeader},
	} {
		want, err := mixin.Marshal(f.rules, f.header)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(strings.Split(string(want), "\n"), strings.Split(string(got), "\n")); diff != "" {
			t.Errorf("%s is not the mixin's render (-render +file); regenerate it with `make mixin` (cd deploy && go run ./cmd/mixin):\n%s", f.path, diff)
		}
	}
}

// TestMixinFormatted fails when a .libsonnet file of the mixin is not in
// jsonnetfmt's default style.
func TestMixinFormatted(t *testing.T) {
	changed, err := mixin.Format(mixinDir, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range changed {
		t.Errorf("%s is not formatted; `make mixin` (cd deploy && go run ./cmd/mixin) formats it", p)
	}
}

// customConfig is a non-default config of the kind an operator sets: a
// cluster label next to the job, an internal runbook wiki and other
// thresholds.
var customConfig = map[string]any{
	"nicExporterSelector":        `cluster="gpu-a",job="nic"`,
	"runbookURLBase":             "https://wiki.example.com/runbooks/nic#",
	"pageSeverity":               "critical",
	"exporterDownFor":            "2m",
	"devicesMissingWindow":       "2h",
	"linkFlaps":                  7,
	"linkDownFor":                "3m",
	"devlinkTxRxErrors":          4,
	"ibSymbolErrors":             42,
	"enaAllowanceExceededRate":   12,
	"enaAllowanceExceededFor":    "20m",
	"enaConntrackAvailableRatio": 0.25,
	"rxOutOfBufferRate":          100,
	"phyDiscardsRate":            50,
	"phyErrors":                  6,
	"vmaDropsRate":               3,
	"vmaOSFallbackRate":          9,
	"pcieCorrectedErrors":        17,
}

// wantCustom is, for alerts of customConfig, a number literal their
// expression must contain and the for: and severity they must have ("" for
// not checked).
var wantCustom = map[string]struct {
	number        float64
	forDur, sever string
	description   string
}{
	"NICExporterDown":               {0, "2m", "", "for 2 minutes"},
	"NICExporterDevicesMissing":     {-1, "", "", "in the last 2 hours"},
	"NICLinkFlapping":               {7, "", "", ""},
	"NICLinkDown":                   {1, "3m", "", "for 3 minutes"},
	"NICDevlinkTxRxErrors":          {4, "", "", ""},
	"NICDevlinkFwFatalError":        {-1, "", "critical", ""},
	"NICENAWatchdogExpired":         {-1, "", "critical", ""},
	"NICInfiniBandSymbolErrors":     {42, "", "", ""},
	"NICENAAllowanceExceeded":       {12, "20m", "", "for 20 minutes"},
	"NICENAConntrackAllowanceLow":   {0.25, "", "", "less than 25% of"},
	"NICRxOutOfBuffer":              {100, "", "", ""},
	"NICPhyDiscards":                {50, "", "", ""},
	"NICPhyErrors":                  {6, "", "", ""},
	"NICVMADrops":                   {3, "", "", ""},
	"NICVMAOSFallback":              {9, "", "", ""},
	"NICKernelLogPCIeCorrected":     {17, "", "", ""},
	"NICDevlinkEvidenceCaptured":    {-1, "", "info", ""},
	"NICInfiniBandPortNotLinkUp":    {5, "", "warning", ""},
	"NICExporterCollectorDown":      {-1, "5m", "warning", "for 5 minutes"},
	"NICENAAllocationFailures":      {-1, "0m", "", ""},
	"NICKernelLogENAReset":          {-1, "", "", ""},
	"NICVMAStatsFilesRejected":      {-1, "15m", "", ""},
	"NICInfiniBandCounterSaturated": {1, "", "", ""},
}

// TestMixinCustomConfig renders the mixin with customConfig and checks
// the result with promtool, then parses every expression with the PromQL
// parser: every vector selector carries the configured matchers (and no
// other job matcher), every runbook_url starts with the configured base,
// and the changed thresholds, durations and severities are in the rules.
func TestMixinCustomConfig(t *testing.T) {
	promtool := testenv.LookPath(t, "promtool")
	r, err := mixin.Render(mixinDir, customConfig)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var paths []string
	for name, f := range map[string]mixin.RuleFile{"alerts.yml": r.Alerts, "rules.yml": r.Rules} {
		b, err := mixin.Marshal(f, "# custom render\n")
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	if out, err := exec.Command(promtool, append([]string{"check", "rules"}, paths...)...).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules on the custom render: %v\n%s", err, out)
	}

	p := parser.NewParser(parser.Options{})
	seen := make(map[string]bool)
	var rules int
	for _, f := range []mixin.RuleFile{r.Alerts, r.Rules} {
		for _, g := range f.Groups {
			for _, rule := range g.Rules {
				rules++
				name := rule.Alert + rule.Record
				seen[name] = true
				expr, err := p.ParseExpr(rule.Expr)
				if err != nil {
					t.Errorf("%s: %v", name, err)
					continue
				}
				var selectors int
				var numbers []float64
				parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
					switch n := n.(type) {
					case *parser.VectorSelector:
						selectors++
						checkSelector(t, name, n)
					case *parser.NumberLiteral:
						numbers = append(numbers, n.Val)
					}
					return nil
				})
				if selectors == 0 {
					t.Errorf("%s: no vector selector in %q", name, rule.Expr)
				}
				if rule.Alert != "" && !strings.HasPrefix(rule.Annotations["runbook_url"], "https://wiki.example.com/runbooks/nic#") {
					t.Errorf("%s: runbook_url %q does not start with the configured base", name, rule.Annotations["runbook_url"])
				}
				want, ok := wantCustom[rule.Alert]
				if !ok {
					continue
				}
				if want.number >= 0 && !containsFloat(numbers, want.number) {
					t.Errorf("%s: expression has the numbers %v, want %v among them:\n%s", name, numbers, want.number, rule.Expr)
				}
				if want.forDur != "" && rule.For != want.forDur {
					t.Errorf("%s: for %q, want %q", name, rule.For, want.forDur)
				}
				if want.sever != "" && rule.Labels["severity"] != want.sever {
					t.Errorf("%s: severity %q, want %q", name, rule.Labels["severity"], want.sever)
				}
				if !strings.Contains(rule.Annotations["description"], want.description) {
					t.Errorf("%s: description %q does not say %q", name, rule.Annotations["description"], want.description)
				}
			}
		}
	}
	for name := range wantCustom {
		if !seen[name] {
			t.Errorf("alert %s of wantCustom is not in the mixin", name)
		}
	}
	defaults := len(alertRules(t)) + len(recordingRules(t))
	if rules != defaults {
		t.Errorf("custom render has %d rules, the default files %d", rules, defaults)
	}
}

// checkSelector fails unless s has the matchers cluster="gpu-a" and
// job="nic" of customConfig and no other matcher on job or cluster.
func checkSelector(t *testing.T, rule string, s *parser.VectorSelector) {
	t.Helper()
	want := map[string]bool{`cluster="gpu-a"`: false, `job="nic"`: false}
	for _, m := range s.LabelMatchers {
		if m.Name != "job" && m.Name != "cluster" {
			continue
		}
		if _, ok := want[m.String()]; !ok || m.Type != labels.MatchEqual {
			t.Errorf("%s: selector %s has the matcher %s, not only the configured ones", rule, s, m)
			continue
		}
		want[m.String()] = true
	}
	for m, found := range want {
		if !found {
			t.Errorf("%s: selector %s lacks the configured matcher %s", rule, s, m)
		}
	}
}

func containsFloat(s []float64, v float64) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
