package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// TestKmsgStateFileRestart runs the demo exporter with
// --collector.kmsg.state-file, restarts it on the same demo boot and
// checks that the second process restored the state file the first one
// wrote and exports the same kernel log totals.
func TestKmsgStateFileRestart(t *testing.T) {
	state := filepath.Join(t.TempDir(), "kmsg.state")
	args := []string{"--demo", "--demo.start=" + time.Now().Add(-10*time.Minute).UTC().Format(time.RFC3339),
		"--demo.faults=fw_fatal@1m,wd_expired@2m", "--collector.kmsg.state-file=" + state}

	first := start(t, args...)
	var saved struct {
		Format  string `json:"format"`
		BootID  string `json:"boot_id"`
		LastSeq uint64 `json:"last_seq"`
	}
	deadline := time.Now().Add(testenv.HangGuard)
	for {
		b, err := os.ReadFile(state)
		if err == nil && json.Unmarshal(b, &saved) == nil && saved.LastSeq > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no state file after 20 s: %v\n%s", err, first.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if saved.Format != "nic_exporter/kmsg-state" || !strings.HasPrefix(saved.BootID, "demo-") {
		t.Errorf("state file format %q, boot id %q", saved.Format, saved.BootID)
	}
	before := kmsgEventLines(t, first)
	if !strings.Contains(before, `event="mlx5_fw_fatal"`) && !strings.Contains(before, "mlx5_core") {
		t.Fatalf("the faults logged nothing:\n%s", before)
	}
	if err := first.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-first.done
	first.done <- nil // for the cleanup

	second := start(t, args...)
	if after := kmsgEventLines(t, second); after != before {
		t.Errorf("kernel log totals after the restart:\n%s\nwant:\n%s", after, before)
	}
	if log := second.stderr.String(); !strings.Contains(log, "restored the kernel log counters") {
		t.Errorf("the state file was not restored:\n%s", log)
	}
}

// kmsgEventLines returns the nic_kernel_log_events_total lines of a scrape.
func kmsgEventLines(t *testing.T, e *exporter) string {
	t.Helper()
	body, _ := e.get(t, "/metrics", nil)
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "nic_kernel_log_events_total{") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
