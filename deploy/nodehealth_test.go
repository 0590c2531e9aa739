package deploy

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/nic-exporter/nic_exporter/nodehealth"
)

// comparison is one comparison of an alert expression, reduced to what a
// node condition's rule says: the function around the left selector
// (increase, min_over_time or none) and its range, the metric and its
// label matchers (job left out), the operator, and either a number or a
// second selector with the labels it is matched on (job and instance left
// out).
type comparison struct {
	fn       string
	metric   string
	match    string
	rng      time.Duration
	op       string
	value    float64
	than     string
	thanOn   string
	andGuard bool // the comparison is the right side of an "and on (...)"
	andOn    string
}

func (c comparison) String() string {
	rhs := fmt.Sprint(c.value)
	if c.than != "" {
		rhs = "on(" + c.thanOn + ") " + c.than
	}
	s := fmt.Sprintf("%s(%s%s[%s]) %s %s", c.fn, c.metric, c.match, c.rng, c.op, rhs)
	if c.andGuard {
		s = "and on(" + c.andOn + ") " + s
	}
	return s
}

// matchers renders the equality matchers of a selector other than job and
// the metric name, sorted.
func matchers(s *parser.VectorSelector) string {
	var out []string
	for _, m := range s.LabelMatchers {
		if m.Name == "job" || m.Name == model.MetricNameLabel {
			continue
		}
		out = append(out, fmt.Sprintf("%s%s%q", m.Name, m.Type, m.Value))
	}
	sort.Strings(out)
	return "{" + strings.Join(out, ",") + "}"
}

func selectorMatch(m map[string]string) string {
	var out []string
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s=%q", k, v))
	}
	sort.Strings(out)
	return "{" + strings.Join(out, ",") + "}"
}

// onLabels renders the matching labels other than job and instance.
func onLabels(m *parser.VectorMatching) string {
	if m == nil || !m.On {
		return ""
	}
	var out []string
	for _, l := range m.MatchingLabels {
		if l != "job" && l != "instance" {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func unparen(e parser.Expr) parser.Expr {
	for {
		p, ok := e.(*parser.ParenExpr)
		if !ok {
			return e
		}
		e = p.Expr
	}
}

// side reduces one side of a comparison to a selector with the function
// and range around it.
func side(e parser.Expr) (fn string, sel *parser.VectorSelector, rng time.Duration, ok bool) {
	switch x := unparen(e).(type) {
	case *parser.VectorSelector:
		return "", x, 0, true
	case *parser.Call:
		if len(x.Args) != 1 {
			return "", nil, 0, false
		}
		m, isMatrix := unparen(x.Args[0]).(*parser.MatrixSelector)
		if !isMatrix {
			return "", nil, 0, false
		}
		vs, isVS := m.VectorSelector.(*parser.VectorSelector)
		return x.Func.Name, vs, m.Range, isVS
	}
	return "", nil, 0, false
}

// comparisons returns every comparison of expr.
func comparisons(t *testing.T, expr string) []comparison {
	t.Helper()
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		t.Fatalf("parsing %q: %v", expr, err)
	}
	var out []comparison
	guards := make(map[parser.Node]string)
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		b, ok := n.(*parser.BinaryExpr)
		if !ok {
			return nil
		}
		if b.Op == parser.LAND {
			guards[unparen(b.RHS)] = onLabels(b.VectorMatching)
			return nil
		}
		if !b.Op.IsComparisonOperator() {
			return nil
		}
		fn, sel, rng, ok := side(b.LHS)
		if !ok {
			return nil
		}
		c := comparison{fn: fn, metric: sel.Name, match: matchers(sel), rng: rng, op: b.Op.String()}
		switch r := unparen(b.RHS).(type) {
		case *parser.NumberLiteral:
			c.value = r.Val
		case *parser.VectorSelector:
			c.than, c.thanOn = r.Name+matchers(r), onLabels(b.VectorMatching)
		default:
			return nil
		}
		if on, isGuard := guards[n]; isGuard {
			c.andGuard, c.andOn = true, on
		}
		out = append(out, c)
		return nil
	})
	return out
}

// want returns the comparisons a node condition's rule stands for.
func wantComparisons(d nodehealth.Definition) []comparison {
	r := d.Rule
	c := comparison{metric: r.Metric, match: selectorMatch(r.Match), op: string(r.Op), value: r.Value}
	switch {
	case r.Op == nodehealth.OpRise:
		// A rise within the window: increase(metric[window]) > 0.
		c.fn, c.rng, c.op, c.value = "increase", r.Window, ">", 0
	case r.Than != nil:
		c.than, c.thanOn, c.value = r.Than.Metric+selectorMatch(r.Than.Match), strings.Join(r.Than.On, ","), 0
	}
	out := []comparison{c}
	for _, g := range r.And {
		on := slices.Clone(g.On)
		sort.Strings(on)
		out = append(out, comparison{metric: g.Metric, match: selectorMatch(g.Match), op: string(g.Op), value: g.Value, andGuard: true, andOn: strings.Join(on, ",")})
	}
	return out
}

// TestNodeConditionsMatchAlerts checks the node conditions of the
// verdict (nodehealth.Conditions) against the alerts they mirror in
// alerts.yml: each alert exists with the condition's severity, the
// first one's "for:" is the condition's, and its expression has the
// comparison the condition's rule makes (the metric, its matchers, the
// operator and threshold, the range of a rise) and each of its guards as
// an "and on (...)", so that a threshold changed in the mixin fails here
// until the table follows.
func TestNodeConditionsMatchAlerts(t *testing.T) {
	alerts := alertRules(t)
	for _, d := range nodehealth.Conditions() {
		if len(d.Alerts) == 0 {
			t.Errorf("%s mirrors no alert", d.Type)
			continue
		}
		for i, name := range d.Alerts {
			r, ok := alerts[name]
			if !ok {
				t.Errorf("%s mirrors %s, which %s lacks", d.Type, name, alertsFile)
				continue
			}
			if got := r.Labels["severity"]; got != d.Severity {
				t.Errorf("%s: %s has severity %q, the condition %q", d.Type, name, got, d.Severity)
			}
			if got := r.Labels["severity"]; got != "page" && got != "warning" {
				t.Errorf("%s mirrors %s of severity %q: a node condition mirrors only alerts that page or open a ticket", d.Type, name, got)
			}
			if i > 0 {
				continue
			}
			var forDur time.Duration
			if r.For != nil {
				f, err := model.ParseDuration(string(*r.For))
				if err != nil {
					t.Fatalf("%s: for: %v", name, err)
				}
				forDur = time.Duration(f)
			}
			if forDur != d.For {
				t.Errorf("%s: %s has for: %s, the condition %s", d.Type, name, forDur, d.For)
			}
			got := comparisons(t, exprOf(r))
			for _, w := range wantComparisons(d) {
				found := false
				for _, g := range got {
					// min_over_time(x[...]) == v is the alert's
					// way to keep firing for its range after a state
					// ended, which the condition's hold time does.
					if g.fn == "min_over_time" && w.fn == "" {
						g.fn, g.rng = "", 0
					}
					if g == w {
						found = true
					}
				}
				if !found {
					t.Errorf("%s: the expression of %s has no %s; it has %v\n%s", d.Type, name, w, got, exprOf(r))
				}
			}
		}
	}
}

// TestNodeConditionsDocumented checks that docs/node-health.md, section
// Conditions, names every node condition with its reason and the alerts
// it mirrors.
func TestNodeConditionsDocumented(t *testing.T) {
	const doc = "../docs/node-health.md"
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok := strings.Cut(string(b), "\n## Conditions\n")
	if !ok {
		t.Fatalf("%s has no section \"Conditions\"", doc)
	}
	body, _, _ = strings.Cut(body, "\n## ")
	for _, d := range nodehealth.Conditions() {
		row := ""
		for _, l := range strings.Split(body, "\n") {
			if strings.HasPrefix(l, "| `"+d.Type+"` |") {
				row = l
			}
		}
		if row == "" {
			t.Errorf("%s, Conditions: no table row for %s", doc, d.Type)
			continue
		}
		want := []string{"`" + d.Reason + "`"}
		for _, a := range d.Alerts {
			want = append(want, "`"+a+"` ("+d.Severity+")")
		}
		for _, w := range want {
			if !strings.Contains(row, w) {
				t.Errorf("%s, Conditions: the row of %s lacks %s", doc, d.Type, w)
			}
		}
	}
}
