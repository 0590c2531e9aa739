package diagnose

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/nic-exporter/nic_exporter/collector/exposition"
)

// TestBundleFamiliesDocumented checks that every family diagnose exports
// itself has the name, type and labels docs/metrics.md gives the
// daemon's (whose docs test ties that table to the collectors'
// descriptors), so the alert rules select diagnose's series as they
// select the daemon's.
func TestBundleFamiliesDocumented(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	for _, l := range strings.Split(string(data), "\n") {
		cells := strings.Split(l, "|")
		if len(cells) < 6 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`nic_") {
			continue
		}
		name := strings.Trim(strings.TrimSpace(cells[1]), "`")
		if _, seen := rows[name]; !seen {
			rows[name] = cells
		}
	}
	for _, d := range []*exposition.Desc{descReporterHealthy, descReporterErrors, descReporterRecoveries, descReporterAutoRecover,
		descAdminUp, descCarrier, descCarrierChanges, descPCIeDegraded, descPCIeAER, descIBState, descIBPhysState, descIBInfo} {
		cells, ok := rows[d.Name()]
		if !ok {
			t.Errorf("%s: not in docs/metrics.md", d.Name())
			continue
		}
		typ := "gauge"
		if d.Type() == exposition.Counter {
			typ = "counter"
		}
		if got := strings.TrimSpace(cells[3]); got != typ {
			t.Errorf("%s: type %s, docs/metrics.md says %s", d.Name(), typ, got)
		}
		labels := d.Labels()
		sort.Strings(labels)
		var want []string
		for _, l := range labels {
			want = append(want, "`"+l+"`")
		}
		if got := strings.TrimSpace(cells[4]); got != strings.Join(want, ", ") {
			t.Errorf("%s: labels %s, docs/metrics.md says %s", d.Name(), strings.Join(want, ", "), got)
		}
	}
}
