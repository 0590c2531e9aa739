package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// dashboard is the part of a Grafana dashboard model the tests read.
type dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []variable `json:"list"`
	} `json:"templating"`
	Annotations struct {
		List []struct {
			Name       string         `json:"name"`
			BuiltIn    int            `json:"builtIn"`
			Datasource map[string]any `json:"datasource"`
			Expr       string         `json:"expr"`
		} `json:"list"`
	} `json:"annotations"`
}

type panel struct {
	ID              int            `json:"id"`
	Title           string         `json:"title"`
	Description     string         `json:"description"`
	Type            string         `json:"type"`
	Datasource      map[string]any `json:"datasource"`
	Panels          []panel        `json:"panels"`
	FieldConfig     fieldConfig    `json:"fieldConfig"`
	Transformations []struct {
		ID      string `json:"id"`
		Options struct {
			ExcludeByName map[string]bool   `json:"excludeByName"`
			RenameByName  map[string]string `json:"renameByName"`
		} `json:"options"`
	} `json:"transformations"`
	Targets []struct {
		RefID      string         `json:"refId"`
		Instant    bool           `json:"instant"`
		Format     string         `json:"format"`
		Expr       string         `json:"expr"`
		Datasource map[string]any `json:"datasource"`
	} `json:"targets"`
}

// fieldConfig is a panel's field configuration: the defaults of every
// field and the overrides of some.
type fieldConfig struct {
	Defaults  fieldDefaults `json:"defaults"`
	Overrides []struct {
		Matcher struct {
			ID      string `json:"id"`
			Options string `json:"options"`
		} `json:"matcher"`
		Properties []struct {
			ID    string          `json:"id"`
			Value json.RawMessage `json:"value"`
		} `json:"properties"`
	} `json:"overrides"`
}

// fieldDefaults are the field options the tests read.
type fieldDefaults struct {
	Unit       string         `json:"unit"`
	Mappings   []valueMapping `json:"mappings"`
	Thresholds *struct {
		Mode  string `json:"mode"`
		Steps []struct {
			Color string   `json:"color"`
			Value *float64 `json:"value"`
		} `json:"steps"`
	} `json:"thresholds"`
}

// valueMapping is a Grafana value mapping of type "value": each code's
// text and colour.
type valueMapping struct {
	Type    string `json:"type"`
	Options map[string]struct {
		Text  string `json:"text"`
		Color string `json:"color"`
	} `json:"options"`
}

type variable struct {
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	Query      any            `json:"query"`
	Definition string         `json:"definition"`
	Multi      bool           `json:"multi"`
	Datasource map[string]any `json:"datasource"`
}

func readDashboards(t *testing.T) map[string]dashboard {
	t.Helper()
	files, err := filepath.Glob("../dashboards/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards in ../dashboards: %v", err)
	}
	out := make(map[string]dashboard)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d dashboard
		dec := json.NewDecoder(strings.NewReader(string(b)))
		if err := dec.Decode(&d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[filepath.Base(f)] = d
	}
	return out
}

// allPanels flattens rows.
func allPanels(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}

const dsRef = "${datasource}"

// TestDashboardsAreGeneric checks that no dashboard is tied to one
// Grafana or one host: every panel, query, variable and annotation uses the
// datasource variable, and no query names a host or device literally.
func TestDashboardsAreGeneric(t *testing.T) {
	literal := regexp.MustCompile(`\b(instance|device|job)\s*=~?\s*"[^$"]`)
	uids := make(map[string]string)
	for file, d := range readDashboards(t) {
		if d.UID == "" || d.Title == "" {
			t.Errorf("%s: needs a uid and a title", file)
		}
		if other, dup := uids[d.UID]; dup {
			t.Errorf("%s and %s share uid %s", file, other, d.UID)
		}
		uids[d.UID] = file
		hasDS := false
		for _, v := range d.Templating.List {
			if v.Type == "datasource" && v.Name == "datasource" {
				hasDS = true
			} else if v.Type == "query" && fmt.Sprint(v.Datasource["uid"]) != dsRef {
				t.Errorf("%s: variable %s does not use %s", file, v.Name, dsRef)
			}
		}
		if !hasDS {
			t.Errorf("%s: no datasource variable", file)
		}
		n := 0
		for _, p := range allPanels(d.Panels) {
			if p.Type == "row" {
				continue
			}
			if fmt.Sprint(p.Datasource["uid"]) != dsRef {
				t.Errorf("%s panel %q: datasource %v, want %s", file, p.Title, p.Datasource, dsRef)
			}
			if len(p.Targets) == 0 {
				t.Errorf("%s panel %q: no query", file, p.Title)
			}
			for _, tg := range p.Targets {
				n++
				if fmt.Sprint(tg.Datasource["uid"]) != dsRef {
					t.Errorf("%s panel %q %s: datasource %v, want %s", file, p.Title, tg.RefID, tg.Datasource, dsRef)
				}
				if literal.MatchString(tg.Expr) {
					t.Errorf("%s panel %q %s: hard-coded host, job or device in %q", file, p.Title, tg.RefID, tg.Expr)
				}
			}
		}
		if n == 0 {
			t.Errorf("%s: no panel queries", file)
		}
		for _, a := range d.Annotations.List {
			if a.BuiltIn == 0 && fmt.Sprint(a.Datasource["uid"]) != dsRef {
				t.Errorf("%s annotation %q: datasource %v, want %s", file, a.Name, a.Datasource, dsRef)
			}
		}
	}
}

var labelValues = regexp.MustCompile(`^label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`)

// substitute replaces the dashboard variables and Grafana's interval
// variables in a query.
func substitute(expr string, vars map[string]string) string {
	for _, k := range []string{"__rate_interval", "__interval", "__range"} {
		v := map[string]string{"__rate_interval": "1m", "__interval": "15s", "__range": "1h"}[k]
		expr = strings.ReplaceAll(expr, "${"+k+"}", v)
		expr = strings.ReplaceAll(expr, "$"+k, v)
	}
	for k, v := range vars {
		expr = strings.ReplaceAll(expr, "${"+k+"}", v)
		expr = strings.ReplaceAll(expr, "$"+k, v)
	}
	return expr
}

// testDashboards resolves each dashboard's variables against the real
// Prometheus as Grafana would (the host variable set to the faulty demo
// host, multi-value variables to all their values), then runs every panel
// query and requires data, and every annotation query over the last minute;
// then checks the colours of the fleet stat panels (testFleetStats).
func (s *stack) testDashboards(t *testing.T) {
	for file, d := range readDashboards(t) {
		t.Run(file, func(t *testing.T) {
			vars := make(map[string]string)
			for _, v := range d.Templating.List {
				if v.Type != "query" {
					continue
				}
				def := v.Definition
				if q, ok := v.Query.(map[string]any); ok {
					def = fmt.Sprint(q["query"])
				}
				m := labelValues.FindStringSubmatch(strings.TrimSpace(def))
				if m == nil {
					t.Errorf("variable %s: query %q is not label_values(expr, label)", v.Name, def)
					continue
				}
				res, err := s.prom.query(substitute(m[1], vars), false)
				if err != nil {
					t.Errorf("variable %s: %v", v.Name, err)
					continue
				}
				var vals []string
				seen := make(map[string]bool)
				for _, r := range res {
					if val := r.Metric[m[2]]; val != "" && !seen[val] {
						seen[val] = true
						vals = append(vals, val)
					}
				}
				if len(vals) == 0 {
					t.Errorf("variable %s: %q gives no values", v.Name, def)
					continue
				}
				switch {
				case v.Name == "instance":
					if !seen[s.faulty] {
						t.Errorf("variable instance: %v lacks the faulty demo host %s", vals, s.faulty)
					}
					vars[v.Name] = s.faulty
				case v.Multi:
					vars[v.Name] = strings.Join(vals, "|")
				default:
					vars[v.Name] = vals[0]
				}
			}
			checks := make(map[string]func() error)
			for _, p := range allPanels(d.Panels) {
				for _, tg := range p.Targets {
					expr := substitute(tg.Expr, vars)
					if strings.Contains(expr, "$") {
						t.Errorf("panel %q %s: unresolved variable in %q", p.Title, tg.RefID, expr)
						continue
					}
					// Graphs are range queries, as Grafana runs them;
					// stat, bar gauge and table panels instant ones.
					rng := !tg.Instant
					if why, quiet := quietPanelQuery(tg.Expr); quiet {
						checks[fmt.Sprintf("panel %q %s (no data by design: %s): %s", p.Title, tg.RefID, why, expr)] = func() error {
							return s.quietQueryInputs(expr, metricNames(tg.Expr), rng)
						}
						continue
					}
					checks[fmt.Sprintf("panel %q %s: %s", p.Title, tg.RefID, expr)] = func() error {
						res, err := s.prom.query(expr, rng)
						if err != nil {
							return err
						}
						if len(res) == 0 {
							return fmt.Errorf("no data")
						}
						return nil
					}
				}
			}
			for _, a := range d.Annotations.List {
				if a.BuiltIn != 0 {
					continue
				}
				expr := substitute(a.Expr, vars)
				checks[fmt.Sprintf("annotation %q: %s", a.Name, expr)] = func() error {
					res, err := s.prom.query(expr, true)
					if err != nil {
						return err
					}
					if len(res) == 0 {
						return fmt.Errorf("no events since the demo hosts started")
					}
					return nil
				}
			}
			waitAll(t, stackWait, checks)
		})
	}
	t.Run("fleet stat thresholds", s.testFleetStats)
}

// TestEveryAlertHasAPanel checks the last link of metric → alert →
// runbook → panel: every alert reads at least one metric that a dashboard
// panel also shows, so the engineer who gets the alert finds its signal on
// a dashboard.
func TestEveryAlertHasAPanel(t *testing.T) {
	shown := make(map[string]bool)
	for _, d := range readDashboards(t) {
		for _, p := range allPanels(d.Panels) {
			for _, tg := range p.Targets {
				for _, m := range metricNames(tg.Expr) {
					shown[m] = true
				}
			}
		}
	}
	alerts := alertRules(t)
	for _, name := range sortedKeys(alerts) {
		found := false
		for _, m := range metricNames(exprOf(alerts[name])) {
			found = found || shown[m]
		}
		if !found {
			t.Errorf("alert %s: no dashboard panel shows any of %v", name, metricNames(exprOf(alerts[name])))
		}
	}
}

// TestDashboardPanelIDsUnique checks that no two panels of a dashboard
// share an id: Grafana addresses a panel by it (links, view and edit),
// and two branches that each add a panel can pick the same one.
func TestDashboardPanelIDsUnique(t *testing.T) {
	for name, d := range readDashboards(t) {
		seen := make(map[int]string)
		for _, p := range allPanels(d.Panels) {
			if other, ok := seen[p.ID]; ok {
				t.Errorf("%s: panels %q and %q share id %d", name, other, p.Title, p.ID)
			}
			seen[p.ID] = p.Title
		}
	}
}

// quietPanelQueries are the panel queries that have no data on the demo
// hosts by design, and why.
var quietPanelQueries = map[string]string{
	"pool:nic_firmware_running_versions:count > 1": "it lists the pools whose boards run more than one firmware version; the demo hosts run one",
}

// quietPanelQuery reports whether a panel's query has no data on the demo
// hosts by design: it is listed in quietPanelQueries, or every metric it
// reads is empty under the shipped configuration (emptyByDefault).
func quietPanelQuery(expr string) (string, bool) {
	if why, ok := quietPanelQueries[expr]; ok {
		return why, true
	}
	names := metricNames(expr)
	for _, m := range names {
		if emptyByDefault[m] == "" {
			return "", false
		}
	}
	if len(names) == 0 {
		return "", false
	}
	return emptyByDefault[names[0]], true
}

// quietQueryInputs checks a quiet panel query: it must evaluate, and each
// metric it reads (names, taken from the query before its variables were
// substituted) that is not empty by default must have data.
func (s *stack) quietQueryInputs(expr string, names []string, rng bool) error {
	if _, err := s.prom.query(expr, rng); err != nil {
		return err
	}
	for _, m := range names {
		if emptyByDefault[m] != "" {
			continue
		}
		res, err := s.prom.query(fmt.Sprintf(`group({__name__=%q})`, m), false)
		if err != nil {
			return err
		}
		if len(res) == 0 {
			return fmt.Errorf("%s, which it reads, has no data", m)
		}
	}
	return nil
}

// TestQuietPanelQueriesExist keeps quietPanelQueries honest: each of its
// queries is a panel's query in some dashboard.
func TestQuietPanelQueriesExist(t *testing.T) {
	exprs := make(map[string]bool)
	for _, d := range readDashboards(t) {
		for _, p := range allPanels(d.Panels) {
			for _, tg := range p.Targets {
				exprs[tg.Expr] = true
			}
		}
	}
	for _, q := range sortedKeys(quietPanelQueries) {
		if !exprs[q] {
			t.Errorf("quietPanelQueries lists %q, which no dashboard panel queries", q)
		}
	}
}
