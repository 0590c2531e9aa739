package diagnose

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/nic-exporter/nic_exporter/internal/ruleeval"
)

// KindExporterMetrics is the exporter's own /metrics (collect --url
// writes it as metrics.txt in each sample).
const KindExporterMetrics = "nic_exporter /metrics"

// exporterFile is a /metrics exposition of the exporter in the bundle.
type exporterFile struct {
	name string
	fams map[string]*dto.MetricFamily
}

// isExporterMetrics reports whether lines are a text exposition of the
// exporter: a TYPE line of a nic_ family.
func isExporterMetrics(ls []string) bool {
	for _, l := range ls {
		if strings.HasPrefix(l, "# TYPE nic_") {
			return true
		}
	}
	return false
}

// parseExporterMetrics parses a text exposition (format 0.0.4) with the
// Prometheus parser (github.com/prometheus/common/expfmt); an
// OpenMetrics "# EOF" line is dropped first, the parser does not know it.
func parseExporterMetrics(data []byte) (map[string]*dto.MetricFamily, error) {
	data = bytes.ReplaceAll(data, []byte("\n# EOF\n"), []byte("\n"))
	data = bytes.TrimSuffix(data, []byte("# EOF\n"))
	tp := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := tp.TextToMetricFamilies(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("not a text exposition: %w", err)
	}
	return fams, nil
}

// familiesSeries returns the samples of the families the alerting rules
// read, with the job and instance labels of a scrape, at time at.
func familiesSeries(fams map[string]*dto.MetricFamily, alerts *ruleeval.Rules, inst string, at time.Time) []ruleeval.Series {
	names := make([]string, 0, len(fams))
	for n := range fams {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []ruleeval.Series
	for _, n := range names {
		if !alerts.Reads(n) {
			continue
		}
		mf := fams[n]
		counter := mf.GetType() == dto.MetricType_COUNTER
		for _, m := range mf.GetMetric() {
			lbls := map[string]string{"__name__": n, "job": bundleJob, "instance": inst}
			for _, lp := range m.GetLabel() {
				lbls[lp.GetName()] = lp.GetValue()
			}
			v := m.GetGauge().GetValue()
			switch {
			case m.Counter != nil:
				v = m.GetCounter().GetValue()
			case m.Untyped != nil:
				v = m.GetUntyped().GetValue()
			}
			out = append(out, ruleeval.Series{Labels: lbls, Counter: counter, Points: []ruleeval.Point{{T: at, V: v}}})
		}
	}
	return out
}

// withExporterSeries adds the series of the exporter's own /metrics in
// the sample: they are the daemon's view of the host (its collectors,
// self-metrics, the far end of the fabric, applications' VMA statistics),
// so a family the exporter exported replaces the series diagnose built
// for it from the tool outputs, all of them: the two may label one device
// differently (diagnose names a PCI function by its address where the
// daemon names its interface), and both kept would count it twice. Each
// series is recorded as read from its file.
func withExporterSeries(out []ruleeval.Series, files []exporterFile, alerts *ruleeval.Rules, inst string, at time.Time, evidence map[string]string) []ruleeval.Series {
	if len(files) == 0 {
		return out
	}
	var add []ruleeval.Series
	seen, families := map[string]bool{}, map[string]bool{}
	for _, f := range files {
		for _, s := range familiesSeries(f.fams, alerts, inst, at) {
			k := seriesKey(s.Labels)
			if seen[k] {
				continue // the first file's series wins
			}
			seen[k], families[s.Labels["__name__"]] = true, true
			add = append(add, s)
			evidence[k] = f.name
		}
	}
	kept := out[:0]
	for _, s := range out {
		if !families[s.Labels["__name__"]] {
			kept = append(kept, s)
		}
	}
	return append(kept, add...)
}
