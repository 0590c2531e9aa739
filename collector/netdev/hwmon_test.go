package netdev

import (
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"

	"go.uber.org/zap"

	"github.com/google/go-cmp/cmp"
	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/collectortest"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/internal/sysfs"
)

// TestHwmonReads checks what the temperature channels cost and how their
// failures are handled: the name, labels and thresholds are read at the
// first poll of an interface identity only (on mlx5 each read is a
// firmware command), input and highest at every poll; an input that fails
// drops that series and is a source error while the other channels stay;
// a value that does not parse is a parse error.
func TestHwmonReads(t *testing.T) {
	root := sysfsFixture(t)
	hw := filepath.Join(root, "devices/pci0000:00/0000:00:01.1/0000:08:00.1/hwmon/hwmon3")
	f, err := collector.NewNameFilter("collector.netdev.device", "enp8s0f1np1", "")
	if err != nil {
		t.Fatal(err)
	}
	c := New(Config{SysfsPath: root, Filter: f}, zap.NewNop())
	reads := map[string]int{}
	var fail map[string]error
	c.readAttr = func(path string) (string, error) {
		if strings.HasPrefix(path, hw) {
			reads[filepath.Base(path)]++
			if err := fail[filepath.Base(path)]; err != nil {
				return "", err
			}
		}
		return sysfs.ReadAttr(path)
	}
	for range 3 {
		pollOnce(t, c)
	}
	for file, want := range map[string]int{"name": 1, "temp1_label": 1, "temp1_crit": 1, "temp1_emergency": 1, "temp2_crit": 1,
		"temp1_input": 3, "temp1_highest": 3, "temp2_input": 3, "temp2_highest": 3} {
		if reads[file] != want {
			t.Errorf("%s read %d times in 3 polls, want %d", file, reads[file], want)
		}
	}

	fail = map[string]error{"temp1_input": &os.PathError{Op: "read", Path: "temp1_input", Err: syscall.EIO}}
	snap, errs := pollOnce(t, c)
	text := snap.String()
	if strings.Contains(text, `nic_hwmon_temperature_celsius{device="enp8s0f1np1",pci_address="0000:08:00.1",chip="mlx5",sensor="sensor0"}`) ||
		!strings.Contains(text, `nic_hwmon_temperature_celsius{device="enp8s0f1np1",pci_address="0000:08:00.1",chip="mlx5",sensor="sensor64"} 48.125`) ||
		!strings.Contains(text, `nic_hwmon_temperature_critical_celsius{device="enp8s0f1np1",pci_address="0000:08:00.1",chip="mlx5",sensor="sensor0"} 105`) {
		t.Errorf("with temp1_input failing: want its series dropped and the others kept:\n%s", text)
	}
	if !hasReason(errs, "eio") {
		t.Errorf("a failing temp1_input is no eio source error: %v", errs.Counts())
	}

	fail = nil
	if err := os.WriteFile(filepath.Join(hw, "temp2_input"), []byte("48.1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errs = pollOnce(t, c)
	if !hasReason(errs, "parse") {
		t.Errorf("temp2_input 48.1 is no parse error: %v", errs.Counts())
	}
}

func hasReason(errs *collector.SourceErrors, reason string) bool {
	for _, rc := range errs.Counts() {
		if rc.Reason == reason && rc.Count > 0 {
			return true
		}
	}
	return false
}

func TestParseMilliCelsius(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"56000", 56, true}, {"48125", 48.125, true}, {"-5250", -5.25, true}, {"0", 0, true},
		{"", 0, false}, {"48.1", 0, false}, {"NaN", 0, false}, {"1e5", 0, false},
	} {
		got, err := parseMilliCelsius(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseMilliCelsius(%q) = %v, %v; want %v, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func FuzzParseMilliCelsius(f *testing.F) {
	for _, s := range []string{"56000", "-5250", "", "48.1", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseMilliCelsius(s)
		if err != nil && v != 0 {
			t.Errorf("parseMilliCelsius(%q) = %v with error %v", s, v, err)
		}
	})
}

// TestThermalZoneFallback reads the mlx5 thermal zone of a PCI function
// that has no hwmon device (kernels 6.4 and 6.5). The layout is the one
// two public outputs show: the type "mlx5_<pci address>" of each physical
// function's zone under /sys/devices/virtual/thermal (the commit message
// of the upstream fix "net/mlx5: Fix thermal zone name", netdev mailing
// list, 2023, for ConnectX-6 Dx functions 0000:00:04.0 and 0000:00:05.0),
// and a ConnectX card's zone read as 41.0 °C by lm-sensors as chip
// "mlx5_0000:a2:00.0-virtual-0" (mate-desktop/mate-sensors-applet#134).
func TestThermalZoneFallback(t *testing.T) {
	const fn = "devices/pci0000:a0/0000:a0:01.1/0000:a2:00.0"
	base := map[string]string{
		fn + "/net/ens1f0np0/ifindex":               "5",
		fn + "/net/ens1f0np0/operstate":             "up",
		fn + "/net/ens1f0np0/flags":                 "0x1003",
		fn + "/net/ens1f0np0/address":               "b8:3f:d2:00:00:01",
		fn + "/net/ens1f0np0/carrier":               "1",
		fn + "/net/ens1f0np0/mtu":                   "1500",
		fn + "/net/ens1f0np0/statistics/rx_packets": "1",
		// Another device's zone, and the PCI function of another card.
		"devices/virtual/thermal/thermal_zone0/type": "x86_pkg_temp",
		"devices/virtual/thermal/thermal_zone0/temp": "55000",
		"devices/virtual/thermal/thermal_zone1/type": "mlx5_0000:00:04.0",
		"devices/virtual/thermal/thermal_zone1/temp": "39000",
		"devices/virtual/thermal/thermal_zone2/type": "mlx5_0000:a2:00.0",
		"devices/virtual/thermal/thermal_zone2/temp": "41000",
	}
	for _, tt := range []struct {
		name  string
		files map[string]string
		want  map[string]float64 // series of the hwmon families
	}{
		{"zone of the function", nil, map[string]float64{
			`nic_hwmon_temperature_celsius{chip="thermal_zone",device="ens1f0np0",pci_address="0000:a2:00.0",sensor="asic"}`: 41,
		}},
		{"zone with a critical trip point", map[string]string{
			"devices/virtual/thermal/thermal_zone2/trip_point_0_type": "passive",
			"devices/virtual/thermal/thermal_zone2/trip_point_0_temp": "95000",
			"devices/virtual/thermal/thermal_zone2/trip_point_1_type": "critical",
			"devices/virtual/thermal/thermal_zone2/trip_point_1_temp": "105000",
		}, map[string]float64{
			`nic_hwmon_temperature_celsius{chip="thermal_zone",device="ens1f0np0",pci_address="0000:a2:00.0",sensor="asic"}`:          41,
			`nic_hwmon_temperature_critical_celsius{chip="thermal_zone",device="ens1f0np0",pci_address="0000:a2:00.0",sensor="asic"}`: 105,
		}},
		{"hwmon device wins", map[string]string{
			fn + "/hwmon/hwmon3/name":        "mlx5",
			fn + "/hwmon/hwmon3/temp1_input": "52000",
			fn + "/hwmon/hwmon3/temp1_label": "asic",
		}, map[string]float64{
			`nic_hwmon_temperature_celsius{chip="mlx5",device="ens1f0np0",pci_address="0000:a2:00.0",sensor="asic"}`: 52,
		}},
		{"the older single zone names no function", map[string]string{
			"devices/virtual/thermal/thermal_zone2/type": "mlx5",
		}, map[string]float64{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			files := maps.Clone(base)
			maps.Copy(files, tt.files)
			for rel, content := range files {
				p := filepath.Join(root, rel)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for rel, target := range map[string]string{
				"class/net/ens1f0np0":            "../../" + fn + "/net/ens1f0np0",
				fn + "/net/ens1f0np0/device":     "../../../0000:a2:00.0",
				fn + "/subsystem":                "../../../../bus/pci",
				"class/thermal/thermal_zone0":    "../../devices/virtual/thermal/thermal_zone0",
				"class/thermal/thermal_zone1":    "../../devices/virtual/thermal/thermal_zone1",
				"class/thermal/thermal_zone2":    "../../devices/virtual/thermal/thermal_zone2",
				"class/thermal/cooling_device0/": "../../devices/virtual/thermal/cooling_device0",
			} {
				p := filepath.Join(root, rel)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(target, strings.TrimSuffix(p, "/")); err != nil {
					t.Fatal(err)
				}
			}
			c := New(Config{SysfsPath: root}, zap.NewNop())
			snap, errs := pollOnce(t, c)
			if n := errs.Counts(); len(n) != 0 {
				t.Errorf("source errors %v", n)
			}
			got := map[string]float64{}
			for k, v := range collectortest.Series(t, snap.String()) {
				if strings.HasPrefix(k, "nic_hwmon_") {
					got[k] = v
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("hwmon series (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, hwmonSeriesFS(t, sysfs.DirFS(root), fn, "ens1f0np0")); diff != "" {
				t.Errorf("AddHwmonFS series (-want +got):\n%s", diff)
			}
		})
	}
}

// hwmonSeriesFS returns the series AddHwmonFS adds for the PCI function
// dir of fsys behind device, and fails on a source error.
func hwmonSeriesFS(t *testing.T, fsys fs.FS, dir, device string) map[string]float64 {
	t.Helper()
	b := exposition.NewBuilder()
	errs := collector.NewSourceErrors(zap.NewNop(), 0)
	AddHwmonFS(collector.NewPoll(b, errs), fsys, dir, device)
	if n := errs.Counts(); len(n) != 0 {
		t.Errorf("AddHwmonFS: source errors %v", n)
	}
	return collectortest.Series(t, b.Snapshot().String())
}

// TestAddHwmonFS checks that AddHwmonFS over a copy of a function's hwmon
// files in memory (as diagnose builds it from a bundle, under
// bus/pci/devices/<address>) gives the series the collector exports from
// the sysfs tree they were copied from.
func TestAddHwmonFS(t *testing.T) {
	root := sysfsFixture(t)
	const fn = "devices/pci0000:00/0000:00:01.1/0000:08:00.1"
	f, err := collector.NewNameFilter("collector.netdev.device", "enp8s0f1np1", "")
	if err != nil {
		t.Fatal(err)
	}
	snap, _ := pollOnce(t, New(Config{SysfsPath: root, Filter: f}, zap.NewNop()))
	want := map[string]float64{}
	for k, v := range collectortest.Series(t, snap.String()) {
		if strings.HasPrefix(k, "nic_hwmon_") {
			want[k] = v
		}
	}
	if len(want) == 0 {
		t.Fatal("the fixture has no hwmon series")
	}
	mem := fstest.MapFS{}
	hw := filepath.Join(root, fn, "hwmon")
	err = filepath.WalkDir(hw, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(filepath.Join(root, fn), p)
		mem[path.Join("bus/pci/devices/0000:08:00.1", filepath.ToSlash(rel))] = &fstest.MapFile{Data: data, Mode: 0o444}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, hwmonSeriesFS(t, mem, "bus/pci/devices/0000:08:00.1", "enp8s0f1np1")); diff != "" {
		t.Errorf("AddHwmonFS over the copied files (-collector +AddHwmonFS):\n%s", diff)
	}
	if got := hwmonSeriesFS(t, mem, "bus/pci/devices/0000:08:00.0", "enp8s0f0np0"); len(got) != 0 {
		t.Errorf("a function without hwmon files or thermal zone has series: %v", got)
	}
}
