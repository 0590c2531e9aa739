package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nic-exporter/nic_exporter/daemon"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
	"github.com/nic-exporter/nic_exporter/nodehealth"
)

// tryVerdict reads /health of e; an exporter that does not listen yet
// is an error, an answer that is not a verdict fails the test.
func (e *exporter) tryVerdict(t *testing.T) (*nodehealth.Verdict, int, error) {
	t.Helper()
	resp, err := http.Get("http://" + e.addr + "/health")
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, 0, err
	}
	var v nodehealth.Verdict
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("/health: %v\n%s", err, b)
	}
	return &v, resp.StatusCode, nil
}

// verdict reads /health of e.
func (e *exporter) verdict(t *testing.T) (*nodehealth.Verdict, int) {
	t.Helper()
	v, code, err := e.tryVerdict(t)
	if err != nil {
		t.Fatal(err)
	}
	return v, code
}

// waitVerdict polls /health until cond holds, within the hang guard.
func (e *exporter) waitVerdict(t *testing.T, what string, cond func(*nodehealth.Verdict) bool) *nodehealth.Verdict {
	t.Helper()
	deadline := time.Now().Add(testenv.HangGuard)
	for {
		v, _, err := e.tryVerdict(t)
		if err == nil && cond(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within the hang guard; last verdict %+v (%v)\n%s", what, v, err, e.stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func fwFatal(v *nodehealth.Verdict) *nodehealth.Condition {
	for i := range v.Conditions {
		if v.Conditions[i].Type == "NICFirmwareFatal" {
			return &v.Conditions[i]
		}
	}
	return nil
}

// TestHealthDemoFault runs the demo's fw_fatal fault on a real exporter:
// the verdict sets NICFirmwareFatal naming both PCI functions while the
// fault lasts, keeps it after the fault ends until the node has held
// healthy for --health.clear-after, then clears it. The times checked are
// the exporter's own (the condition's transition against the end of its
// last evidence), never the test's wall clock.
//
// The fault lasts 14 s of demo time. The verdict is computed only once
// every collector has polled (/readyz), so a short fault can end before
// it: with a 3 s fault, a run beside a CI run (load average 25) never saw
// the condition set within the hang guard.
func TestHealthDemoFault(t *testing.T) {
	const hold = 3 * time.Second
	e := start(t, "--demo", "--demo.faults=fw_fatal@1s-15s", "--collector.devlink.interval=500ms", "--health.interval=200ms", "--health.clear-after="+hold.String())
	set := e.waitVerdict(t, "NICFirmwareFatal set", func(v *nodehealth.Verdict) bool { return fwFatal(v).Status == nodehealth.StatusTrue })
	c := fwFatal(set)
	if set.Status != nodehealth.VerdictUnhealthy || c.Reason != "FirmwareFatalError" ||
		strings.Join(c.Devices, " ") != "pci/0000:08:00.0 pci/0000:08:00.1" || !strings.Contains(c.Message, `reporter="fw_fatal"} = 0`) {
		t.Fatalf("set: %+v", set)
	}
	if _, code := e.verdict(t); code != http.StatusOK {
		t.Errorf("/health of an unhealthy node: HTTP %d, want 200 (the verdict is in the body)", code)
	}
	scrape, _ := e.get(t, "/metrics", nil)
	if !strings.Contains(scrape, "\nnic_exporter_node_condition{condition=\"NICFirmwareFatal\",reason=\"FirmwareFatalError\"} 1\n") {
		t.Errorf("/metrics lacks the set condition:\n%s", scrape)
	}
	recovering := e.waitVerdict(t, "recovering", func(v *nodehealth.Verdict) bool { return fwFatal(v).ClearsAt != nil })
	clearsAt := *fwFatal(recovering).ClearsAt
	if fwFatal(recovering).Status != nodehealth.StatusTrue {
		t.Fatalf("cleared as soon as the evidence went: %+v", recovering)
	}
	cleared := e.waitVerdict(t, "cleared", func(v *nodehealth.Verdict) bool { return fwFatal(v).Status == nodehealth.StatusFalse })
	if got := fwFatal(cleared).LastTransitionTime; got.Before(clearsAt) {
		t.Errorf("cleared at %s, before the hold time ended at %s", got, clearsAt)
	}
	if cleared.Status != nodehealth.VerdictOK {
		t.Errorf("verdict after recovery: %+v", cleared)
	}
	if _, code := e.verdict(t); code != http.StatusOK {
		t.Errorf("/health of a healthy node: HTTP %d", code)
	}
}

// TestHealthFlagsRefused checks the verdict's flags are validated.
func TestHealthFlagsRefused(t *testing.T) {
	for _, args := range [][]string{{"--health.interval=1ms"}, {"--health.clear-after=-1s"}} {
		if _, err := daemon.ParseFlags(append([]string{"--demo"}, args...), io.Discard); err == nil {
			t.Errorf("%v: accepted", args)
		}
	}
}
