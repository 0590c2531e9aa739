// Package mixin renders the jsonnet monitoring mixin of deploy/mixin into
// the Prometheus rule files deploy/prometheus/alerts.yml and rules.yml. It
// evaluates the mixin with go-jsonnet, so neither the generator nor the
// tests need the C++ jsonnet or the network.
package mixin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/go-jsonnet"
	"gopkg.in/yaml.v3"
)

// Rule is one alerting or recording rule of a rule group.
type Rule struct {
	Record      string            `json:"record,omitempty"`
	Alert       string            `json:"alert,omitempty"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Group is a named group of rules.
type Group struct {
	Name     string `json:"name"`
	Interval string `json:"interval,omitempty"`
	Rules    []Rule `json:"rules"`
}

// RuleFile is the content of a Prometheus rule file.
type RuleFile struct {
	Groups []Group `json:"groups"`
}

// Rendered holds the two rule files the mixin produces.
type Rendered struct {
	Alerts RuleFile `json:"alerts"`
	Rules  RuleFile `json:"rules"`
}

// renderSnippet merges the overrides into the mixin's _config and returns
// both rule files.
const renderSnippet = `
local mixin = (import 'mixin.libsonnet') + { _config+:: std.extVar('config') };
{ alerts: mixin.prometheusAlerts, rules: mixin.prometheusRules }
`

// Render evaluates dir/mixin.libsonnet with config merged into its
// _config (nil or empty for the defaults of config.libsonnet) and returns
// the alerting and recording rules.
func Render(dir string, config map[string]any) (Rendered, error) {
	if config == nil {
		config = map[string]any{}
	}
	cfg, err := json.Marshal(config)
	if err != nil {
		return Rendered{}, fmt.Errorf("encoding the mixin config: %w", err)
	}
	vm := jsonnet.MakeVM()
	vm.Importer(&jsonnet.FileImporter{JPaths: []string{dir}})
	vm.ExtCode("config", string(cfg))
	out, err := vm.EvaluateAnonymousSnippet(filepath.Join(dir, "render.jsonnet"), renderSnippet)
	if err != nil {
		return Rendered{}, fmt.Errorf("evaluating the mixin in %s: %w", dir, err)
	}
	var r Rendered
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Rendered{}, fmt.Errorf("decoding the rules the mixin in %s rendered: %w", dir, err)
	}
	return r, nil
}

// AlertsHeader is the comment at the top of the generated alerts.yml.
const AlertsHeader = `# nic_exporter alert rules. GENERATED from the monitoring mixin in
# deploy/mixin with its default config: do not edit; change the mixin and
# regenerate with
#   make mixin        (or: cd deploy && go run ./cmd/mixin)
# A deploy test fails when this file differs from a fresh render. To scope
# the rules to your jobs, change the runbook URL or the thresholds, render
# the mixin with your own config (deploy/mixin/README.md).
#
# The Prometheus Operator PrometheusRule in deploy/kubernetes is generated
# from this file and rules.yml and checked against them; regenerate it with
#   cd deploy && go test -run TestPrometheusRuleMatchesRuleFiles -update
#
# Conventions (the reasons behind each group and threshold are comments in
# deploy/mixin/alerts/*.libsonnet):
# - severity "page" wakes someone up; only a fatal firmware error and an ENA
#   keep-alive watchdog reset do. Everything else is "warning" (a ticket
#   for working hours) or "info" (evidence for a ticket, never routed to a
#   person on its own).
# - Every alert names the host ({{ $labels.instance }}) and the device and
#   links its section of docs/runbooks.md; the section heading is the alert
#   name, so the anchor is its lower-case form.
# - "for:" is 0 for conditions that are already events (a counter rose):
#   the counter cannot rise by accident. States that may be transient get
#   a "for:" long enough to ride out a driver reload or an exporter restart.
`

// RulesHeader is the comment at the top of the generated rules.yml.
const RulesHeader = `# nic_exporter recording rules for fleet-level views. GENERATED from the
# monitoring mixin in deploy/mixin with its default config: do not edit;
# change deploy/mixin/rules/*.libsonnet and regenerate with
#   make mixin        (or: cd deploy && go run ./cmd/mixin)
#
# Each rule reduces a host's per-device series to one series per host (job,
# instance), so the fleet overview dashboard reads a few series per host
# instead of every device, on one Prometheus or across many through a
# long-term store. Names follow level:metric:operations. The group has no
# interval of its own: it runs at the global evaluation_interval. Every rule
# yields a value for every scraped host, 0 when the host is healthy or has
# no such device, so "hosts at 0" can be told from "hosts not reporting".
`

// Marshal returns f as YAML after the header comment: fields in the order
// Prometheus documents them, annotations double-quoted, multi-line
// expressions as literal blocks and a blank line between groups.
func Marshal(f RuleFile, header string) ([]byte, error) {
	groups := &yaml.Node{Kind: yaml.SequenceNode}
	for _, g := range f.Groups {
		gn := mapping()
		add(gn, "name", str(g.Name))
		if g.Interval != "" {
			add(gn, "interval", str(g.Interval))
		}
		rules := &yaml.Node{Kind: yaml.SequenceNode}
		for _, r := range g.Rules {
			rules.Content = append(rules.Content, ruleNode(r))
		}
		add(gn, "rules", rules)
		groups.Content = append(groups.Content, gn)
	}
	doc := mapping()
	add(doc, "groups", groups)

	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("encoding rule groups: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encoding rule groups: %w", err)
	}
	var out bytes.Buffer
	out.WriteString(header)
	for i, line := range strings.SplitAfter(buf.String(), "\n") {
		if strings.HasPrefix(line, "  - name: ") && i > 1 {
			out.WriteString("\n")
		}
		out.WriteString(line)
	}
	return out.Bytes(), nil
}

func ruleNode(r Rule) *yaml.Node {
	n := mapping()
	if r.Record != "" {
		add(n, "record", str(r.Record))
	} else {
		add(n, "alert", str(r.Alert))
	}
	expr := str(strings.TrimRight(r.Expr, "\n"))
	if strings.Contains(expr.Value, "\n") {
		expr.Style = yaml.LiteralStyle
	}
	add(n, "expr", expr)
	if r.For != "" {
		add(n, "for", str(r.For))
	}
	if len(r.Labels) > 0 {
		add(n, "labels", stringMap(r.Labels, nil, 0))
	}
	if len(r.Annotations) > 0 {
		add(n, "annotations", stringMap(r.Annotations, []string{"summary", "description", "runbook_url"}, yaml.DoubleQuotedStyle))
	}
	return n
}

// stringMap returns m as a mapping: the keys of first in that order, then
// the others sorted.
func stringMap(m map[string]string, first []string, style yaml.Style) *yaml.Node {
	n := mapping()
	var keys []string
	for _, k := range first {
		if _, ok := m[k]; ok {
			keys = append(keys, k)
		}
	}
	var rest []string
	for k := range m {
		if !contains(first, k) {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range append(keys, rest...) {
		v := str(m[k])
		v.Style = style
		add(n, k, v)
	}
	return n
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func mapping() *yaml.Node { return &yaml.Node{Kind: yaml.MappingNode} }

func str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

func add(m *yaml.Node, key string, v *yaml.Node) {
	m.Content = append(m.Content, str(key), v)
}
