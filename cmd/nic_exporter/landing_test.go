package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/exporter-toolkit/web"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

var href = regexp.MustCompile(`href="([^"]*)"`)

// TestLandingPageLinksWork fetches the landing page of the running demo,
// checks its collector table, and follows every link on it: each must
// answer 200, and no link may point to a profiling endpoint the exporter
// does not serve.
func TestLandingPageLinksWork(t *testing.T) {
	e := start(t, "--demo")
	var page string
	deadline := time.Now().Add(testenv.HangGuard)
	for {
		page, _ = e.get(t, "/", nil)
		if !strings.Contains(page, "waiting for the first poll") || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, c := range []string{"netdev", "ethtool", "infiniband", "devlink", "vma", "kmsg", "applog"} {
		if !regexp.MustCompile(`<tr><td>` + c + `</td><td class="up">up</td><td>\d+</td><td>[1-9]\d*</td><td>20\d\d-`).MatchString(page) {
			t.Errorf("landing page: no row showing collector %s up with its series and last poll:\n%s", c, page)
		}
	}
	if strings.Contains(page, "debug/pprof") {
		t.Errorf("landing page links to pprof, which the exporter does not serve:\n%s", page)
	}
	links := href.FindAllStringSubmatch(page, -1)
	if len(links) < 4 {
		t.Fatalf("landing page has %d links, want at least /metrics, /metrics/detail, /healthz and /readyz:\n%s", len(links), page)
	}
	for _, l := range links {
		target := l[1]
		if !strings.HasPrefix(target, "/") {
			t.Errorf("link %q leaves the exporter", target)
			continue
		}
		resp, err := http.Get("http://" + e.addr + target)
		if err != nil {
			t.Errorf("GET %s: %v", target, err)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s (linked from the landing page): %s", target, resp.Status)
		}
	}
	// Only / is the landing page; anything else under it is not found.
	resp, err := http.Get("http://" + e.addr + "/debug/pprof/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /debug/pprof/: %s, want 404", resp.Status)
	}
}

// TestStatusPageRows checks the state, last poll and error columns the
// landing page shows for each kind of collector state.
func TestStatusPageRows(t *testing.T) {
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	statuses := []collector.Status{
		{Name: "good", Up: true, PollingComplete: true, Polls: 3, Devices: 2, Series: 40, LastSuccess: now.Add(-5 * time.Second), LastDuration: 1500 * time.Microsecond},
		{Name: "failing", PollingComplete: true, Polls: 2, Failures: 1, LastSuccess: now.Add(-time.Minute), SourceErrors: []collector.ReasonCount{{Reason: "permission", Count: 4}, {Reason: "timeout", Count: 1}}, LastError: "reading /sys/class/infiniband: <permission denied>"},
		{Name: "verbose", PollingComplete: true, Polls: 1, Failures: 1, LastError: strings.Repeat("é", 150)},
		{Name: "absent", Up: true, Absent: true, PollingComplete: true, Polls: 1, LastSuccess: now},
		{Name: "fifo", Up: true, PollingComplete: true, Stuck: 2, Polls: 1},
		{Name: "new"},
	}
	p, err := newStatusPage(web.LandingConfig{Name: "test", Profiling: "false"}, func() []collector.Status { return statuses })
	if err != nil {
		t.Fatal(err)
	}
	p.now = func() time.Time { return now }
	for _, tt := range []struct {
		name string
		want string
	}{
		{"good", `<tr><td>good</td><td class="up">up</td><td>2</td><td>40</td><td>2026-11-25T09:59:55Z (5s ago)</td><td>1.5ms</td><td>3</td><td>0</td><td></td><td></td></tr>`},
		{"failing", `<tr><td>failing</td><td class="down">down (last poll failed)</td><td>0</td><td>0</td><td>2026-11-25T09:59:00Z (1m0s ago)</td><td>0s</td><td>2</td><td>1</td><td>permission: 4, timeout: 1</td><td>reading /sys/class/infiniband: &lt;permission denied&gt;</td></tr>`},
		{"verbose", `<td>` + strings.Repeat("é", 100) + `…</td></tr>`},
		{"absent", `<tr><td>absent</td><td class="absent">source absent on this host</td>`},
		{"fifo", `<tr><td>fifo</td><td class="stuck">stuck (2 polls past their timeout)</td><td>0</td><td>0</td><td>never</td>`},
		{"new", `<tr><td>new</td><td class="waiting">waiting for the first poll</td><td>0</td><td>0</td><td>never</td><td>-</td>`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			p.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
			if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), tt.want) {
				t.Errorf("GET /: %d, want 200 and a row\n%s\nin\n%s", rec.Code, tt.want, rec.Body.String())
			}
		})
	}
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/other", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("GET /other: %d, want 404", rec.Code)
	}
}

// TestLogCollecting checks the startup log: one line per collector once
// its first poll is done, what it collects or that it failed, nothing for
// a collector whose runner already logged its source absent; and that it
// returns once every collector has been logged.
func TestLogCollecting(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	var mu sync.Mutex
	statuses := []collector.Status{
		{Name: "netdev", Up: true, PollingComplete: true, Devices: 4, Series: 138},
		{Name: "ethtool", PollingComplete: true},
		{Name: "vma", Up: true, Absent: true, PollingComplete: true},
		{Name: "kmsg"},
	}
	get := func() []collector.Status {
		mu.Lock()
		defer mu.Unlock()
		return append([]collector.Status(nil), statuses...)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		logCollecting(context.Background(), get, zap.New(core))
	}()
	time.Sleep(3 * startupLogTick)
	select {
	case <-done:
		t.Fatal("logCollecting returned before kmsg completed its first poll")
	default:
	}
	mu.Lock()
	statuses[3] = collector.Status{Name: "kmsg", Up: true, PollingComplete: true, Series: 4}
	mu.Unlock()
	select {
	case <-done:
	case <-time.After(testenv.HangGuard):
		t.Fatal("logCollecting did not return after every collector's first poll")
	}
	var got []string
	for _, e := range logs.All() {
		got = append(got, fmt.Sprintf("%s %s %v devices=%v series=%v", e.Level, e.Message, e.ContextMap()["collector"], e.ContextMap()["devices"], e.ContextMap()["series"]))
	}
	want := []string{
		"info collecting netdev devices=4 series=138",
		"warn collector's first poll failed; it keeps polling ethtool devices=<nil> series=<nil>",
		"info collecting kmsg devices=0 series=4",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("log lines\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
