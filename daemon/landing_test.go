package daemon

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
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
