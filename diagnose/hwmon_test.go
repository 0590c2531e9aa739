package diagnose

import (
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector/exposition"
)

// seriesOf returns the gauges of a snapshot by series key.
func seriesOf(t *testing.T, s *exposition.Snapshot) map[string]float64 {
	t.Helper()
	tp := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := tp.TextToMetricFamilies(strings.NewReader(s.String()))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for n, mf := range fams {
		for _, m := range mf.GetMetric() {
			lbls := map[string]string{"__name__": n}
			for _, lp := range m.GetLabel() {
				lbls[lp.GetName()] = lp.GetValue()
			}
			out[seriesKey(lbls)] = m.GetGauge().GetValue()
		}
	}
	return out
}

// demoHwmon is the later sample's hwmon_sysfs.txt of a bundle that
// `nic_exporter collect --demo --demo.faults=nic_overheating@0s` wrote two
// minutes into the fault: the layout mlx5's hwmon.c gives each PCI
// function (kernel 6.6+), the ASIC's sensor0 past its critical threshold.
const demoHwmon = `bus/pci/devices/0000:08:00.0/hwmon/hwmon2/name:mlx5
bus/pci/devices/0000:08:00.0/hwmon/hwmon2/temp1_crit:105000
bus/pci/devices/0000:08:00.0/hwmon/hwmon2/temp1_highest:106000
bus/pci/devices/0000:08:00.0/hwmon/hwmon2/temp1_input:106000
bus/pci/devices/0000:08:00.0/hwmon/hwmon2/temp1_label:sensor0
bus/pci/devices/0000:08:00.0/hwmon/hwmon2/temp2_crit:75000
bus/pci/devices/0000:08:00.0/hwmon/hwmon2/temp2_highest:45500
bus/pci/devices/0000:08:00.0/hwmon/hwmon2/temp2_input:44500
bus/pci/devices/0000:08:00.0/hwmon/hwmon2/temp2_label:sensor64
bus/pci/devices/0000:08:00.0/net/ibp8s0f0/ifindex:3
bus/pci/devices/0000:08:00.1/hwmon/hwmon3/name:mlx5
bus/pci/devices/0000:08:00.1/hwmon/hwmon3/temp1_crit:105000
bus/pci/devices/0000:08:00.1/hwmon/hwmon3/temp1_highest:106000
bus/pci/devices/0000:08:00.1/hwmon/hwmon3/temp1_input:106000
bus/pci/devices/0000:08:00.1/hwmon/hwmon3/temp1_label:sensor0
bus/pci/devices/0000:08:00.1/hwmon/hwmon3/temp2_crit:75000
bus/pci/devices/0000:08:00.1/hwmon/hwmon3/temp2_highest:48250
bus/pci/devices/0000:08:00.1/hwmon/hwmon3/temp2_input:47250
bus/pci/devices/0000:08:00.1/hwmon/hwmon3/temp2_label:sensor65
bus/pci/devices/0000:08:00.1/net/enp8s0f1np1/ifindex:4
`

// thermalHwmon is a function without a hwmon device (kernels 6.4 and
// 6.5) whose mlx5 thermal zone collect copied, with the zones looked at
// before it: the zone type "mlx5_<address>" as the upstream fix
// "net/mlx5: Fix thermal zone name" names them, a ConnectX zone at
// 41.0 °C as lm-sensors printed it (mate-desktop/mate-sensors-applet#134,
// chip mlx5_0000:a2:00.0-virtual-0), a CPU package zone before it. mlx5
// registers no trip points; the critical one here is the thermal core's
// layout (trip_point_<N>_type and _temp), to read a threshold.
const thermalHwmon = `/sys/class/thermal/thermal_zone0/type:x86_pkg_temp
/sys/class/thermal/thermal_zone1/type:mlx5_0000:a2:00.0
/sys/class/thermal/thermal_zone1/temp:41000
/sys/class/thermal/thermal_zone1/trip_point_0_type:critical
/sys/class/thermal/thermal_zone1/trip_point_0_temp:105000
`

func TestParseHwmonSysfs(t *testing.T) {
	for _, tt := range []struct {
		name     string
		text     string
		fns      []HwmonFunction
		rejected []string
		series   map[string]float64
		err      bool
	}{
		{name: "demo host", text: demoHwmon,
			fns: []HwmonFunction{{"0000:08:00.0", []string{"ibp8s0f0"}}, {"0000:08:00.1", []string{"enp8s0f1np1"}}},
			series: map[string]float64{
				`nic_hwmon_temperature_celsius{chip="mlx5",device="ibp8s0f0",pci_address="0000:08:00.0",sensor="sensor0"}`:              106,
				`nic_hwmon_temperature_critical_celsius{chip="mlx5",device="ibp8s0f0",pci_address="0000:08:00.0",sensor="sensor0"}`:     105,
				`nic_hwmon_temperature_highest_celsius{chip="mlx5",device="ibp8s0f0",pci_address="0000:08:00.0",sensor="sensor0"}`:      106,
				`nic_hwmon_temperature_celsius{chip="mlx5",device="ibp8s0f0",pci_address="0000:08:00.0",sensor="sensor64"}`:             44.5,
				`nic_hwmon_temperature_critical_celsius{chip="mlx5",device="ibp8s0f0",pci_address="0000:08:00.0",sensor="sensor64"}`:    75,
				`nic_hwmon_temperature_highest_celsius{chip="mlx5",device="ibp8s0f0",pci_address="0000:08:00.0",sensor="sensor64"}`:     45.5,
				`nic_hwmon_temperature_celsius{chip="mlx5",device="enp8s0f1np1",pci_address="0000:08:00.1",sensor="sensor0"}`:           106,
				`nic_hwmon_temperature_critical_celsius{chip="mlx5",device="enp8s0f1np1",pci_address="0000:08:00.1",sensor="sensor0"}`:  105,
				`nic_hwmon_temperature_highest_celsius{chip="mlx5",device="enp8s0f1np1",pci_address="0000:08:00.1",sensor="sensor0"}`:   106,
				`nic_hwmon_temperature_celsius{chip="mlx5",device="enp8s0f1np1",pci_address="0000:08:00.1",sensor="sensor65"}`:          47.25,
				`nic_hwmon_temperature_critical_celsius{chip="mlx5",device="enp8s0f1np1",pci_address="0000:08:00.1",sensor="sensor65"}`: 75,
				`nic_hwmon_temperature_highest_celsius{chip="mlx5",device="enp8s0f1np1",pci_address="0000:08:00.1",sensor="sensor65"}`:  48.25,
			}},
		{name: "thermal zone of a function without interfaces: its address is the device", text: thermalHwmon,
			fns: []HwmonFunction{{Address: "0000:a2:00.0"}},
			series: map[string]float64{
				`nic_hwmon_temperature_celsius{chip="thermal_zone",device="0000:a2:00.0",pci_address="0000:a2:00.0",sensor="asic"}`:          41,
				`nic_hwmon_temperature_critical_celsius{chip="thermal_zone",device="0000:a2:00.0",pci_address="0000:a2:00.0",sensor="asic"}`: 105,
			}},
		{name: "an unlabelled channel is temp<N>; a bad temperature is left out, the rest read",
			text: "bus/pci/devices/0000:3B:00.0/hwmon/hwmon1/name:mlx5\n" +
				"bus/pci/devices/0000:3B:00.0/hwmon/hwmon1/temp1_input:52000\n" +
				"bus/pci/devices/0000:3B:00.0/hwmon/hwmon1/temp1_crit:10 5\n" +
				"bus/pci/devices/0000:3B:00.0/net/ens1f0/ifindex:2\n" +
				"bus/pci/devices/0000:3B:00.0/net/ens1f0_0/ifindex:7\n" +
				"some other line\n",
			fns:      []HwmonFunction{{"0000:3b:00.0", []string{"ens1f0", "ens1f0_0"}}},
			rejected: []string{`line 3: temp1_crit "10 5" is not millidegrees Celsius`},
			series: map[string]float64{
				`nic_hwmon_temperature_celsius{chip="mlx5",device="ens1f0",pci_address="0000:3b:00.0",sensor="temp1"}`:   52,
				`nic_hwmon_temperature_celsius{chip="mlx5",device="ens1f0_0",pci_address="0000:3b:00.0",sensor="temp1"}`: 52,
			}},
		{name: "no attributes", text: "0000:08:00.1/current_link_speed:32.0 GT/s PCIe\n", err: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h, err := ParseHwmonSysfs(tt.text)
			if (err != nil) != tt.err {
				t.Fatalf("error %v, want error %v", err, tt.err)
			}
			if err != nil {
				return
			}
			if diff := cmp.Diff(tt.fns, h.Functions); diff != "" {
				t.Errorf("functions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.rejected, h.Rejected); diff != "" {
				t.Errorf("rejected (-want +got):\n%s", diff)
			}
			r := &Report{hwmon: []hwmonInput{{file: "hwmon_sysfs.txt", h: h}}}
			got := seriesOf(t, hwmonSnapshot(r, zap.NewNop()))
			if diff := cmp.Diff(tt.series, got); diff != "" {
				t.Errorf("series (-want +got):\n%s", diff)
			}
			ev := map[string]string{}
			hwmonEvidence(r.hwmon, ev)
			for k := range tt.series {
				if !strings.HasPrefix(ev[k], "hwmon_sysfs.txt:") {
					t.Errorf("series %s has evidence %q", k, ev[k])
				}
			}
		})
	}
}

// TestHwmonRecognised checks that diagnose recognises collect's hwmon
// file and names its rejected lines.
func TestHwmonRecognised(t *testing.T) {
	r := analyzer(t).Analyze(bundleOf(t, map[string]string{"hwmon_sysfs.txt": demoHwmon + "bus/pci/devices/0000:08:00.1/hwmon/hwmon3/temp3_input:hot\n"}))
	if len(r.Files) != 1 || r.Files[0].Kind != KindHwmonSysfs || !strings.Contains(r.Files[0].Note, `left out: line 21: temp3_input "hot"`) {
		t.Errorf("files %+v", r.Files)
	}
}

func FuzzParseHwmonSysfs(f *testing.F) {
	f.Add(demoHwmon)
	f.Add(thermalHwmon)
	f.Add("bus/pci/devices/0000:08:00.1/hwmon/hwmon3/temp99999999999999999999_input:1\nbus/pci/devices/0000:08:00.1/hwmon/hwmon3/name:\n")
	f.Add("class/thermal/thermal_zone1/type:mlx5_0000:08:00.1\nclass/thermal/thermal_zone1/temp:-99999999999999999999\n")
	f.Fuzz(func(t *testing.T, s string) {
		h, err := ParseHwmonSysfs(s)
		if err != nil {
			return
		}
		for p := range h.Attrs {
			if !strings.HasPrefix(p, "bus/pci/devices/") && !strings.HasPrefix(p, "class/thermal/") {
				t.Fatalf("attribute %q outside the tree", p)
			}
		}
		for _, fn := range h.Functions {
			if !pciAddress.MatchString(fn.Address) {
				t.Fatalf("function %q", fn.Address)
			}
		}
		// The netdev collector's reading takes whatever the file holds.
		hwmonSnapshot(&Report{hwmon: []hwmonInput{{file: "f", h: h}}}, zap.NewNop())
		hwmonEvidence([]hwmonInput{{file: "f", h: h}}, map[string]string{})
	})
}

// TestSensorsRealWorld reads the `sensors` outputs of the real-world
// corpus (testdata/realworld/hwmon, each naming its source) as diagnose
// reads a bundle file: recognised by content, the mlx5 chips become the
// series the daemon exports for the functions' hwmon devices or thermal
// zones, the other chips none, and nothing is left out.
func TestSensorsRealWorld(t *testing.T) {
	asic := func(addr string, input, highest float64) map[string]float64 {
		l := `{chip="mlx5",device="` + addr + `",pci_address="` + addr + `",sensor="asic"}`
		return map[string]float64{"nic_hwmon_temperature_celsius" + l: input, "nic_hwmon_temperature_critical_celsius" + l: 105,
			"nic_hwmon_temperature_highest_celsius" + l: highest}
	}
	merge := func(ms ...map[string]float64) map[string]float64 {
		out := map[string]float64{}
		for _, m := range ms {
			for k, v := range m {
				out[k] = v
			}
		}
		return out
	}
	for _, tt := range []struct {
		file string
		want map[string]float64
	}{
		{"mlx5_bf2_sensors_scion_workstation.txt", merge(asic("0000:4e:00.0", 59, 70), asic("0000:4e:00.1", 59, 70),
			asic("0000:85:00.0", 57, 66), asic("0000:85:00.1", 57, 66), asic("0000:bc:00.0", 62, 74), asic("0000:bc:00.1", 62, 74))},
		{"mlx5_thermal_zone_sensors_mate134.txt", map[string]float64{
			`nic_hwmon_temperature_celsius{chip="thermal_zone",device="0000:a2:00.0",pci_address="0000:a2:00.0",sensor="asic"}`: 41}},
	} {
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("..", "testdata", "realworld", "hwmon", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			r := analyzer(t).Analyze(bundleOf(t, map[string]string{tt.file: string(data)}))
			if len(r.Files) != 1 || r.Files[0].Kind != KindSensors || r.Files[0].Note != "" || len(r.Findings) != 0 {
				t.Fatalf("files %+v, findings %+v", r.Files, r.Findings)
			}
			got := seriesOf(t, hwmonSnapshot(r, zap.NewNop()))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("series (-want +got):\n%s", diff)
			}
			ev := map[string]string{}
			hwmonEvidence(r.hwmon, ev)
			for k := range tt.want {
				if !strings.HasPrefix(ev[k], tt.file+":") {
					t.Errorf("series %s has evidence %q", k, ev[k])
				}
			}
		})
	}
}

func TestParseSensors(t *testing.T) {
	for _, tt := range []struct {
		name     string
		text     string
		attrs    map[string]string
		rejected []string
		err      bool
	}{
		{name: "domain, an unlabelled channel, Latin-1 degree sign, limits on the next line, a failed read",
			text: "mlx5-pci-10bc01\nAdapter: PCI adapter\ntemp1:        +48.1\xb0C  (crit = +105.0\xb0C)\n" +
				"Module0:      +57.0 C  (highest = +58.0 C)\n                       (emerg = +120.0 C)\nsensor2:          N/A\n",
			attrs: map[string]string{
				"bus/pci/devices/0010:bc:00.1/hwmon/hwmon0/name":            "mlx5",
				"bus/pci/devices/0010:bc:00.1/hwmon/hwmon0/temp1_input":     "48100",
				"bus/pci/devices/0010:bc:00.1/hwmon/hwmon0/temp1_label":     "temp1",
				"bus/pci/devices/0010:bc:00.1/hwmon/hwmon0/temp1_crit":      "105000",
				"bus/pci/devices/0010:bc:00.1/hwmon/hwmon0/temp2_input":     "57000",
				"bus/pci/devices/0010:bc:00.1/hwmon/hwmon0/temp2_label":     "Module0",
				"bus/pci/devices/0010:bc:00.1/hwmon/hwmon0/temp2_highest":   "58000",
				"bus/pci/devices/0010:bc:00.1/hwmon/hwmon0/temp2_emergency": "120000",
			},
			rejected: []string{`line 6: sensor2 "N/A" is not a temperature`}},
		{name: "only other chips", text: "nvme-pci-0100\nAdapter: PCI adapter\nComposite:    +27.9°C\n", err: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h, err := ParseSensors(tt.text)
			if (err != nil) != tt.err {
				t.Fatalf("error %v, want error %v", err, tt.err)
			}
			if err != nil {
				return
			}
			got := map[string]string{}
			for p, a := range h.Attrs {
				got[p] = a.Value
			}
			if diff := cmp.Diff(tt.attrs, got); diff != "" {
				t.Errorf("attributes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.rejected, h.Rejected); diff != "" {
				t.Errorf("rejected (-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzParseSensors(f *testing.F) {
	for _, name := range []string{"mlx5_bf2_sensors_scion_workstation.txt", "mlx5_thermal_zone_sensors_mate134.txt"} {
		data, err := os.ReadFile(filepath.Join("..", "testdata", "realworld", "hwmon", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data))
	}
	f.Add("mlx5-pci-ffffffff\nasic: +1e308°C (crit = +NaN°C, highest = -99999999999°C)\n(crit = +1°C)\n")
	f.Fuzz(func(t *testing.T, s string) {
		h, err := ParseSensors(s)
		if err != nil {
			return
		}
		for p, a := range h.Attrs {
			if hwmonTempAttr.MatchString(path.Base(p)) {
				if _, err := strconv.ParseInt(a.Value, 10, 64); err != nil {
					t.Fatalf("%s = %q is not millidegrees", p, a.Value)
				}
			}
		}
		for _, fn := range h.Functions {
			if !pciAddress.MatchString(fn.Address) {
				t.Fatalf("function %q", fn.Address)
			}
		}
		hwmonSnapshot(&Report{hwmon: []hwmonInput{{file: "f", h: h}}}, zap.NewNop())
	})
}
