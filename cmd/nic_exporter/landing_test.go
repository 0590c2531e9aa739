package main

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

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
