package diagnose

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRealWorldDevlinkDiagnose reads the `devlink health diagnose`
// transcripts of the real-world corpus: each is recognised by content,
// parses to one diagnosis per command with the device and reporter the
// command names, and says what the table says is wrong.
func TestRealWorldDevlinkDiagnose(t *testing.T) {
	type diag struct{ device, reporter, summary string }
	want := map[string][]diag{
		"mlx5_health_diagnose_fw_2019.txt": {
			{"pci/0000:82:00.0", "fw", "Syndrome: 0"},
			{"pci/0000:82:00.0", "fw", "synd: 0x8: unrecoverable hardware error, ext_synd: 0x003d"}},
		"ice_health_diagnose_port_2024.txt": {
			{"pci/0000:b1:00.3", "port", "Syndrome: 262, Description: Module is not present., Possible Solution: Check that the module is inserted correctly."}},
		"mlx5_health_diagnose_tx_text_json_2019.txt": {
			{"pci/0000:00:0b.0", "tx", "nothing wrong printed"}, {"pci/0000:00:0b.0", "tx", "nothing wrong printed"}},
		"mlx5_health_diagnose_tx_auxiliary_2023.txt": {
			{"auxiliary/mlx5_core.eth.0/65535", "tx", "nothing wrong printed"}},
		"mlx5_health_dump_rx_2020.txt": {
			{"pci/0000:00:0b.0", "rx", "nothing wrong printed"}},
		"mlx5_health_dump_fw_fatal_2019.txt": {
			{"pci/0000:82:00.0", "fw_fatal", "nothing wrong printed"}},
		"mlx5_health_diagnose_vnic_2025.txt": {
			{"pci/0000:08:00.0", "vnic", "nothing wrong printed"}, {"pci/0000:08:00.0", "vnic", "nothing wrong printed"}},
	}
	for name, w := range want {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("..", "testdata", "realworld", "devlink", name))
			if err != nil {
				t.Fatal(err)
			}
			if k := analyzer(t).recognise(File{Name: "x.txt", Data: data}); k != KindDevlinkDiagnose {
				t.Fatalf("recognised as %q", k)
			}
			ds, err := ParseDevlinkDiagnose("x.txt", string(data))
			if err != nil {
				t.Fatal(err)
			}
			var got []diag
			for _, d := range ds {
				got = append(got, diag{d.Device, d.Reporter, summaryText(d.Summary())})
				if want := "diagnose"; strings.Contains(name, "_dump_") {
					want = "dump show"
					if d.Command != want {
						t.Errorf("command %q, want %q", d.Command, want)
					}
				}
				for _, p := range d.Pairs {
					if p.Key == "00" || p.Key == "ff" || p.Key == "22" {
						t.Errorf("a hex row read as a pair: %+v", p)
					}
				}
			}
			if d := cmp.Diff(w, got, cmp.AllowUnexported(diag{})); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
	// The text and the JSON of the same tx diagnose give the same pairs.
	data, err := os.ReadFile(filepath.Join("..", "testdata", "realworld", "devlink", "mlx5_health_diagnose_tx_text_json_2019.txt"))
	if err != nil {
		t.Fatal(err)
	}
	ds, err := ParseDevlinkDiagnose("x.txt", string(data))
	if err != nil || len(ds) != 2 {
		t.Fatalf("%v %v", ds, err)
	}
	kv := func(ps []DiagnosePair) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Key+"="+p.Value)
		}
		return out
	}
	if d := cmp.Diff(kv(ds[0].Pairs), kv(ds[1].Pairs)); d != "" {
		t.Errorf("text and JSON differ (-text +json):\n%s", d)
	}
}

func TestTextPairs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"channel ix: 0 tc: 0 txq ix: 0 sqn: 4307 HW state: 1 stopped: false", []string{"channel ix=0", "tc=0", "txq ix=0", "sqn=4307", "HW state=1", "stopped=false"}},
		{"Description: Module is not present.", []string{"Description=Module is not present."}},
		{"synd 0x8: unrecoverable hardware error", []string{"synd=0x8: unrecoverable hardware error"}},
		{"assert_var[0] 0xfc3fc043", []string{"assert_var[0]=0xfc3fc043"}},
		{"SQs:", nil},
		{"00 00 00 80 00 01 00 00 00 00 ad de", nil},
		{"devlink_region_name: cr-space snapshot_id: 1", []string{"devlink_region_name=cr-space", "snapshot_id=1"}},
		{"alone", nil},
	} {
		var got []string
		for _, p := range textPairs(tc.in) {
			got = append(got, p.Key+"="+p.Value)
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%q (-want +got):\n%s", tc.in, d)
		}
	}
}

// TestDiagnoseEvidence checks that the diagnose output of a reporter in
// error, named as collect names it, is read and shown with the
// reporter's findings, and that one whose device is unknown is only
// noted.
func TestDiagnoseEvidence(t *testing.T) {
	fw, err := os.ReadFile(filepath.Join("..", "testdata", "realworld", "devlink", "mlx5_health_diagnose_fw_2019.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// The health buffer without its command line, as collect would
	// write a text diagnose of pci/0000:08:00.0's fw reporter.
	_, buffer, _ := strings.Cut(string(fw), "diagnose data:\n")
	r := analyzer(t).Analyze(bundleOf(t, map[string]string{
		"devlink_health.txt":                                             devlinkHealth("fw", "error", 1),
		"devlink_health_diagnose_pci_0000_08_00.0_fw.txt":                buffer,
		"devlink_health_diagnose_auxiliary_mlx5_core.eth.0_65535_tx.txt": buffer,
		"uptime": reachUptime,
	}))
	found := false
	for _, f := range r.Findings {
		if f.Labels["reporter"] != "fw" {
			continue
		}
		found = true
		if !strings.Contains(f.Evidence, "devlink_health_diagnose_pci_0000_08_00.0_fw.txt:11: devlink health diagnose of reporter fw: synd: 0x8: unrecoverable hardware error, ext_synd: 0x003d") {
			t.Errorf("%s evidence: %s", f.Alert, f.Evidence)
		}
	}
	if !found {
		t.Fatalf("no fw finding: %+v", r.Findings)
	}
	for _, f := range r.Files {
		switch f.Name {
		case "devlink_health_diagnose_pci_0000_08_00.0_fw.txt":
			if f.Kind != KindDevlinkDiagnose || !strings.Contains(f.Note, "of pci/0000:08:00.0: synd") {
				t.Errorf("%+v", f)
			}
		case "devlink_health_diagnose_auxiliary_mlx5_core.eth.0_65535_tx.txt":
			if f.Kind != KindDevlinkDiagnose || !strings.Contains(f.Note, "device unknown") {
				t.Errorf("%+v", f)
			}
		}
	}
}

// TestHealthShowWithoutDevice reads `devlink health show` excerpts that
// quote only the reporter lines: the reporters are read, under the
// device the file name gives, else "unknown", as the note says.
func TestHealthShowWithoutDevice(t *testing.T) {
	for _, tc := range []struct{ file, device string }{
		{"devlink_health.txt", "unknown"},
		{"health_0000_3b_00.0.txt", "pci/0000:3b:00.0"},
	} {
		r := analyzer(t).Analyze(bundleOf(t, map[string]string{
			tc.file:  "name fw state error error 1 recover 0\nname fw_fatal state healthy error 0 recover 0\n",
			"uptime": reachUptime,
		}))
		var dev string
		for _, f := range r.Findings {
			if f.Alert == "NICDevlinkFwError" {
				dev = f.Labels["device"]
			}
		}
		if dev != tc.device {
			t.Errorf("%s: NICDevlinkFwError on %q, want %q; findings %+v", tc.file, dev, tc.device, r.Findings)
		}
		for _, f := range r.Files {
			if f.Name == tc.file && (f.Kind != KindDevlinkHealth || !strings.Contains(f.Note, "device unknown: 2 reporters")) {
				t.Errorf("%+v", f)
			}
		}
	}
}

// TestDiagnoseFileNames reads the device and reporter from the names
// collect and sosreport give diagnose and dump outputs.
func TestDiagnoseFileNames(t *testing.T) {
	for _, tc := range []struct{ name, device, reporter, command string }{
		{"devlink_health_diagnose_pci_0000_08_00.1_vnic.json", "pci/0000:08:00.1", "vnic", "diagnose"},
		{"devlink_health_diagnose_pci_0000_08_00.1_65535_tx.json", "pci/0000:08:00.1/65535", "tx", "diagnose"},
		{"sos_commands/devlink_health/devlink_health_diagnose_pci.0000_08_00.0_reporter_fw_fatal", "pci/0000:08:00.0", "fw_fatal", "diagnose"},
		{"sos_commands/devlink_health/devlink_health_dump_show_pci.0000_08_00.0.65535_reporter_tx", "pci/0000:08:00.0/65535", "tx", "dump show"},
		{"sos_commands/devlink_health/devlink_health_diagnose_auxiliary.mlx5_core.eth.0.65535_reporter_tx", "", "tx", "diagnose"},
	} {
		if !isDevlinkDiagnose(tc.name, nil) {
			t.Errorf("%s not recognised", tc.name)
		}
		ds, err := ParseDevlinkDiagnose(tc.name, "Syndrome: 0\n")
		if err != nil || len(ds) != 1 {
			t.Fatalf("%s: %v %v", tc.name, ds, err)
		}
		if d := ds[0]; d.Device != tc.device || d.Reporter != tc.reporter || d.Command != tc.command {
			t.Errorf("%s: %+v", tc.name, d)
		}
	}
}

func FuzzParseDevlinkDiagnose(f *testing.F) {
	f.Add("devlink_health_diagnose_pci_0000_08_00.1_vnic.json", `{"vNIC env counters":{"total_error_queues":3,"cq_overrun":3}}`)
	f.Add("x.txt", "$ devlink health diagnose pci/0000:82:00.0 reporter fw\nsynd 0x8: unrecoverable hardware error\n")
	f.Add("x.txt", "$ devlink health diagnose pci/0000:00:0b.0 reporter tx -jp\n{\n \"SQs\": [ {\"channel ix\": 0}, {\"cc\": 1} ]\n}\n")
	f.Fuzz(func(t *testing.T, name, s string) {
		ds, err := ParseDevlinkDiagnose(name, s)
		if err == nil && len(ds) == 0 {
			t.Error("no error and no diagnosis")
		}
		for _, d := range ds {
			_ = summaryText(d.Summary())
		}
	})
}
