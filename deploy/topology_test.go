package deploy

import (
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestDocsTopologyJoins checks that every query of the promtool tests of
// nic_topology_info's joins (prometheus/tests/topology.yml) is a promql
// block of the topology section of docs/metrics.md, and the other way
// round: the documented joins are the tested ones.
func TestDocsTopologyJoins(t *testing.T) {
	b, err := os.ReadFile("prometheus/tests/topology.yml")
	if err != nil {
		t.Fatal(err)
	}
	var tests struct {
		Tests []struct {
			PromQLExprTest []struct {
				Expr string `json:"expr"`
			} `json:"promql_expr_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(b, &tests); err != nil {
		t.Fatal(err)
	}
	tested := make(map[string]bool)
	for _, tc := range tests.Tests {
		for _, e := range tc.PromQLExprTest {
			tested[strings.TrimSpace(e.Expr)] = true
		}
	}
	doc, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut("\n"+string(doc), "\n## topology\n")
	if !ok {
		t.Fatal(`docs/metrics.md has no "## topology" section`)
	}
	if next := strings.Index(section, "\n## "); next >= 0 {
		section = section[:next]
	}
	documented := make(map[string]bool)
	for _, block := range strings.Split(section, "```promql\n")[1:] {
		q, _, ok := strings.Cut(block, "```")
		if !ok {
			t.Fatalf("unterminated promql block in the topology section: %q", block)
		}
		documented[strings.TrimSpace(q)] = true
	}
	if len(tested) == 0 || len(documented) == 0 {
		t.Fatalf("%d tested and %d documented queries", len(tested), len(documented))
	}
	for q := range tested {
		if !documented[q] {
			t.Errorf("prometheus/tests/topology.yml tests a query docs/metrics.md does not show:\n%s", q)
		}
	}
	for q := range documented {
		if !tested[q] {
			t.Errorf("docs/metrics.md shows a query prometheus/tests/topology.yml does not test:\n%s", q)
		}
	}
}
