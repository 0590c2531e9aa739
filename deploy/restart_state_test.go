package deploy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestExporterRestartKeepsLogAlerts restarts a demo exporter under a real
// Prometheus (exporterRestartKeepsLogAlerts) with the kernel log replayed
// at start, the default, and with the state file the deploy files set
// (--collector.kmsg.state-file): in both no counter resets and no log
// alert fires again.
func TestExporterRestartKeepsLogAlerts(t *testing.T) {
	t.Parallel() // see TestMain
	t.Run("replay", func(t *testing.T) { exporterRestartKeepsLogAlerts(t) })
	t.Run("state-file", func(t *testing.T) {
		state := filepath.Join(t.TempDir(), "kmsg.state")
		exporterRestartKeepsLogAlerts(t, kmsgStateFlag+state)
		// The restarted exporter saved the same boot's state again.
		b, err := os.ReadFile(state)
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			BootID  string `json:"boot_id"`
			LastSeq uint64 `json:"last_seq"`
		}
		if err := json.Unmarshal(b, &s); err != nil || s.BootID == "" || s.LastSeq == 0 {
			t.Errorf("state file %s after the restart: %v\n%s", state, err, b)
		}
	})
}
