package kube

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// TestDocsMetrics checks that docs/metrics.md has a row for every metric
// of the sink, with its type, labels and help, like the generated table
// of the demo scrape has for the rest (the sink is off in the demo).
func TestDocsMetrics(t *testing.T) {
	b, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	reg := prometheus.NewPedanticRegistry()
	m := newMetrics()
	m.errors.WithLabelValues(reqGetNode, "forbidden") // a vector shows only with a child
	reg.MustRegister(m)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) != 4 {
		t.Errorf("%d families, want 4: the table below and this test need a look", len(mfs))
	}
	for _, mf := range mfs {
		var labels []string
		for _, l := range mf.GetMetric()[0].GetLabel() {
			labels = append(labels, "`"+l.GetName()+"`")
		}
		sort.Strings(labels)
		row := fmt.Sprintf("| `%s` | `/metrics` | %s | %s | %s |", mf.GetName(), strings.ToLower(dto.MetricType_name[int32(mf.GetType())]), strings.Join(labels, ", "), mf.GetHelp())
		if !strings.Contains(doc, row+"\n") {
			t.Errorf("docs/metrics.md lacks the row\n%s", row)
		}
	}
}
