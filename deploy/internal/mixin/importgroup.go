package mixin

import (
	"fmt"
	"sort"
	"strings"

	"github.com/prometheus/prometheus/promql/parser"
	"gopkg.in/yaml.v3"
)

// ImportGroups converts the alert groups named in names (all when names
// is empty) of a Prometheus rule file into mixin group files, keyed by
// group name. Each vector selector of each expression gets the
// %(nicExporterSelector)s matchers (an up{...} selector gets them instead
// of its own), found with the PromQL parser; the for:, labels and
// annotations are kept as they are, except the runbook_url, which the
// mixin adds. It is how an alert group written as YAML joins the mixin.
func ImportGroups(ruleFile []byte, names []string) (map[string]string, error) {
	var f RuleFile
	if err := yaml.Unmarshal(ruleFile, &f); err != nil {
		return nil, fmt.Errorf("decoding the rule file: %w", err)
	}
	out := make(map[string]string)
	for _, g := range f.Groups {
		if len(names) > 0 && !contains(names, g.Name) {
			continue
		}
		src, err := importGroup(g)
		if err != nil {
			return nil, fmt.Errorf("group %s: %w", g.Name, err)
		}
		out[g.Name] = src
	}
	for _, n := range names {
		if _, ok := out[n]; !ok {
			return nil, fmt.Errorf("no group %q in the rule file", n)
		}
	}
	return out, nil
}

func importGroup(g Group) (string, error) {
	var b strings.Builder
	b.WriteString("{\n  prometheusAlerts+:: {\n    groups+: [\n      {\n")
	fmt.Fprintf(&b, "        name: %s,\n        rules: [\n", jsonnetString(g.Name))
	for _, r := range g.Rules {
		if r.Alert == "" {
			return "", fmt.Errorf("recording rule %s: only alert groups are imported", r.Record)
		}
		expr, err := withSelector(strings.TrimRight(r.Expr, "\n"))
		if err != nil {
			return "", fmt.Errorf("alert %s: %w", r.Alert, err)
		}
		b.WriteString("          {\n")
		fmt.Fprintf(&b, "            alert: %s,\n", jsonnetString(r.Alert))
		if strings.Contains(expr, "\n") {
			b.WriteString("            expr: |||\n")
			for _, l := range strings.Split(expr, "\n") {
				fmt.Fprintf(&b, "              %s\n", l)
			}
			b.WriteString("            ||| % $._config,\n")
		} else {
			fmt.Fprintf(&b, "            expr: %s %% $._config,\n", jsonnetString(expr))
		}
		if r.For != "" {
			fmt.Fprintf(&b, "            'for': %s,\n", jsonnetString(r.For))
		}
		// A page takes the configured page severity.
		var raw map[string]string
		if r.Labels["severity"] == "page" {
			raw = map[string]string{"severity": "$._config.pageSeverity"}
		}
		writeMap(&b, "labels", r.Labels, nil, raw)
		writeMap(&b, "annotations", r.Annotations, map[string]bool{"runbook_url": true}, nil)
		b.WriteString("          },\n")
	}
	b.WriteString("        ],\n      },\n    ],\n  },\n}\n")
	return b.String(), nil
}

// writeMap writes m as a jsonnet object field, leaving out the keys of
// skip and writing the values of raw as jsonnet code instead of strings.
func writeMap(b *strings.Builder, name string, m map[string]string, skip map[string]bool, raw map[string]string) {
	var keys []string
	for k := range m {
		if !skip[k] {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return
	}
	sort.Strings(keys)
	fmt.Fprintf(b, "            %s: {\n", name)
	for _, k := range keys {
		v := jsonnetString(m[k])
		if code, ok := raw[k]; ok {
			v = code
		}
		fmt.Fprintf(b, "              %s: %s,\n", k, v)
	}
	b.WriteString("            },\n")
}

// jsonnetString quotes s as a single-quoted jsonnet string.
func jsonnetString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\n", `\n`)
	return "'" + r.Replace(s) + "'"
}

// withSelector returns expr, escaped for jsonnet's % operator, with
// %(nicExporterSelector)s added to the matchers of every vector selector.
func withSelector(expr string) (string, error) {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return "", err
	}
	type edit struct {
		from, to int
		text     string
	}
	var edits []edit
	var ierr error
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		pr := vs.PositionRange()
		start := int(pr.Start)
		s := expr[start:pr.End]
		open, close := strings.Index(s, "{"), strings.LastIndex(s, "}")
		switch {
		case vs.Name == "up" && open >= 0 && close > open:
			edits = append(edits, edit{start + open + 1, start + close, "%(nicExporterSelector)s"})
		case open >= 0 && close > open && strings.TrimSpace(s[open+1:close]) == "":
			edits = append(edits, edit{start + close, start + close, "%(nicExporterSelector)s"})
		case open >= 0 && close > open:
			edits = append(edits, edit{start + close, start + close, ", %(nicExporterSelector)s"})
		case strings.HasPrefix(s, vs.Name) && vs.Name != "":
			edits = append(edits, edit{start + len(vs.Name), start + len(vs.Name), "{%(nicExporterSelector)s}"})
		default:
			ierr = fmt.Errorf("cannot place the selector in %q", s)
		}
		return nil
	})
	if ierr != nil {
		return "", ierr
	}
	// Apply from the end, escaping the % of the text between the edits.
	sort.Slice(edits, func(i, j int) bool { return edits[i].from > edits[j].from })
	var parts []string
	end := len(expr)
	for _, ed := range edits {
		parts = append(parts, strings.ReplaceAll(expr[ed.to:end], "%", "%%"), ed.text)
		end = ed.from
	}
	parts = append(parts, strings.ReplaceAll(expr[:end], "%", "%%"))
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return strings.Join(parts, ""), nil
}
