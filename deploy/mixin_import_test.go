package deploy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"

	"github.com/nic-exporter/nic_exporter/deploy/internal/mixin"
)

// importFixture is an alert group written as YAML without the mixin's
// selector, as a group added to alerts.yml on another branch is: a
// multi-line expression, an up{} selector, offset, a %, a selector by
// __name__ only, quotes in annotations.
const importFixture = `groups:
  - name: nic-example
    rules:
      - alert: NICExampleErrors
        expr: |-
          increase(nic_ethtool_rx_crc_errors_phy_total[10m]) > 0
          and on (job, instance, device) nic_ethtool_info{driver="mlx5_core"}
        for: 5m
        labels:
          severity: warning
        annotations:
          summary: "CRC errors on {{ $labels.device }} on {{ $labels.instance }}"
          description: "It's {{ $value | printf \"%.0f\" }} errors on {{ $labels.instance }}, 100% of them real."
          runbook_url: "https://github.com/nic-exporter/nic_exporter/blob/main/docs/runbooks.md#nicexampleerrors"
      - alert: NICExampleOdd
        expr: up{job=~"nic[-_]exporter"} == 0 or (nic_netdev_carrier offset 5m) % 2 == 1 or count by (job, instance) ({__name__="nic_netdev_mtu_bytes"}) > 9000
        for: 0m
        labels:
          severity: page
        annotations:
          summary: "odd on {{ $labels.instance }}"
          description: "odd on {{ $labels.instance }}"
          runbook_url: "https://github.com/nic-exporter/nic_exporter/blob/main/docs/runbooks.md#nicexampleodd"
`

// TestMixinImportGroup adds importFixture to a copy of the mixin the way
// go run ./cmd/mixin -import does and renders it: with the default config
// every rule is the fixture's with job=~"nic[-_]exporter" in every vector
// selector (compared as parsed PromQL), with another config every
// selector carries that config's matchers.
func TestMixinImportGroup(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mixin")
	if err := os.CopyFS(dir, os.DirFS(mixinDir)); err != nil {
		t.Fatal(err)
	}
	srcs, err := mixin.ImportGroups([]byte(importFixture), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts", "example.libsonnet"), []byte(srcs["nic-example"]), 0o644); err != nil {
		t.Fatal(err)
	}
	entry := filepath.Join(dir, "mixin.libsonnet")
	b, err := os.ReadFile(entry)
	if err != nil {
		t.Fatal(err)
	}
	const last = "(import 'alerts/logs.libsonnet') +"
	if !strings.Contains(string(b), last) {
		t.Fatalf("%s has no %q to add the group after", entry, last)
	}
	b = []byte(strings.Replace(string(b), last, last+"\n  (import 'alerts/example.libsonnet') +", 1))
	if err := os.WriteFile(entry, b, 0o644); err != nil {
		t.Fatal(err)
	}

	var want mixin.RuleFile
	if err := yaml.Unmarshal([]byte(importFixture), &want); err != nil {
		t.Fatal(err)
	}
	p := parser.NewParser(parser.Options{})
	job, err := labels.NewMatcher(labels.MatchRegexp, "job", "nic[-_]exporter")
	if err != nil {
		t.Fatal(err)
	}

	r, err := mixin.Render(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := groupNamed(t, r.Alerts, "nic-example")
	if len(got.Rules) != len(want.Groups[0].Rules) {
		t.Fatalf("imported %d rules, want %d", len(got.Rules), len(want.Groups[0].Rules))
	}
	for i, w := range want.Groups[0].Rules {
		g := got.Rules[i]
		we, err := p.ParseExpr(w.Expr)
		if err != nil {
			t.Fatal(err)
		}
		parser.Inspect(we, func(n parser.Node, _ []parser.Node) error {
			if vs, ok := n.(*parser.VectorSelector); ok {
				var ms []*labels.Matcher
				for _, m := range vs.LabelMatchers {
					if m.Name != "job" {
						ms = append(ms, m)
					}
				}
				vs.LabelMatchers = append(ms, job)
			}
			return nil
		})
		ge, err := p.ParseExpr(g.Expr)
		if err != nil {
			t.Fatalf("%s: %v\n%s", g.Alert, err, g.Expr)
		}
		if ge.String() != we.String() {
			t.Errorf("%s: imported expression\n%s\nwant\n%s", w.Alert, ge, we)
		}
		if g.Alert != w.Alert || g.For != w.For || g.Labels["severity"] != w.Labels["severity"] || len(g.Labels) != len(w.Labels) {
			t.Errorf("imported %s for %s labels %v, want %s for %s labels %v", g.Alert, g.For, g.Labels, w.Alert, w.For, w.Labels)
		}
		for k, v := range w.Annotations {
			if g.Annotations[k] != v {
				t.Errorf("%s: annotation %s %q, want %q", w.Alert, k, g.Annotations[k], v)
			}
		}
	}

	r, err = mixin.Render(dir, customConfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groupNamed(t, r.Alerts, "nic-example").Rules {
		e, err := p.ParseExpr(g.Expr)
		if err != nil {
			t.Fatal(err)
		}
		parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
			if vs, ok := n.(*parser.VectorSelector); ok {
				checkSelector(t, g.Alert, vs)
			}
			return nil
		})
		if g.Alert == "NICExampleOdd" && g.Labels["severity"] != "critical" {
			t.Errorf("%s: severity %q, want the configured page severity critical", g.Alert, g.Labels["severity"])
		}
		if !strings.HasPrefix(g.Annotations["runbook_url"], "https://wiki.example.com/runbooks/nic#") {
			t.Errorf("%s: runbook_url %q", g.Alert, g.Annotations["runbook_url"])
		}
	}
}

func groupNamed(t *testing.T, f mixin.RuleFile, name string) mixin.Group {
	t.Helper()
	for _, g := range f.Groups {
		if g.Name == name {
			return g
		}
	}
	t.Fatalf("no group %s in the render", name)
	return mixin.Group{}
}
