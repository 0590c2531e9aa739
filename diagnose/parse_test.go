package diagnose

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nic-exporter/nic_exporter/collector/devlinkhealth"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
)

func readFixture(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "bundles", p))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func u64(v uint64) *uint64 { return &v }
func boolp(v bool) *bool   { return &v }

func TestParseDevlinkHealth(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Reporter
	}{
		{"2019 name key", "pci/0000:04:00.0:\n   name tx\n     state healthy error 0 recover 0 grace_period 500 auto_recover true\n",
			[]Reporter{{Device: "pci/0000:04:00.0", Name: "tx", State: "healthy", GracePeriodMs: u64(500), AutoRecover: boolp(true), Line: 2}}},
		{"fw_fatal in error", "pci/0000:08:00.0:\n  reporter fw_fatal\n    state error error 1 recover 0 grace_period 60000 auto_recover false auto_dump true\n",
			[]Reporter{{Device: "pci/0000:08:00.0", Name: "fw_fatal", State: "error", Errors: 1, GracePeriodMs: u64(60000), AutoRecover: boolp(false), Line: 2}}},
		{"json", `{"health":{"pci/0000:08:00.0":[{"reporter":"fw","state":"healthy","error":0,"recover":0,"auto_dump":true},{"reporter":"fw_fatal","state":"error","error":2,"recover":1,"grace_period":60000,"auto_recover":true}]}}`,
			[]Reporter{{Device: "pci/0000:08:00.0", Name: "fw", State: "healthy"},
				{Device: "pci/0000:08:00.0", Name: "fw_fatal", State: "error", Errors: 2, Recover: 1, GracePeriodMs: u64(60000), AutoRecover: boolp(true)}}},
	}
	for _, tt := range tests {
		got, err := ParseDevlinkHealth(tt.in)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, d)
		}
	}
	// Real outputs of several kernel generations parse, every reporter
	// with a state.
	for _, f := range []string{"mlx5_fault/devlink_health.txt", "mlx5_healthy/devlink_health.txt"} {
		reps, err := ParseDevlinkHealth(readFixture(t, f))
		if err != nil || len(reps) == 0 {
			t.Fatalf("%s: %v", f, err)
		}
		for _, r := range reps {
			if r.State != "healthy" {
				t.Errorf("%s: %+v", f, r)
			}
		}
	}
}

func TestParseIbstat(t *testing.T) {
	got, err := ParseIbstat(readFixture(t, "mlx5_fault/ibstat.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := []IBPort{{CA: "mlx5_10", CAType: "MT4129", Firmware: "28.39.1002", Port: 1, State: "Down", PhysicalState: "Polling", Rate: "10", LinkLayer: "InfiniBand", Line: 10}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	got, err = ParseIbstat(readFixture(t, "mlx5_healthy/ibstat.txt"))
	if err != nil || len(got) != 2 || got[1].CA != "mlx5_1" || got[1].PhysicalState != "LinkUp" || got[1].Rate != "200" {
		t.Errorf("healthy: %+v %v", got, err)
	}
}

func TestParseLspci(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		degraded bool
		devSta   []string
	}{
		{"quoted excerpt", readFixture(t, "mlx5_fault/lspci.txt"), true, nil},
		{"no LnkSta", readFixture(t, "mlx5_healthy/lspci.txt"), false, nil},
		// cloudnetops.tech "How to Diagnose and Fix PCIe Link Speed
		// Downgrade in Linux": the marked form of newer lspci.
		{"marked", "c9:00.0 Ethernet controller: Mellanox\n\tLnkCap: Port #0, Speed 16GT/s, Width x4, ASPM L0s L1, Exit Latency L0 <512ns, L1 <16us\n\tLnkSta: Speed 8GT/s (downgraded), Width x2 (downgraded)\n", true, nil},
		{"equal", "b3:00.0 Ethernet controller: Mellanox\n\tDevSta:\tCorrErr+ NonFatalErr- FatalErr+ UnsupReq- AuxPwr- TransPend-\n\tLnkCap:\tPort #0, Speed 16GT/s, Width x16\n\tLnkSta:\tSpeed 16GT/s (ok), Width x16 (ok)\n", false, []string{"CorrErr", "FatalErr"}},
	}
	for _, tt := range tests {
		fns, err := ParseLspci(tt.in)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := fns[0].LinkDegraded(); got != tt.degraded {
			t.Errorf("%s: degraded %v, want %v (%+v)", tt.name, got, tt.degraded, fns[0])
		}
		if d := cmp.Diff(tt.devSta, fns[0].DevStaErrors); d != "" {
			t.Errorf("%s: DevSta (-want +got):\n%s", tt.name, d)
		}
	}
}

func TestParseMlxfwmanager(t *testing.T) {
	got, err := ParseMlxfwmanager(readFixture(t, "mlx5_fault/firmware.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := []FirmwareDevice{{DeviceType: "ConnectX5", PartNumber: "MNV303212A-ADL_Ax", PSID: "MT_0000000158", PCIName: "pci0:6:0:0",
		Versions: map[string][2]string{"FW": {"16.24.4020", "N/A"}}, Status: "No matching image found"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// TestDevStaFindings checks that only the uncorrectable DevSta bits are
// findings.
func TestDevStaFindings(t *testing.T) {
	for _, tt := range []struct {
		devSta string
		want   int
	}{
		{"CorrErr+ NonFatalErr- FatalErr- UnsupReq+ AuxPwr- TransPend-", 0},
		{"CorrErr- UncorrErr+ FatalErr- UnsuppReq- AuxPwr- TransPend-", 1},
	} {
		r := analyzer(t).Analyze(&Bundle{Files: []File{{Name: "lspci.txt",
			Data: []byte("b3:00.0 Ethernet controller: Mellanox\n\t\tDevSta:\t" + tt.devSta + "\n\t\tLnkCap:\tPort #0, Speed 16GT/s, Width x16\n")}}})
		if len(r.Findings) != tt.want {
			t.Errorf("%s: %+v", tt.devSta, r.Findings)
		}
	}
}

func TestParseLinkSettings(t *testing.T) {
	// SoftRoCE/rxe-dev#52 (sbates130272, 2016): `ethtool eth0` of an
	// emulated e1000 in QEMU, the link lines.
	in := "Settings for eth0:\n        Speed: 1000Mb/s\n        Duplex: Full\n        Port: Twisted Pair\n        Link detected: yes\n"
	got, err := ParseLinkSettings(in)
	if err != nil {
		t.Fatal(err)
	}
	want := &LinkSettings{Interface: "eth0", SpeedMbps: 1000, Duplex: "Full", HasSettings: true, HasDetected: true, Detected: true, DetectedLine: 5}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	// The link-down form (hand-written: Speed and Duplex "Unknown!").
	got, err = ParseLinkSettings(readFixture(t, "ena_healthy/sos_commands/networking/ethtool_ens3"))
	if err != nil || got.HasSettings || !got.Detected || got.Interface != "ens3" {
		t.Errorf("ENA without link configuration: %+v %v", got, err)
	}
	got, err = ParseLinkSettings("Settings for ens5:\n\tSpeed: Unknown!\n\tDuplex: Unknown! (255)\n\tLink detected: no\n")
	if err != nil || got.Detected || got.SpeedMbps != 0 {
		t.Errorf("link down: %+v %v", got, err)
	}
}

// TestLinkDownReason reads the extended link state ethtool 5.8 and later
// print after "Link detected: no" and the link down count of ethtool 6.x,
// and names them as the phy collector names the netlink values.
func TestLinkDownReason(t *testing.T) {
	tests := []struct {
		name, line          string
		reason, substate    string
		detected, hasReason bool
	}{
		// The two examples of the ethtool patch set that added the
		// output: netdev, Amit Cohen, "[PATCH ethtool v2 0/3] Add extended
		// link state", 2 Jul 2020, Message-Id
		// <20200702131111.23105-1-amitc@mellanox.com>.
		{"no cable", "Link detected: no (No cable)", "no_cable", "", false, true},
		{"autoneg", "Link detected: no (Autoneg, No partner detected)", "autoneg", "no_partner_detected", false, true},
		// The strings of ethtool's netlink/settings.c that are not the
		// enum names with spaces.
		{"logical mismatch", "Link detected: no (Logical mismatch, RS FEC is not locked)", "link_logical_mismatch", "rs_fec_is_not_locked", false, true},
		{"cmis", "Link detected: no (Module, CMIS module is not in ModuleReady state)", "module", "cmis_not_ready", false, true},
		{"bsi", "Link detected: no (Bad signal integrity, Serdes ALOS)", "bad_signal_integrity", "serdes_alos", false, true},
		// Values ethtool has no string for are printed as numbers.
		{"numbers", "Link detected: no (14, 3)", "unknown", "unknown", false, true},
		{"newer ethtool", "Link detected: no (Overheat, Fan stopped)", "overheat", "fan_stopped", false, true},
		{"plain down", "Link detected: no", "", "", false, false},
		{"up", "Link detected: yes", "", "", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ls, err := ParseLinkSettings("Settings for eth0:\n\t" + tt.line + "\n\tLink Down Events: 7\n")
			if err != nil {
				t.Fatal(err)
			}
			if ls.Detected != tt.detected || ls.DownReason != tt.reason || ls.DownSubstate != tt.substate {
				t.Errorf("got detected %v reason %q substate %q", ls.Detected, ls.DownReason, ls.DownSubstate)
			}
			if ls.DownEvents == nil || *ls.DownEvents != 7 || ls.DownEventsLine != 3 {
				t.Errorf("link down events: %v line %d", ls.DownEvents, ls.DownEventsLine)
			}
			// The daemon's phy collector over the link state gives the
			// series.
			var in phyInputs
			in.addLink("ethtool.txt", ls)
			snap, err := phySnapshot(&in, fixedNow, nil)
			if err != nil {
				t.Fatal(err)
			}
			text := string(snap.AppendFamilies(nil, exposition.Text, func(string) bool { return true }))
			want := "nic_phy_link_down_events_total{device=\"eth0\"} 7"
			if !strings.Contains(text, want) {
				t.Errorf("no %s in\n%s", want, text)
			}
			if reason := `nic_phy_link_down_reason{device="eth0",reason="` + tt.reason + `",substate="` + tt.substate + `"} 1`; strings.Contains(text, reason) != tt.hasReason {
				t.Errorf("%s: %v, want %v, in\n%s", reason, !tt.hasReason, tt.hasReason, text)
			}
		})
	}
}

func FuzzParseDevlinkHealth(f *testing.F) {
	f.Add(readFixture(f, "mlx5_fault/devlink_health.txt"))
	f.Add(`{"health":{"pci/0000:08:00.0":[{"reporter":"fw","state":"healthy"}]}}`)
	f.Fuzz(func(t *testing.T, s string) { _, _ = ParseDevlinkHealth(s) })
}

func FuzzParseIbstat(f *testing.F) {
	f.Add(readFixture(f, "mlx5_fault/ibstat.txt"))
	f.Fuzz(func(t *testing.T, s string) { _, _ = ParseIbstat(s) })
}

func FuzzParseLspci(f *testing.F) {
	f.Add(readFixture(f, "mlx5_healthy/lspci.txt"))
	f.Add(readFixture(f, "mlx5_fault/lspci.txt"))
	f.Add("b3:00.0 Ethernet controller: Mellanox\n\tLnkCap:\tPort #0, Speed 16GT/s, Width x999999999999999999999\n\tLnkSta:\tSpeed 16GT/s, Width x16\n")
	f.Add("b3:00.0 Ethernet controller: Mellanox\n\tLnkCap:\tPort #0, Speed InfGT/s, Width x16\n\tLnkSta:\tSpeed NaNGT/s, Width x16\n")
	f.Add("\tLnkCap:\tSpeed -8GT/s, Width x-4\n\tLnkSta:\tSpeed 1e400GT/s (downgraded), Width x0 (downgraded)\n")
	f.Fuzz(func(t *testing.T, s string) {
		fns, err := ParseLspci(s)
		if err != nil {
			return
		}
		for i, fn := range fns {
			_ = fns[i].LinkDegraded()
			for _, v := range []float64{fn.CapSpeedGTs, fn.StaSpeedGTs} {
				if math.IsNaN(v) || v < 0 || v > maxPCIeSpeedGTs {
					t.Fatalf("speed %v accepted: %+v", v, fn)
				}
			}
			for _, w := range []int{fn.CapWidth, fn.StaWidth} {
				if w < 0 || w > maxPCIeWidth {
					t.Fatalf("width %d accepted: %+v", w, fn)
				}
			}
		}
	})
}

func FuzzParseMlxfwmanager(f *testing.F) {
	f.Add(readFixture(f, "mlx5_fault/firmware.txt"))
	f.Fuzz(func(t *testing.T, s string) { _, _ = ParseMlxfwmanager(s) })
}

func FuzzParseLinkSettings(f *testing.F) {
	f.Add("Settings for eth0:\n\tSpeed: 1000Mb/s\n\tDuplex: Full\n\tLink detected: yes\n")
	f.Add("Settings for eth0:\n\tSpeed: 100000Mb/s\n\tLink detected: no (Autoneg, No partner detected)\n\tLink Down Events: 3\n")
	f.Add("Settings for ens5:\n\tSpeed: Unknown!\n\tDuplex: Unknown! (255)\n\tLink detected: no (14)\n")
	f.Fuzz(func(t *testing.T, s string) { _, _ = ParseLinkSettings(s) })
}

// FuzzAnalyze feeds one arbitrary file through recognition and every
// parser, as a hostile bundle would.
func FuzzAnalyze(f *testing.F) {
	f.Add([]byte(readFixture(f, "mlx5_fault/dmesg_mlx5.txt")))
	f.Add([]byte(readFixture(f, "ena_fault/sos_commands/networking/ethtool_-S_eth0")))
	f.Add([]byte("# HELP nic_vma_files x\n# TYPE nic_vma_files gauge\nnic_vma_files{state=\"refused\"} 1\n# EOF\n"))
	f.Add([]byte("FEC parameters for eth0:\nActive FEC encoding: RS\nStatistics:\n  uncorrectable_blocks: 3 [ per_lane: 1, 2 ]\n"))
	e := rules(f)
	alerts := alertRules(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		NewAnalyzer(e, alerts, nil).Analyze(&Bundle{Source: "fuzz", Files: []File{{Name: "f", Data: data}}})
	})
}

// TestDevlinkEvidenceFromCapture writes an evidence file the way the
// daemon's capture encodes devlinkhealth.Evidence and checks that
// diagnose reads a capture directory as a bundle.
func TestDevlinkEvidenceFromCapture(t *testing.T) {
	var ev devlinkhealth.Evidence
	ev.Time = fixedNow
	ev.Trigger = "event"
	ev.Device = "pci/0000:08:00.1"
	ev.Reporter = "fw_fatal"
	ev.Attributes.State = "error"
	errs, recov, grace, auto := uint64(1), uint64(0), 60.0, true
	ev.Attributes.ErrorCount, ev.Attributes.RecoverCount = &errs, &recov
	ev.Attributes.GracefulPeriodSeconds, ev.Attributes.AutoRecover = &grace, &auto
	ev.DumpError = "not supported by the driver"
	data, err := json.MarshalIndent(&ev, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	b := bundleOf(t, map[string]string{"20260102T030405.000000000Z-0001_pci_0000_08_00.1_fw_fatal.devlink.json": string(data)})
	r := analyzer(t).Analyze(b)
	if len(r.Files) != 1 || r.Files[0].Kind != KindDevlinkEvidence {
		t.Fatalf("files: %+v", r.Files)
	}
	// The reporter in error is NICDevlinkFwFatalError (its own alert)
	// and NICDevlinkReporterStuck (any reporter in error, for: 15m not
	// observable in a snapshot).
	type got struct{ Alert, Device, Severity, Runbook, Evidence string }
	want := []got{
		{"NICDevlinkFwFatalError", "pci/0000:08:00.1 reporter fw_fatal", SeverityPage,
			"https://github.com/nic-exporter/nic_exporter/blob/main/docs/runbooks.md#nicdevlinkfwfatalerror",
			`20260102T030405.000000000Z-0001_pci_0000_08_00.1_fw_fatal.devlink.json: nic_devlink_health_reporter_errors_total{device="pci/0000:08:00.1",netdev="",port="",reporter="fw_fatal"} = 1; 20260102T030405.000000000Z-0001_pci_0000_08_00.1_fw_fatal.devlink.json: nic_devlink_health_reporter_healthy{device="pci/0000:08:00.1",netdev="",port="",reporter="fw_fatal"} = 0`},
		{"NICDevlinkReporterStuck", "pci/0000:08:00.1 reporter fw_fatal", SeverityWarning,
			"https://github.com/nic-exporter/nic_exporter/blob/main/docs/runbooks.md#nicdevlinkreporterstuck",
			`20260102T030405.000000000Z-0001_pci_0000_08_00.1_fw_fatal.devlink.json: nic_devlink_health_reporter_healthy{device="pci/0000:08:00.1",netdev="",port="",reporter="fw_fatal"} = 0`},
	}
	var have []got
	for _, f := range r.Findings {
		have = append(have, got{f.Alert, f.Device, f.Severity, f.Runbook, f.Evidence})
	}
	if d := cmp.Diff(want, have); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// TestLspciOutOfRange checks that a link speed or width lspci cannot
// print (beyond the int range, infinite, not a number, negative, wider
// than x32) is rejected with a notice instead of being compared: no
// finding comes from its line.
func TestLspciOutOfRange(t *testing.T) {
	const dev = "b3:00.0 Ethernet controller: Mellanox\n"
	tests := []struct {
		name, cap, sta string
		notice         string
	}{
		{"width beyond int64", "Speed 16GT/s, Width x999999999999999999999", "Speed 16GT/s (ok), Width x16 (ok)", `width "x999999999999999999999" out of range`},
		{"width beyond x32", "Speed 16GT/s, Width x64", "Speed 16GT/s (ok), Width x16 (ok)", `width "x64" out of range`},
		{"infinite speed", "Speed InfGT/s, Width x16", "Speed 16GT/s (ok), Width x16 (ok)", `speed "InfGT/s" out of range`},
		{"NaN speed", "Speed 16GT/s, Width x16", "Speed NaNGT/s, Width x16 (ok)", `speed "NaNGT/s" out of range`},
		{"negative speed", "Speed 16GT/s, Width x16", "Speed -8GT/s, Width x16 (ok)", `speed "-8GT/s" out of range`},
		{"huge speed", "Speed 1e300GT/s, Width x16", "Speed 16GT/s (ok), Width x16 (ok)", `speed "1e300GT/s" out of range`},
		{"downgraded with a bad width", "Speed 16GT/s, Width x16", "Speed 16GT/s, Width x99999999999999999999 (downgraded)", "out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := analyzer(t).Analyze(&Bundle{Files: []File{{Name: "lspci.txt",
				Data: []byte(dev + "\tLnkCap:\tPort #0, " + tt.cap + ", ASPM L1\n\tLnkSta:\t" + tt.sta + "\n")}}})
			if len(r.Findings) != 0 {
				t.Errorf("findings from an out-of-range value: %+v", r.Findings)
			}
			if len(r.Files) != 1 || r.Files[0].Kind != KindLspci || !strings.Contains(r.Files[0].Note, tt.notice) {
				t.Errorf("files %+v, want an lspci file with a notice containing %q", r.Files, tt.notice)
			}
		})
	}
	// The other functions of the same file are still compared.
	in := dev + "\tLnkCap:\tPort #0, Speed InfGT/s, Width x16\n\tLnkSta:\tSpeed 8GT/s, Width x16\n" +
		"b4:00.0 Ethernet controller: Mellanox\n\tLnkCap:\tPort #0, Speed 16GT/s, Width x16\n\tLnkSta:\tSpeed 8GT/s, Width x16\n"
	r := analyzer(t).Analyze(&Bundle{Files: []File{{Name: "lspci.txt", Data: []byte(in)}}})
	if len(r.Findings) != 1 || r.Findings[0].Device != "0000:b4:00.0" || !strings.HasPrefix(r.Findings[0].Evidence, "lspci.txt:6: ") {
		t.Errorf("findings %+v, want one for b4:00.0 at lspci.txt:6", r.Findings)
	}
}
