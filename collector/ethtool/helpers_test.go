package ethtool_test

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
)

// pollOnce runs one Update of c and returns the snapshot and the source
// errors it reported.
func pollOnce(t testing.TB, c collector.Collector, log *zap.Logger) (*exposition.Snapshot, []collector.ReasonCount) {
	t.Helper()
	b := exposition.NewBuilder()
	errs := collector.NewSourceErrors(log, 0)
	if err := c.Update(context.Background(), collector.NewPoll(b, errs)); err != nil {
		t.Fatalf("Update: %v", err)
	}
	if b.Invalid() != 0 {
		t.Errorf("%d invalid samples", b.Invalid())
	}
	return b.Snapshot(), errs.Counts()
}

// series parses a text exposition into "name{a="x",b="y"}" -> value, with
// labels sorted by name. It fails the test if the text does not parse.
func series(t testing.TB, text string) map[string]float64 {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("scrape does not parse: %v\n%s", err, text)
	}
	out := make(map[string]float64)
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+`"`+l.GetValue()+`"`)
			}
			sort.Strings(ls)
			key := name + "{" + strings.Join(ls, ",") + "}"
			var v float64
			switch {
			case m.GetCounter() != nil:
				v = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				v = m.GetGauge().GetValue()
			default:
				v = m.GetUntyped().GetValue()
			}
			if _, dup := out[key]; dup {
				t.Errorf("duplicate series %s", key)
			}
			out[key] = v
		}
	}
	return out
}
