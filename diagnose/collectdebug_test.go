package diagnose

import (
	"testing"
)

// TestCollectDebugScriptFiles reads the files the ConnectX-7
// troubleshooting guide's collect_debug.sh writes that this package's
// readers of third-party layouts cover, under the script's names, on a
// host without MFT and infiniband-diags: each is read (no file is
// unparsable or ignored), the counters without their names included.
func TestCollectDebugScriptFiles(t *testing.T) {
	r := analyzer(t).Analyze(bundleOf(t, map[string]string{
		"ib_counters.txt":    catValues(t, 21, "en_US.UTF-8", map[string]uint64{}),
		"firmware.txt":       "./collect_debug.sh: line 18: mlxfwmanager: command not found\n",
		"ibstat.txt":         "./collect_debug.sh: line 21: ibstat: command not found\n",
		"devlink_health.txt": devlinkHealth("fw", "healthy", 0),
	}))
	want := map[string]string{
		"ib_counters.txt":    KindRDMACounterValues,
		"firmware.txt":       KindToolFailure,
		"ibstat.txt":         KindToolFailure,
		"devlink_health.txt": KindDevlinkHealth,
	}
	for _, f := range r.Files {
		if f.Kind != want[f.Name] {
			t.Errorf("%s: kind %q, want %q (note %q)", f.Name, f.Kind, want[f.Name], f.Note)
		}
	}
	if len(r.Files) != len(want) || len(r.rdmaFiles) != 21 || len(r.Findings) != 0 {
		t.Errorf("%d files, %d counters, findings %+v", len(r.Files), len(r.rdmaFiles), r.Findings)
	}
}
