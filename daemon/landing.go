package daemon

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/exporter-toolkit/web"

	"github.com/nic-exporter/nic_exporter/collector"
)

// statusMarker is where the landing page's collector table goes: the
// exporter-toolkit renders the page once, this handler fills the table in
// on every request.
const statusMarker = "<!-- nic_exporter collector status -->"

// statusPage serves the landing page: the exporter-toolkit page (name,
// version, links) with a table of each collector's state, read from the
// runners' status (what the self-metrics report), never from a device.
type statusPage struct {
	head, tail []byte
	statuses   func() []collector.Status
	now        func() time.Time
}

// newStatusPage renders cfg once and returns the page; statuses gives the
// collectors' state at each request.
func newStatusPage(cfg web.LandingConfig, statuses func() []collector.Status) (*statusPage, error) {
	cfg.ExtraHTML += statusMarker
	page, err := web.NewLandingPage(cfg)
	if err != nil {
		return nil, fmt.Errorf("landing page: %w", err)
	}
	// The toolkit page is fixed once rendered; take it once.
	rec := httptest.NewRecorder()
	page.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	head, tail, ok := bytes.Cut(rec.Body.Bytes(), []byte(statusMarker))
	if !ok {
		return nil, fmt.Errorf("landing page: the exporter-toolkit page lost its extra HTML")
	}
	return &statusPage{head: head, tail: tail, statuses: statuses, now: time.Now}, nil
}

// statusRow is one collector's line of the table.
type statusRow struct {
	Name, State, StateClass string
	Devices, Series         int
	LastSuccess             string
	LastDuration            string
	Polls, Failures         uint64
	Errors                  string
	LastError               string
}

var statusTable = template.Must(template.New("status").Parse(`<h2>Collectors</h2>
<style>
table.collectors { border-collapse: collapse; }
table.collectors th, table.collectors td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: left; }
td.up { color: #1a7f37; } td.down, td.stuck { color: #cf222e; font-weight: bold; } td.absent, td.waiting { color: #6e7781; }
</style>
<table class="collectors">
<tr><th>Collector</th><th>State</th><th>Devices</th><th>Series</th><th>Last successful poll</th><th>Last poll took</th><th>Polls</th><th>Failed polls</th><th>Source errors (reason: count)</th><th>Last poll error</th></tr>
{{range .}}<tr><td>{{.Name}}</td><td class="{{.StateClass}}">{{.State}}</td><td>{{.Devices}}</td><td>{{.Series}}</td><td>{{.LastSuccess}}</td><td>{{.LastDuration}}</td><td>{{.Polls}}</td><td>{{.Failures}}</td><td>{{.Errors}}</td><td>{{.LastError}}</td></tr>
{{else}}<tr><td colspan="10">no collector enabled</td></tr>
{{end}}</table>
<p>The same state as the <code>nic_exporter_collector_*</code> self-metrics; the log has each distinct poll error once.</p>
`))

// rows turns statuses into table rows.
func (p *statusPage) rows() []statusRow {
	now := p.now()
	var out []statusRow
	for _, s := range p.statuses() {
		r := statusRow{Name: s.Name, Devices: s.Devices, Series: s.Series, Polls: s.Polls, Failures: s.Failures, LastSuccess: "never", LastDuration: "-"}
		state := s.State()
		r.StateClass = string(state)
		switch state {
		case collector.StateWaiting:
			r.State = "waiting for the first poll"
		case collector.StateStuck:
			r.State = fmt.Sprintf("stuck (%d polls past their timeout)", s.Stuck)
		case collector.StateDown:
			r.State = "down (last poll failed)"
		case collector.StateAbsent:
			r.State = "source absent on this host"
		default:
			r.State = "up"
		}
		if !s.LastSuccess.IsZero() {
			r.LastSuccess = fmt.Sprintf("%s (%s ago)", s.LastSuccess.UTC().Format(time.RFC3339), now.Sub(s.LastSuccess).Round(time.Second))
		}
		if state != collector.StateWaiting {
			r.LastDuration = s.LastDuration.Round(time.Microsecond).String()
		}
		var errs []string
		for _, e := range s.SourceErrors {
			errs = append(errs, fmt.Sprintf("%s: %d", e.Reason, e.Count))
		}
		r.Errors = strings.Join(errs, ", ")
		r.LastError = truncate(s.LastError, maxErrorText)
		out = append(out, r)
	}
	return out
}

// ServeHTTP answers / with the page; any other path is not found.
func (p *statusPage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		http.NotFound(w, r)
		return
	}
	var table bytes.Buffer
	if err := statusTable.Execute(&table, p.rows()); err != nil {
		http.Error(w, "rendering the collector table: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(p.head)
	_, _ = w.Write(table.Bytes())
	_, _ = w.Write(p.tail)
}

// runnerStatuses returns the status of each runner.
func runnerStatuses(runners []*collector.Runner) func() []collector.Status {
	return func() []collector.Status {
		out := make([]collector.Status, len(runners))
		for i, r := range runners {
			out[i] = r.Status()
		}
		return out
	}
}

// maxErrorText bounds the error text a row shows: poll errors name files
// and devices, and a page must stay readable with many collectors down.
const maxErrorText = 200

// truncate returns s cut to at most n bytes at a rune boundary, with an
// ellipsis when it was cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
