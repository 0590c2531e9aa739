package main

import (
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nic-exporter/nic_exporter/daemon"
	"github.com/nic-exporter/nic_exporter/demo"
)

// soakFor is how long TestDemoSoak scrapes: with the start and the end,
// the test stays within about a minute.
const soakFor = 40 * time.Second

// TestDemoSoak runs the built binary's demo with every fault on the real
// clock, each collector polling every 250 ms, and scrapes it as fast as
// it answers for soakFor: no counter series may ever decrease from one
// scrape to the next. Each fault runs once for 12 s and starts again 20 s
// later until the end, staggered by a second, so starts, ends and repeats
// of every fault fall within the run. (ib_link_down's later phases take
// longer than the run; TestDemoCountersMonotonic walks them on a stepped
// clock.)
func TestDemoSoak(t *testing.T) {
	var faults []string
	for i, f := range demo.Faults() {
		start := time.Second + time.Duration(i)*time.Second
		faults = append(faults, fmt.Sprintf("%s@%s-%s,%s@%s", f, start, start+12*time.Second, f, start+20*time.Second))
	}
	args := []string{"--demo", "--demo.faults=" + strings.Join(faults, ",")}
	for _, name := range daemon.CollectorNames() {
		args = append(args, "--collector."+name+".interval=250ms", "--collector."+name+".timeout=200ms")
	}
	e := startServing(t, args...)
	client := &http.Client{Timeout: 10 * time.Second}
	w := &counterWatch{last: make(map[string]float64)}
	scrapes := 0
	for end := time.Now().Add(soakFor); time.Now().Before(end); {
		resp, err := client.Get("http://" + e.addr + "/metrics")
		if err != nil {
			t.Fatalf("scrape %d: %v", scrapes, err)
		}
		var b strings.Builder
		_, err = fmt.Fprint(&b, readAll(t, resp))
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("scrape %d: %s", scrapes, resp.Status)
		}
		dec, err := w.observe(b.String())
		if err != nil {
			t.Fatalf("scrape %d: %v", scrapes, err)
		}
		for _, d := range dec {
			t.Errorf("scrape %d: %s", scrapes, d)
		}
		scrapes++
		time.Sleep(100 * time.Millisecond)
	}
	if scrapes < 50 || w.seen < 100 {
		t.Errorf("%d scrapes of %d counter series: too few to mean anything", scrapes, w.seen)
	}
	t.Logf("%d scrapes of %d counter series", scrapes, w.seen)
	// SIGTERM, not the cleanup's kill, so the demo host removes its
	// directory.
	if err := e.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, e, 15*time.Second); code != 0 {
		t.Errorf("exit status %d after SIGTERM", code)
	}
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 64<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return b.String()
}
