package diagnose

import (
	"bytes"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector/exposition"
)

// TestOneBadEthtoolDump checks that an ethtool -S file that does not
// parse is the only one marked unparsable: the good dumps of the other
// interfaces keep their findings and series.
func TestOneBadEthtoolDump(t *testing.T) {
	good := "driver: ena\nbus-info: 0000:00:05.0\nNIC statistics:\n     tx_timeout: 0\n     wd_expired: 2\n"
	bad := "driver: ena\nNIC statistics:\n     tx_timeout: minus one\n"
	b := bundleOf(t, map[string]string{
		"sos_commands/networking/ethtool_-S_eth0": good,
		"sos_commands/networking/ethtool_-S_eth1": bad,
		"sos_commands/networking/ethtool_-S_eth2": good,
	})
	r := analyzer(t).Analyze(b)
	for _, f := range r.Files {
		if f.Kind != KindEthtoolDump {
			t.Errorf("%s recognised as %q", f.Name, f.Kind)
		}
		bad := strings.HasSuffix(f.Name, "eth1")
		if got := strings.HasPrefix(f.Note, "unparsable: "); got != bad {
			t.Errorf("%s: note %q", f.Name, f.Note)
		}
		if bad && !strings.Contains(f.Note, `value "minus one"`) {
			t.Errorf("%s: note %q does not name the bad value", f.Name, f.Note)
		}
	}
	var devs []string
	for _, f := range r.Findings {
		devs = append(devs, f.Device+" "+f.Alert)
	}
	if got, want := strings.Join(devs, ","), "eth0 NICENAWatchdogExpired,eth2 NICENAWatchdogExpired"; got != want {
		t.Errorf("findings %s, want %s", got, want)
	}
	var out bytes.Buffer
	if err := writeExposition(&out, []*Report{r}, rules(t), fixedNow, zap.NewNop(), exposition.Text); err != nil {
		t.Fatal(err)
	}
	for _, dev := range []string{`device="eth0"`, `device="eth2"`} {
		if !strings.Contains(out.String(), dev) {
			t.Errorf("no series of %s:\n%s", dev, out.String())
		}
	}
	if strings.Contains(out.String(), `device="eth1"`) {
		t.Errorf("series of the unparsable eth1:\n%s", out.String())
	}
}

// TestPrefixedKernelLogs checks that kernel logs gathered with a
// parallel shell (pdsh and clush put "host: " before each line) and
// syslog lines without their date are recognised as kernel logs and give
// the findings of the same lines without the prefix. The mlx5 lines are
// those of testdata/bundles/mlx5_fault/dmesg_mlx5.txt.
func TestPrefixedKernelLogs(t *testing.T) {
	const line = "mlx5_core 0000:01:00.0: poll_health:795:(pid 0): Fatal error 1 detected"
	for _, tc := range []struct{ name, text string }{
		{"plain dmesg", "[  448.455025] " + line + "\n"},
		{"pdsh", "node01: [  448.455025] " + line + "\nnode02: [  448.455025] e1000e 0000:00:19.0 eno1: NIC Link is Up\n"},
		{"syslog without a date", "node01 kernel: " + line + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := analyzer(t).Analyze(bundleOf(t, map[string]string{"logs/kernel.txt": tc.text}))
			if len(r.Files) != 1 || r.Files[0].Kind != KindKernelLog {
				t.Fatalf("files %+v, want one kernel log", r.Files)
			}
			var got []string
			for _, f := range r.Findings {
				got = append(got, f.Device+" "+f.Alert)
			}
			if want := "0000:01:00.0 NICKernelLogFirmwareError"; len(got) == 0 || got[0] != want {
				t.Errorf("findings %v, want first %s", got, want)
			}
		})
	}
}

// TestAnyReporterInError checks that a devlink reporter with no alert of
// its own (the ice driver's port reporter, as `devlink health show`
// prints it) is a NICDevlinkReporterStuck finding when it is in error,
// and nothing when healthy.
func TestAnyReporterInError(t *testing.T) {
	const text = "pci/0000:3b:00.0:\n  reporter port\n    state error error 3 recover 2 auto_dump true\n  reporter mdd\n    state healthy error 0 recover 0 auto_dump true\n"
	r := analyzer(t).Analyze(bundleOf(t, map[string]string{"devlink_health.txt": text}))
	var got []string
	for _, f := range r.Findings {
		got = append(got, f.Device+" "+f.Alert)
	}
	if want := "pci/0000:3b:00.0 reporter port NICDevlinkReporterStuck"; strings.Join(got, ",") != want {
		t.Errorf("findings %v, want %s", got, want)
	}
}

// TestUptimeSinceBoot checks where the uptime comes from and that it
// scales counters since boot: three tx reporter errors are more than
// NICDevlinkTxRxErrors' two in 15 minutes on average only when the host
// booted less than 22.5 minutes before the bundle.
func TestUptimeSinceBoot(t *testing.T) {
	health := "pci/0000:08:00.0:\n  reporter tx\n    state healthy error 3 recover 3 auto_dump true\n"
	tests := []struct {
		name    string
		files   map[string]string
		seconds float64
		source  string
		fires   bool
	}{
		{"proc uptime, ten minutes", map[string]string{"proc/uptime": "600.25 1100.50\n"}, 600.25, "proc/uptime:1", true},
		{"proc uptime, ten days", map[string]string{"proc/uptime": "864000.00 1100.50\n"}, 864000, "proc/uptime:1", false},
		{"no uptime: the default", nil, DefaultUptime.Seconds(), "default", false},
		{"a kernel log before the default: the default", map[string]string{"dmesg.txt": "[  600.000001] mlx5_core 0000:08:00.0: starting\n"},
			DefaultUptime.Seconds(), "default", false},
		{"a kernel log past the default", map[string]string{"dmesg.txt": "[ 200000.500000] mlx5_core 0000:08:00.0: starting\n[ 300000.250000] mlx5_core 0000:08:00.0: still\n"},
			300000.25, "dmesg.txt:2 (latest kernel log timestamp)", false},
		{"proc uptime wins over the kernel log", map[string]string{"dmesg.txt": "[ 300000.250000] mlx5_core 0000:08:00.0: x\n", "proc/uptime": "600.00 1.00\n"},
			600, "proc/uptime:1", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{"devlink_health.txt": health}
			for k, v := range tt.files {
				files[k] = v
			}
			r := analyzer(t).Analyze(bundleOf(t, files))
			if r.Uptime.Seconds != tt.seconds || r.Uptime.Source != tt.source {
				t.Errorf("uptime %+v, want %v s from %q", r.Uptime, tt.seconds, tt.source)
			}
			fired := false
			for _, f := range r.Findings {
				fired = fired || f.Alert == "NICDevlinkTxRxErrors"
			}
			if fired != tt.fires {
				t.Errorf("NICDevlinkTxRxErrors fired %v, want %v (findings %+v)", fired, tt.fires, r.Findings)
			}
		})
	}
}

// TestENAStatsFromKernelLog checks the statistics the ENA driver dumps
// to the kernel log after a reset (in the layout of the ena_fault
// bundle's journalctl_-k line 8, whose header names its source): an
// interface without
// an ethtool -S dump gets them as its counters, and a dump with a lower
// value is raised, each with the log line as evidence.
func TestENAStatsFromKernelLog(t *testing.T) {
	log := "[ 9000.1] ena 0000:00:05.0 eth1: wd_expired: 2\n[ 9000.2] ena 0000:00:05.0 eth1: tx_timeout: 0\n" +
		"[ 9001.1] ena 0000:00:06.0 eth0: admin_q_pause: 3\n"
	stats := "driver: ena\nbus-info: 0000:00:06.0\nNIC statistics:\n     admin_q_pause: 1\n     wd_expired: 0\n"
	r := analyzer(t).Analyze(bundleOf(t, map[string]string{"journalctl_-k": log, "ethtool_-S_eth0": stats}))
	got := map[string]string{}
	for _, f := range r.Findings {
		got[f.Alert+" "+f.Device] = f.Evidence
	}
	want := map[string]string{
		"NICENAWatchdogExpired eth1":  `journalctl_-k:1: nic_ethtool_wd_expired_total{device="eth1"} = 2`,
		"NICENAAdminQueuePaused eth0": `journalctl_-k:3: nic_ethtool_admin_q_pause_total{device="eth0"} = 3`,
	}
	for k, ev := range want {
		if got[k] != ev {
			t.Errorf("%s: evidence %q, want %q (findings %v)", k, got[k], ev, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("findings %v, want only %v", got, want)
	}
}
