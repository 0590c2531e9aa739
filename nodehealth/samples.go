package nodehealth

import (
	"fmt"
	"io"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// sample is one series of a snapshot: its labels and value.
type sample struct {
	labels map[string]string
	value  float64
}

// key returns the series' identity: the metric name and its labels in
// name order, as the text format would print them.
func (s sample) key(metric string) string {
	names := make([]string, 0, len(s.labels))
	for n := range s.labels {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString(metric)
	b.WriteByte('{')
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%q", n, s.labels[n])
	}
	b.WriteByte('}')
	return b.String()
}

// samples maps metric family names to their series.
type samples map[string][]sample

// parseSamples reads the families named in want from a snapshot in the
// Prometheus text format. The exporter wrote those bytes itself; the
// parser of prometheus/common reads them rather than a second parser of
// our own. Families of types other than gauge, counter and untyped are
// left out: no rule reads them.
func parseSamples(r io.Reader, want map[string]bool) (samples, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parsing a snapshot: %w", err)
	}
	out := make(samples)
	for name, f := range fams {
		if !want[name] {
			continue
		}
		for _, m := range f.GetMetric() {
			v, ok := value(f.GetType(), m)
			if !ok {
				continue
			}
			ls := make(map[string]string, len(m.GetLabel()))
			for _, l := range m.GetLabel() {
				ls[l.GetName()] = l.GetValue()
			}
			out[name] = append(out[name], sample{labels: ls, value: v})
		}
	}
	return out, nil
}

func value(t dto.MetricType, m *dto.Metric) (float64, bool) {
	switch t {
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue(), true
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue(), true
	case dto.MetricType_UNTYPED:
		return m.GetUntyped().GetValue(), true
	}
	return 0, false
}

// merge adds the families of o to s.
func (s samples) merge(o samples) {
	for k, v := range o {
		s[k] = append(s[k], v...)
	}
}
