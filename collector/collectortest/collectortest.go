// Package collectortest runs collectors in tests: one poll with the
// checks every collector's output must pass, the parsed series of an
// exposition, and golden files. Every collector package's tests poll
// through it, so a duplicate series or an invalid sample fails the test
// of whichever collector produced it.
package collectortest

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
)

// Result is what one poll produced.
type Result struct {
	// Snapshot is the poll's snapshot.
	Snapshot *exposition.Snapshot
	// Text and Detail are the default and the detail exposition in the
	// text format.
	Text, Detail string
	// Errors are the source errors the poll reported.
	Errors *collector.SourceErrors
	// Err is what Update returned.
	Err error
}

// Poll runs one Update of c with the source errors errs (a new one that
// logs nothing when nil) and returns what it produced. Whatever Update
// returned, it fails the test if a sample was invalid (no descriptor, or
// label values that do not match its label names) or if the
// default or the detail exposition fails exposition.Check: a series
// twice, a family split or declared twice.
func Poll(t testing.TB, c collector.Collector, errs *collector.SourceErrors) Result {
	t.Helper()
	if errs == nil {
		errs = collector.NewSourceErrors(zap.NewNop(), time.Hour)
	}
	b := exposition.NewBuilder()
	err := c.Update(context.Background(), collector.NewPoll(b, errs))
	if b.Invalid() != 0 {
		t.Errorf("%s: %d invalid samples", c.Name(), b.Invalid())
	}
	snap := b.Snapshot()
	r := Result{Snapshot: snap, Text: snap.String(), Detail: snap.Detail().String(), Errors: errs, Err: err}
	if err := exposition.Check([]byte(r.Text)); err != nil {
		t.Errorf("%s: default exposition: %v", c.Name(), err)
	}
	if err := exposition.Check([]byte(r.Detail)); err != nil {
		t.Errorf("%s: detail exposition: %v", c.Name(), err)
	}
	return r
}

// MustPoll is Poll that fails the test at once if Update fails.
func MustPoll(t testing.TB, c collector.Collector, errs *collector.SourceErrors) Result {
	t.Helper()
	r := Poll(t, c, errs)
	if r.Err != nil {
		t.Fatalf("%s: Update: %v", c.Name(), r.Err)
	}
	return r
}

// Series parses a text exposition into `name{a="x",b="y"}` -> value,
// with the labels sorted by name. It fails the test if the text does
// not parse.
func Series(t testing.TB, text string) map[string]float64 {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("exposition does not parse: %v\n%s", err, text)
	}
	out := make(map[string]float64)
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+`="`+l.GetValue()+`"`)
			}
			sort.Strings(ls)
			var v float64
			switch {
			case m.GetCounter() != nil:
				v = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				v = m.GetGauge().GetValue()
			default:
				v = m.GetUntyped().GetValue()
			}
			out[name+"{"+strings.Join(ls, ",")+"}"] = v
		}
	}
	return out
}

// update is the -update flag of each test binary that links this
// package (every collector package's tests do): one definition, so that
// `go test ./collector/... -update` means the same in every package. A
// flag has to exist before the test binary parses its arguments, hence a
// package variable; it is the only one, and only tests link the package.
var update = flag.Bool("update", false, "rewrite the golden files (collectortest.Golden) instead of comparing with them")

// Update reports whether the test binary was started with -update, for
// golden files that are not compared through Golden.
func Update() bool { return *update }

// Golden compares got with the golden file at path, or, with -update,
// writes got there (creating its directory). A mismatch lists the lines
// only in the file (-) and only in got (+).
func Golden(t testing.TB, path, got string) {
	t.Helper()
	golden(t, path, got, *update)
}

// golden is Golden with the flag's value given.
func golden(t testing.TB, path, got string, update bool) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run '%s' -update writes it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs (go test -update rewrites it; review the diff):\n%s", path, LineDiff(string(want), got))
	}
}

// LineDiff lists the lines only in want (-) and only in got (+), in
// order, at most 40 of them.
func LineDiff(want, got string) string {
	in := func(s string) map[string]int {
		m := make(map[string]int)
		for _, l := range strings.Split(s, "\n") {
			m[l]++
		}
		return m
	}
	w, g := in(want), in(got)
	var out []string
	for _, l := range strings.Split(want, "\n") {
		if g[l] == 0 {
			out = append(out, "-"+l)
		} else {
			g[l]--
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if w[l] == 0 {
			out = append(out, "+"+l)
		} else {
			w[l]--
		}
	}
	if len(out) > 40 {
		out = append(out[:40], "…")
	}
	if len(out) == 0 {
		return "(the same lines in another order)"
	}
	return strings.Join(out, "\n")
}
