package diagnose

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseFlintQuery(t *testing.T) {
	for _, tc := range []struct {
		fixture string
		want    []FirmwareDevice
	}{
		{"mstflint_q_cx3_fs2_2020.txt", []FirmwareDevice{{PCIName: "01:00.0", PSID: "MT_1090120019",
			Versions: map[string][2]string{"FW": {"2.42.5000", ""}, "PXE": {"3.4.752", ""}}}}},
		{"flint_query_cx6lx_fs4_2024.txt", []FirmwareDevice{{PCIName: "/dev/mst/mt4127_pciconf0", PSID: "MT_0000000575",
			Versions: map[string][2]string{"FW": {"26.33.1048", ""}, "UEFI": {"14.26.17", ""}, "PXE": {"3.6.502", ""}}}}},
	} {
		got, err := ParseFlintQuery(readFixture(t, filepath.Join("..", "firmware", tc.fixture)))
		if err != nil {
			t.Fatalf("%s: %v", tc.fixture, err)
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.fixture, d)
		}
	}
	for _, bad := range []string{"FW Version: 1.2.3\n", "Image type: FS4\nRom Info: type=PXE version=1\n"} {
		if _, err := ParseFlintQuery(bad); err == nil {
			t.Errorf("no error for %q", bad)
		}
	}
}

func TestFirmwareToolFailure(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"bash: mlxfwmanager: command not found\n", "mlxfwmanager is not installed on the host (line 1: bash: mlxfwmanager: command not found)"},
		{"./collect_debug.sh: line 9: mlxfwmanager: command not found\n", "mlxfwmanager is not installed"},
		{"sh: 1: flint: not found\n", "flint is not installed"},
		{"Querying Mellanox devices firmware ...\n-E- No devices found or specified\n", "the tool failed (line 2: -E- No devices found or specified)"},
		{"Device #1:\n-E- x\n", ""},
		{"[    1.000000] mlx5_core: command not found\nother\n", ""},
	} {
		got := toolFailure(strings.Split(tc.in, "\n"))
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%q: %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestFirmwareFiles reads collect_debug.sh's firmware.txt as it is when
// the tool failed, and a flint query, in one bundle: the failure is a
// note, not an unparsable file; the query is a firmware device.
func TestFirmwareFiles(t *testing.T) {
	r := analyzer(t).Analyze(bundleOf(t, map[string]string{
		"firmware.txt":         readFixture(t, filepath.Join("..", "firmware", "mlxfwmanager_no_devices.txt")),
		"firmware_missing.txt": "bash: mlxfwmanager: command not found\n",
		"flint.txt":            readFixture(t, filepath.Join("..", "firmware", "flint_query_cx6lx_fs4_2024.txt")),
		"flint_nodev.txt":      "Image type:            FS4\nFW Version:            26.33.1048\nPSID:                  MT_0000000575\n",
	}))
	want := map[string][2]string{
		"firmware.txt":         {KindToolFailure, "no output to read: the tool failed (line 5: -E- No devices found or specified, mst might be stopped"},
		"firmware_missing.txt": {KindToolFailure, "no output to read: mlxfwmanager is not installed on the host"},
		"flint.txt":            {KindFlintQuery, ""},
		"flint_nodev.txt":      {KindFlintQuery, "device unknown: no flint -d command line"},
	}
	for _, f := range r.Files {
		w := want[f.Name]
		if f.Kind != w[0] || !strings.HasPrefix(f.Note, w[1]) || w[1] == "" && f.Note != "" {
			t.Errorf("%+v, want kind %q note %q", f, w[0], w[1])
		}
	}
	if len(r.Firmware) != 2 || r.Firmware[0].PSID != "MT_0000000575" {
		t.Errorf("firmware: %+v", r.Firmware)
	}
}

func FuzzParseFlintQuery(f *testing.F) {
	f.Add("# flint -d 01:00.0 q\nImage type: FS4\nFW Version: 1.2\nRom Info: type=UEFI version=1 cpu=x\n  type=PXE version=2\nPSID: MT_1\n")
	f.Fuzz(func(t *testing.T, s string) {
		devs, err := ParseFlintQuery(s)
		if err == nil && len(devs) == 0 {
			t.Error("no error and no device")
		}
		_ = toolFailure(strings.Split(s, "\n"))
	})
}
