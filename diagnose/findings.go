package diagnose

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/internal/logrules"
	"github.com/nic-exporter/nic_exporter/internal/ruleeval"
)

// Severities as the alert rules' severity label defines them.
const (
	SeverityPage    = "page"
	SeverityWarning = "warning"
	SeverityInfo    = "info"
)

// evalTime is the time the bundle's series are placed at for the rules.
// Only durations matter to them (uptime, the time between two
// snapshots), so a fixed time keeps the output reproducible.
var evalTime = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// bundleJob is the job label of the bundle's series, which the shipped
// rules select (job=~"nic[-_]exporter").
const bundleJob = "nic_exporter"

// maxEvidence is the most series a finding lists as evidence.
const maxEvidence = 4

// Views of the bundle's time a finding fired in (Finding.View). A
// counter's count since boot says nothing about when it rose; a second
// sample says how fast it rises now, but not whether it rose in the
// minutes before the first sample, which the daemon's 15-minute windows
// would still alert on.
const (
	// ViewSinceBoot: the bundle has one sample, and each counter rose
	// linearly from zero at boot to it.
	ViewSinceBoot = "since_boot"
	// ViewBetweenSamples: the bundle has two samples, and the condition
	// holds with each counter at its rate between them back to the start
	// of every window (ruleeval.Input with SinceBoot false).
	ViewBetweenSamples = "between_samples"
	// ViewSinceBootOnly: the bundle has two samples, and the condition
	// holds only with each counter rising linearly from zero at boot to
	// the earlier sample, then as the samples say
	// (ruleeval.Input.SinceBoot): what a bundle of one sample would
	// find, but the samples do not show it. Its counts may be from any
	// time since boot (a day-old host's old link downs as much as a
	// watchdog reset a minute before the bundle), so it is reported and
	// does not count for the exit status (Report.Counted).
	ViewSinceBootOnly = "since_boot_only"
)

// evaluate turns the report's inputs into series, evaluates the alerting
// rules over them and adds a finding per sample an alert returned. A
// bundle with one sample is evaluated since boot (ViewSinceBoot); one
// with two in the between-samples view, then in the since-boot view,
// whose findings the first view lacks are added as ViewSinceBootOnly, so
// that a second sample hides nothing the first alone would show. A
// failure of the collectors or of the rules is a note on the report's
// first file (or a finding-less report), never a panic.
func (a *Analyzer) evaluate(r *Report) {
	series, evidence, err := bundleSeriesOf(r, a.rules, a.alerts, a.log)
	if err == nil {
		boot := evalTime.Add(-time.Duration(r.Uptime.Seconds * float64(time.Second)))
		in := ruleeval.Input{Series: series, Now: evalTime, Boot: boot, SinceBoot: r.earlier == nil}
		var firings []ruleeval.Firing
		firings, err = a.alerts.Eval(context.Background(), in)
		view := ViewBetweenSamples
		if in.SinceBoot {
			view = ViewSinceBoot
		}
		seen := map[string]bool{}
		for _, f := range firings {
			seen[firingKey(f)] = true
			r.Findings = append(r.Findings, a.finding(r, f, view, series, evidence))
		}
		if err == nil && !in.SinceBoot {
			in.SinceBoot = true
			firings, err = a.alerts.Eval(context.Background(), in)
			for _, f := range firings {
				if !seen[firingKey(f)] {
					r.Findings = append(r.Findings, a.finding(r, f, ViewSinceBootOnly, series, evidence))
				}
			}
		}
	}
	if err != nil {
		a.log.Warn("Evaluating the alerting rules over a bundle failed", zap.String("bundle", r.Source), zap.Error(err))
		r.Files = append(r.Files, FileResult{Name: "(alerting rules)", Note: "not evaluated: " + err.Error()})
	}
}

// bundleSeriesOf returns the series of the bundle as the rules see them:
// the samples of the collectors' and diagnose's own snapshots (collect)
// of the families an alert reads (the others would cost memory for
// nothing), with the job and instance labels of a scrape, an up series
// for that scrape, and where each series was read.
func bundleSeriesOf(r *Report, rules *logrules.Engine, alerts *ruleeval.Rules, log *zap.Logger) ([]ruleeval.Series, map[string]string, error) {
	out, evidence, err := sampleSeries(r, rules, alerts, evalTime, log)
	if err != nil || r.earlier == nil {
		return out, evidence, err
	}
	first, _, err := sampleSeries(r.earlier, rules, alerts, evalTime.Add(-r.earlierAt), log)
	if err != nil {
		return nil, nil, fmt.Errorf("earlier sample: %w", err)
	}
	byKey := make(map[string]ruleeval.Point, len(first))
	for _, s := range first {
		byKey[seriesKey(s.Labels)] = s.Points[0]
	}
	for i, s := range out {
		if p, ok := byKey[seriesKey(s.Labels)]; ok && s.Labels["__name__"] != "up" {
			out[i].Points = append([]ruleeval.Point{p}, s.Points...)
		}
	}
	return out, evidence, nil
}

// sampleSeries returns the series of one sample of the bundle, each with
// one point at time at, as bundleSeriesOf describes them.
func sampleSeries(r *Report, rules *logrules.Engine, alerts *ruleeval.Rules, at time.Time, log *zap.Logger) ([]ruleeval.Series, map[string]string, error) {
	snaps, err := collect(r, rules, at, log)
	if err != nil {
		return nil, nil, err
	}
	evidence := map[string]string{}
	r.series.evidence(evidence)
	inst := r.Source
	if inst == "" {
		inst = "bundle"
	}
	out := []ruleeval.Series{{Labels: map[string]string{"__name__": "up", "job": bundleJob, "instance": inst},
		Points: []ruleeval.Point{{T: at, V: 1}}}}
	for _, s := range snaps {
		tp := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := tp.TextToMetricFamilies(bytes.NewReader(s.AppendFamilies(nil, exposition.Text, alerts.Reads)))
		if err != nil {
			return nil, nil, fmt.Errorf("reading back the collectors' series: %w", err)
		}
		out = append(out, familiesSeries(fams, alerts, inst, at)...)
	}
	for _, it := range r.ethIfaces {
		stats := make([]string, 0, len(it.statsAt))
		for stat := range it.statsAt {
			stats = append(stats, stat)
		}
		sort.Strings(stats)
		for _, stat := range stats {
			k := "ethtool\x00" + it.name + "\x00" + statStem(stat)
			if _, ok := evidence[k]; !ok {
				evidence[k] = it.statsAt[stat]
			}
		}
	}
	for k, at := range r.kernelEvidence {
		evidence["kmsg\x00"+k[0]+"\x00"+k[1]] = at
	}
	for _, f := range r.rdmaFiles {
		evidence["rdma\x00"+f.path] = f.evidence
	}
	r.phy.evidence(evidence)
	hwmonEvidence(r.hwmon, evidence)
	addStatsEvidence(r.statsFiles, evidence)
	// Last: the exporter's series and their evidence replace the ones
	// built from the tool outputs.
	out = withExporterSeries(out, r.exporter, alerts, inst, at, evidence)
	return out, evidence, nil
}

// whereRead returns the file:line a series was read from, or "".
func whereRead(lbls map[string]string, evidence map[string]string) string {
	if at, ok := evidence[seriesKey(lbls)]; ok {
		return at
	}
	name := lbls["__name__"]
	if name == "nic_kernel_log_events_total" {
		return evidence["kmsg\x00"+lbls["device"]+"\x00"+lbls["event"]]
	}
	if at, ok := rdmaEvidence(lbls, evidence); ok {
		return at
	}
	if at, ok := phyEvidence(lbls, evidence); ok {
		return at
	}
	if at, ok := statsEvidence(lbls, evidence); ok {
		return at
	}
	if stat, ok := strings.CutPrefix(name, "nic_ethtool_"); ok {
		stat = strings.TrimSuffix(stat, "_total")
		if at, ok := evidence["ethtool\x00"+lbls["device"]+"\x00"+statStem(stat)]; ok {
			return at
		}
	}
	return ""
}

// rdmaEvidence returns the file:line of the RDMA counter an infiniband
// collector series was read from: nic_infiniband_port_symbol_error_total
// {device="mlx5_0",port="1"} from class/infiniband/mlx5_0/ports/1/counters/symbol_error
// (nic_infiniband_port_counters_saturated from the counter its label
// names), nic_infiniband_hw_X_total from the port's hw_counters, or the
// device's with port "0".
func rdmaEvidence(lbls map[string]string, evidence map[string]string) (string, bool) {
	name, dev, port := lbls["__name__"], lbls["device"], lbls["port"]
	dir := "counters"
	c, ok := strings.CutPrefix(name, "nic_infiniband_port_")
	if name == "nic_infiniband_port_counters_saturated" {
		c = lbls["counter"]
	}
	if !ok {
		if c, ok = strings.CutPrefix(name, "nic_infiniband_hw_"); !ok {
			return "", false
		}
		dir = "hw_counters"
	}
	c = strings.TrimSuffix(c, "_total")
	p := "class/infiniband/" + dev + "/ports/" + port + "/" + dir + "/" + c
	if dir == "hw_counters" && port == "0" {
		p = "class/infiniband/" + dev + "/hw_counters/" + c
	}
	at, ok := evidence["rdma\x00"+p]
	return at, ok
}

// statStem relates a driver statistic to the ethtool collector's name
// for it: queue numbers dropped (queue_0_tx_missed_tx is
// queue_tx_missed_tx summed) and each word without a plural s
// (rx_bits_phy is rx_bit_phy).
func statStem(stat string) string {
	var words []string
	for _, w := range strings.Split(stat, "_") {
		if w == "" || strings.Trim(w, "0123456789") == "" {
			continue
		}
		words = append(words, strings.TrimSuffix(w, "s"))
	}
	return strings.Join(words, "_")
}

// Counted returns how many of the report's findings count for the exit
// status: all but those only since boot (ViewSinceBootOnly).
func (r *Report) Counted() int {
	n := 0
	for _, f := range r.Findings {
		if f.View != ViewSinceBootOnly {
			n++
		}
	}
	return n
}

// firingKey identifies a firing across the views: the alert and the
// labels of its sample.
func firingKey(f ruleeval.Firing) string {
	lbls := make(map[string]string, len(f.Sample)+1)
	for k, v := range f.Sample {
		lbls[k] = v
	}
	lbls["__name__"] = f.Rule.Name
	return seriesKey(lbls)
}

// finding builds the finding of one firing in view: the device from its
// labels, the series the alert read for that device as evidence, and a
// detail that says how the bundle's time was read.
func (a *Analyzer) finding(r *Report, f ruleeval.Firing, view string, series []ruleeval.Series, evidence map[string]string) Finding {
	dev := f.Labels["device"]
	if p := f.Labels["port"]; p != "" {
		dev += " port " + p
	}
	if rep := f.Labels["reporter"]; rep != "" {
		dev += " reporter " + rep
	}
	if dev == "" {
		dev = f.Labels["instance"]
	}
	var ev []string
	observed, moved := false, false // counters of the evidence observed twice, and rising between
	for _, s := range series {
		if !f.Rule.Selects(s.Labels) || !sameDevice(s.Labels, f.Sample) {
			continue
		}
		if s.Counter && len(s.Points) > 1 {
			observed = true
			moved = moved || s.Points[len(s.Points)-1].V != s.Points[0].V
		}
		if s.Counter && s.Points[len(s.Points)-1].V == 0 {
			continue // no evidence of an increase
		}
		e := fmt.Sprintf("%s = %s", seriesKey(s.Labels), strconv.FormatFloat(s.Points[len(s.Points)-1].V, 'g', -1, 64))
		if at := whereRead(s.Labels, evidence); at != "" {
			e = at + ": " + e
		}
		ev = append(ev, e)
	}
	sort.Strings(ev)
	if len(ev) > maxEvidence {
		ev = append(ev[:maxEvidence], fmt.Sprintf("and %d more series", len(ev)-maxEvidence))
	}
	value, uptime := strconv.FormatFloat(f.Value, 'g', 4, 64), formatUptime(r.Uptime.Seconds)
	apart := r.earlierAt.Round(time.Millisecond).String()
	var detail string
	switch view {
	case ViewSinceBoot:
		detail = fmt.Sprintf("The rule's expression returned %s for this device (counters averaged since boot: uptime %s, %s)",
			value, uptime, r.Uptime.Source)
	case ViewBetweenSamples:
		detail = fmt.Sprintf("The rule's expression returned %s for this device (counters in both samples at their rate between them, %s apart; counters only in the later sample averaged since boot: uptime %s, %s)",
			value, apart, uptime, r.Uptime.Source)
	default:
		why := "at the counters' rates between the two samples, " + apart + " apart, the rule's expression returns nothing for this device"
		if observed && !moved {
			why = "the counters it read did not move between the two samples, " + apart + " apart"
		}
		detail = fmt.Sprintf("Only since boot, not counted in the exit status: %s; with the counters rising evenly from zero at boot (uptime %s, %s) to the earlier sample it returned %s, from counts that may be from any time since boot",
			why, uptime, r.Uptime.Source, value)
	}
	if f.Rule.For > 0 {
		detail += fmt.Sprintf("; its for: %s cannot be observed in a snapshot, the condition holds in the latest one", model.Duration(f.Rule.For))
	}
	detail += "."
	lbls := map[string]string{}
	for k, v := range f.Sample {
		if k != "job" && k != "instance" {
			lbls[k] = v
		}
	}
	return Finding{
		Labels:    lbls,
		Condition: f.Annotations["summary"],
		Device:    dev,
		Severity:  f.Labels["severity"],
		Alert:     f.Rule.Name,
		Runbook:   f.Annotations["runbook_url"],
		Evidence:  strings.Join(ev, "; "),
		Detail:    detail,
		View:      view,
	}
}

// sameDevice reports whether series labels agree with a firing's sample
// on the labels that name a device (a label either lacks is no
// disagreement).
func sameDevice(series, sample map[string]string) bool {
	for _, l := range []string{"device", "port", "reporter", "pci_address", "event", "queue", "priority"} {
		a, okA := series[l]
		b, okB := sample[l]
		if okA && okB && a != b {
			return false
		}
	}
	return true
}

// formatUptime prints an uptime in whole units: 3d4h, 2h5m, 42s.
func formatUptime(sec float64) string {
	d := time.Duration(sec) * time.Second
	switch {
	case d >= 24*time.Hour:
		return fmt.Sprintf("%dd%dh", d/(24*time.Hour), (d%(24*time.Hour))/time.Hour)
	case d >= time.Hour:
		return fmt.Sprintf("%dh%dm", d/time.Hour, (d%time.Hour)/time.Minute)
	case d >= time.Minute:
		return fmt.Sprintf("%dm%ds", d/time.Minute, (d%time.Minute)/time.Second)
	}
	return fmt.Sprintf("%ds", d/time.Second)
}
