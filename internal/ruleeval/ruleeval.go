package ruleeval

import (
	"context"
	_ "embed" // the shipped rule files
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/template"
	"go.uber.org/zap"
	"go.uber.org/zap/exp/zapslog"
	"go.yaml.in/yaml/v3"
)

// ShippedAlerts and ShippedRecords are copies of
// deploy/prometheus/alerts.yml and rules.yml (deploy is a module of its
// own, which the exporter's module cannot embed from). `make mixin`
// refreshes them, and TestShippedRulesMatchDeploy fails when they differ.
var (
	//go:embed alerts.yml
	ShippedAlerts []byte
	//go:embed rules.yml
	ShippedRecords []byte
)

// Config names the rule files to evaluate.
type Config struct {
	// Alerts is an alerting rules file, such as ShippedAlerts. Its
	// recording rules, if any, are used as Records' are.
	Alerts []byte
	// Records is a recording rules file, such as ShippedRecords; only
	// the rules whose result an alert reads are evaluated. It may be nil.
	Records []byte
	// Step is the interval of the generated samples; one minute when 0.
	Step time.Duration
	// Checked skips rulefmt's validation (each expression parsed twice,
	// each template parsed) for files already checked, such as the
	// shipped ones, which the deploy tests check with promtool; it
	// halves the loading time. Expressions are still parsed.
	Checked bool
}

// Rule is one alerting rule of the file.
type Rule struct {
	Name  string
	Group string
	Expr  string
	// For is the rule's "for:"; see the package comment.
	For         time.Duration
	Labels      map[string]string
	Annotations map[string]string

	expr parser.Expr
	// selectors are the label matchers of every vector selector the
	// expression reads, those of the recording rules it reads included.
	selectors [][]*labels.Matcher
}

// Metrics returns the metric names the rule reads, those the recording
// rules it reads read included, sorted.
func (r *Rule) Metrics() []string {
	set := map[string]bool{}
	for _, ms := range r.selectors {
		for _, m := range ms {
			if m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual {
				set[m.Value] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Selects reports whether one of the rule's vector selectors selects a
// series with these labels (metric name under __name__).
func (r *Rule) Selects(lbls map[string]string) bool {
	for _, ms := range r.selectors {
		ok := true
		for _, m := range ms {
			if !m.Matches(lbls[m.Name]) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

type recordRule struct {
	name   string
	labels map[string]string
	expr   parser.Expr
	text   string
}

// Rules are parsed rule files, ready to evaluate.
type Rules struct {
	// names are the metric names the alerts read; nameMatchers the
	// __name__ matchers that are not an equality, which may read more.
	names        map[string]bool
	nameMatchers []*labels.Matcher
	alerts       []*Rule
	records      []recordRule
	engine       *promql.Engine
	step         time.Duration
	log          *zap.Logger
}

// Load parses the rule files of cfg with Prometheus' rule file parser
// (which validates each expression as promtool check rules does).
func Load(cfg Config, log *zap.Logger) (*Rules, error) {
	if log == nil {
		log = zap.NewNop()
	}
	p := parser.NewParser(parser.Options{})
	slogger := slog.New(zapslog.NewHandler(log.Core()))
	var groups []rulefmt.RuleGroup
	for _, f := range []struct {
		name string
		data []byte
	}{{"alerting rules", cfg.Alerts}, {"recording rules", cfg.Records}} {
		if len(f.data) == 0 {
			continue
		}
		if cfg.Checked {
			var rgs rulefmt.RuleGroups
			if err := yaml.Unmarshal(f.data, &rgs); err != nil {
				return nil, fmt.Errorf("parsing the %s: %w", f.name, err)
			}
			groups = append(groups, rgs.Groups...)
			continue
		}
		rgs, errs := rulefmt.Parse(f.data, false, model.UTF8Validation, p, slogger)
		if len(errs) > 0 {
			return nil, fmt.Errorf("parsing the %s: %w", f.name, errors.Join(errs...))
		}
		groups = append(groups, rgs.Groups...)
	}
	r := &Rules{step: cfg.Step, log: log}
	if r.step <= 0 {
		r.step = time.Minute
	}
	records := map[string]recordRule{}
	for _, g := range groups {
		for _, rl := range g.Rules {
			e, err := p.ParseExpr(rl.Expr)
			if err != nil {
				return nil, fmt.Errorf("rule %s%s: %w", rl.Alert, rl.Record, err)
			}
			if rl.Record != "" {
				records[rl.Record] = recordRule{name: rl.Record, labels: rl.Labels, expr: e, text: rl.Expr}
				continue
			}
			r.alerts = append(r.alerts, &Rule{Name: rl.Alert, Group: g.Name, Expr: rl.Expr, For: time.Duration(rl.For),
				Labels: rl.Labels, Annotations: rl.Annotations, expr: e})
		}
	}
	if len(r.alerts) == 0 {
		return nil, errors.New("the alerting rules file has no alerting rule")
	}
	used := map[string]bool{}
	r.names = map[string]bool{}
	for _, a := range r.alerts {
		a.selectors = selectors(a.expr, records, used, 0)
		for _, ms := range a.selectors {
			named := false
			for _, m := range ms {
				if m.Name != model.MetricNameLabel {
					continue
				}
				named = true
				if m.Type == labels.MatchEqual {
					r.names[m.Value] = true
				} else {
					r.nameMatchers = append(r.nameMatchers, m)
				}
			}
			if !named {
				r.nameMatchers = append(r.nameMatchers, labels.MustNewMatcher(labels.MatchRegexp, model.MetricNameLabel, ".+"))
			}
		}
	}
	names := make([]string, 0, len(used))
	for n := range used {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		r.records = append(r.records, records[n])
	}
	r.engine = promql.NewEngine(promql.EngineOpts{
		Logger:        slogger,
		MaxSamples:    50_000_000,
		Timeout:       time.Minute,
		LookbackDelta: 5 * time.Minute,
	})
	return r, nil
}

// Shipped loads the embedded copies of the shipped rule files.
func Shipped(log *zap.Logger) (*Rules, error) {
	return Load(Config{Alerts: ShippedAlerts, Records: ShippedRecords, Checked: true}, log)
}

// selectors returns the label matchers of the vector selectors of e,
// following the recording rules it reads (recorded in used) to the
// series they read.
func selectors(e parser.Expr, records map[string]recordRule, used map[string]bool, depth int) [][]*labels.Matcher {
	var out [][]*labels.Matcher
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		if rec, ok := records[vs.Name]; ok && depth < 8 {
			used[vs.Name] = true
			out = append(out, selectors(rec.expr, records, used, depth+1)...)
			return nil
		}
		out = append(out, vs.LabelMatchers)
		return nil
	})
	return out
}

// Reads reports whether an alert (or a recording rule it reads) may
// select series of the metric name: a caller can leave the others out
// of Input, so that a host's many unrelated series cost nothing.
func (r *Rules) Reads(name string) bool {
	if r.names[name] {
		return true
	}
	for _, m := range r.nameMatchers {
		if m.Matches(name) {
			return true
		}
	}
	return false
}

// Alerts returns the alerting rules in file order.
func (r *Rules) Alerts() []*Rule { return r.alerts }

// Point is one observation of a series.
type Point struct {
	T time.Time
	V float64
}

// Series is one series read from a host, with its metric name under
// __name__.
type Series struct {
	Labels map[string]string
	// Counter marks a monotonic counter: before its first observation it
	// grows linearly from zero at boot.
	Counter bool
	// Points are its observations, oldest first.
	Points []Point
}

// Input is what to evaluate the rules over.
type Input struct {
	Series []Series
	// Now is the time of the last snapshot: the rules are evaluated at it.
	Now time.Time
	// Boot is when the host booted: counters are zero then and no
	// series has samples before it. It must be before Now.
	Boot time.Time
	// SinceBoot evaluates the "since boot" view of series with two
	// observations or more: a counter grows linearly from zero at boot
	// to its first observation, as a counter with one observation does,
	// and between its observations as they say. Without it (the "between
	// samples" view) the rate between a counter's first two
	// observations holds back to the start of any window, so a counter
	// that did not move between them is quiet however high its count.
	// See the package comment.
	SinceBoot bool
}

// Firing is one sample an alerting rule's expression returned.
type Firing struct {
	Rule *Rule
	// Sample are the labels of the sample the expression returned.
	Sample map[string]string
	// Labels are the sample's labels with the rule's (expanded) labels
	// added, as the rule manager gives them to Alertmanager.
	Labels      map[string]string
	Annotations map[string]string
	Value       float64
}

// Eval evaluates the recording rules the alerts read, then every
// alerting rule, at in.Now, and returns the samples of the alerts in
// rule order. A rule that fails to evaluate is an error.
func (r *Rules) Eval(ctx context.Context, in Input) ([]Firing, error) {
	if !in.Boot.Before(in.Now) {
		return nil, fmt.Errorf("boot time %s is not before the snapshot time %s", in.Boot.Format(time.RFC3339), in.Now.Format(time.RFC3339))
	}
	st := newStore(in, r.step)
	for _, rec := range r.records {
		v, err := r.query(ctx, st, rec.text, in.Now)
		if err != nil {
			return nil, fmt.Errorf("recording rule %s: %w", rec.name, err)
		}
		for _, s := range v {
			lb := labels.NewBuilder(s.Metric)
			lb.Set(model.MetricNameLabel, rec.name)
			for k, val := range rec.labels {
				lb.Set(k, val)
			}
			st.add(Series{Labels: lb.Labels().Map(), Points: []Point{{T: in.Now, V: s.F}}})
		}
	}
	var out []Firing
	for _, a := range r.alerts {
		v, err := r.query(ctx, st, a.Expr, in.Now)
		if err != nil {
			return nil, fmt.Errorf("alert %s: %w", a.Name, err)
		}
		for _, s := range v {
			out = append(out, r.firing(ctx, a, s, in.Now))
		}
	}
	return out, nil
}

func (r *Rules) query(ctx context.Context, st *store, expr string, at time.Time) (promql.Vector, error) {
	q, err := r.engine.NewInstantQuery(ctx, st, nil, expr, at)
	if err != nil {
		return nil, err
	}
	defer q.Close()
	res := q.Exec(ctx)
	if res.Err != nil {
		return nil, res.Err
	}
	switch v := res.Value.(type) {
	case promql.Vector:
		return v, nil
	case promql.Scalar:
		return promql.Vector{{F: v.V, T: v.T}}, nil
	}
	return nil, fmt.Errorf("expression returned a %s, not a vector", res.Value.Type())
}

// firing expands the rule's labels and annotations for sample s, as the
// rule manager does (the same template prefix and expander), without
// external labels or URL.
func (r *Rules) firing(ctx context.Context, a *Rule, s promql.Sample, at time.Time) Firing {
	lbls := s.Metric.Map()
	delete(lbls, model.MetricNameLabel)
	data := template.AlertTemplateData(lbls, nil, "", s)
	defs := "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$externalURL := .ExternalURL}}{{$value := .Value}}"
	expand := func(text string) string {
		t := template.NewTemplateExpander(ctx, defs+text, "__alert_"+a.Name, data, model.TimeFromUnixNano(at.UnixNano()), nil, nil, nil)
		res, err := t.Expand()
		if err != nil {
			r.log.Warn("Expanding an alert template failed", zap.String("alert", a.Name), zap.Error(err))
			return text
		}
		return res
	}
	f := Firing{Rule: a, Sample: lbls, Labels: map[string]string{}, Annotations: map[string]string{}, Value: s.F}
	for k, v := range lbls {
		f.Labels[k] = v
	}
	for k, v := range a.Labels {
		f.Labels[k] = expand(v)
	}
	f.Labels["alertname"] = a.Name
	for k, v := range a.Annotations {
		if strings.Contains(v, "{{") {
			v = expand(v)
		}
		f.Annotations[k] = v
	}
	return f
}
