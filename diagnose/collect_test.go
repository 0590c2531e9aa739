package diagnose

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// pciSysfsSample is `grep -H .` of a function's link and AER attributes
// in the formats of Linux 6.1: the link attributes as
// drivers/pci/pci-sysfs.c prints them, the AER statistics as
// Documentation/ABI/testing/sysfs-bus-pci-devices-aer_stats shows them
// (one "Name count" line per error type, then TOTAL_ERR_*).
const pciSysfsSample = `0000:08:00.1/current_link_speed:32.0 GT/s PCIe
0000:08:00.1/max_link_speed:32.0 GT/s PCIe
0000:08:00.1/current_link_width:8
0000:08:00.1/max_link_width:16
0000:08:00.1/aer_dev_correctable:RxErr 2
0000:08:00.1/aer_dev_correctable:TOTAL_ERR_COR 2
0000:08:00.1/aer_dev_nonfatal:CmpltTO 1
0000:08:00.1/aer_dev_nonfatal:TOTAL_ERR_NONFATAL 1
0000:08:00.1/aer_dev_fatal:TOTAL_ERR_FATAL 0
/sys/bus/pci/devices/0000:00:05.0/current_link_speed:Unknown
/sys/bus/pci/devices/0000:00:05.0/max_link_speed:Unknown
`

func TestParsePCISysfs(t *testing.T) {
	fns, err := ParsePCISysfs(pciSysfsSample)
	if err != nil {
		t.Fatal(err)
	}
	if len(fns) != 2 || fns[0].Address != "0000:00:05.0" || fns[1].Address != "0000:08:00.1" {
		t.Fatalf("functions %+v", fns)
	}
	f := fns[1]
	if f.CurWidth != 8 || f.MaxWidth != 16 || f.CurSpeedGTs != 32 || f.AER["nonfatal"] != 1 || f.AER["correctable"] != 2 || f.AERLine["nonfatal"] != 8 {
		t.Errorf("function %+v", f)
	}
	// The series the rules read: the link below its capability and the
	// AER counts, of the function whose attributes are all there.
	r := analyzer(t).Analyze(&Bundle{Source: "b", Files: []File{{Name: "pci_sysfs.txt", Data: []byte(pciSysfsSample)}}})
	got := findingsOf(r)
	want := "NICPCIeAERUncorrectable 0000:08:00.1 pci_sysfs.txt:8\nNICPCIeLinkDegraded 0000:08:00.1 pci_sysfs.txt:3"
	if got != want {
		t.Errorf("findings:\n%s\nwant:\n%s", got, want)
	}
	for _, bad := range []string{"0000:08:00.1/current_link_width:x8\n", "0000:08:00.1/current_link_speed:fast GT/s\n",
		"0000:08:00.1/aer_dev_fatal:TOTAL_ERR_FATAL -1\n", "nothing here\n"} {
		if _, err := ParsePCISysfs(bad); err == nil {
			t.Errorf("ParsePCISysfs(%q): no error", bad)
		}
	}
}

func TestParseNetdevSysfs(t *testing.T) {
	// flags 0x1003 is IFF_UP|IFF_BROADCAST|IFF_MULTICAST, what an up
	// Ethernet interface shows (include/uapi/linux/if.h).
	text := "enp8s0f1np1/operstate:down\nenp8s0f1np1/carrier:0\nenp8s0f1np1/flags:0x1003\n" +
		"ens5/operstate:up\nens5/carrier:1\nens5/flags:0x1003\n" +
		"eth1/operstate:down\neth1/flags:0x1002\n"
	ifs, err := ParseNetdevSysfs(text)
	if err != nil {
		t.Fatal(err)
	}
	if len(ifs) != 3 || !ifs[0].HasCarrier || ifs[0].Carrier || !ifs[0].AdminUp || ifs[2].AdminUp || ifs[2].HasCarrier {
		t.Errorf("interfaces %+v", ifs)
	}
	r := analyzer(t).Analyze(&Bundle{Source: "b", Files: []File{{Name: "netdev_sysfs.txt", Data: []byte(text)}}})
	if got, want := findingsOf(r), "NICLinkDown enp8s0f1np1 netdev_sysfs.txt:2"; got != want {
		t.Errorf("findings:\n%s\nwant:\n%s", got, want)
	}
	for _, bad := range []string{"eth0/carrier:2\n", "eth0/flags:up\n", "eth0/carrier_changes:-1\n", "\n"} {
		if _, err := ParseNetdevSysfs(bad); err == nil {
			t.Errorf("ParseNetdevSysfs(%q): no error", bad)
		}
	}
}

// TestParseDevlinkInfo reads devlink dev info as the kernel's mlx5
// documentation of Linux 5.x shows it
// (Documentation/networking/device_drivers/mellanox/mlx5.rst, "Devlink
// info").
func TestParseDevlinkInfo(t *testing.T) {
	text := "pci/0000:00:06.0:\n  driver mlx5_core\n  versions:\n      fixed:\n        fw.psid MT_0000000009\n" +
		"      running:\n        fw.version 16.26.0100\n      stored:\n        fw.version 16.26.0100\n"
	devs, err := ParseDevlinkInfo(text)
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 1 || devs[0].PCIName != "pci/0000:00:06.0" || devs[0].PSID != "MT_0000000009" || devs[0].DeviceType != "mlx5_core" ||
		devs[0].Versions["FW"] != [2]string{"16.26.0100", ""} {
		t.Errorf("devices %+v", devs)
	}
	if _, err := ParseDevlinkInfo("driver x\n"); err == nil {
		t.Error("no error without a device")
	}
}

// TestEarlierSample checks that collect's first sample is the first
// observation of the series: a counter that did not move between the
// samples is no finding at the rate between them however high since
// boot (100 carrier changes in a day are none since boot either), one
// that did is, and without a manifest the earlier files are only
// listed.
func TestEarlierSample(t *testing.T) {
	manifest := `{"tool": "nic_exporter collect", "samples": [` +
		`{"dir": "earlier_sample", "time": "2026-01-02T03:04:05Z", "uptime_seconds": 86400},` +
		`{"dir": "", "time": "2026-01-02T03:04:15Z", "uptime_seconds": 86410}]}`
	earlier := "mlx5_0/operstate:up\nmlx5_0/carrier:1\nmlx5_0/carrier_changes:100\nmlx5_0/flags:0x1003\n" +
		"eth1/operstate:up\neth1/carrier:1\neth1/carrier_changes:2\neth1/flags:0x1003\n"
	later := "mlx5_0/operstate:up\nmlx5_0/carrier:1\nmlx5_0/carrier_changes:100\nmlx5_0/flags:0x1003\n" +
		"eth1/operstate:up\neth1/carrier:1\neth1/carrier_changes:8\neth1/flags:0x1003\n"
	files := []File{
		{Name: "earlier_sample/netdev_sysfs.txt", Data: []byte(earlier)},
		{Name: "netdev_sysfs.txt", Data: []byte(later)},
	}
	r := analyzer(t).Analyze(&Bundle{Source: "b", Files: append(files, File{Name: "manifest.json", Data: []byte(manifest)})})
	if got, want := findingsOf(r), "NICLinkFlapping eth1 netdev_sysfs.txt:7"; got != want {
		t.Errorf("two samples: findings:\n%s\nwant:\n%s", got, want)
	}
	if r.Uptime.Seconds != 86410 || r.earlierAt != 10*time.Second {
		t.Errorf("uptime %+v, earlier sample %s before", r.Uptime, r.earlierAt)
	}
	r = analyzer(t).Analyze(&Bundle{Source: "b", Files: files})
	for _, f := range r.Files {
		if strings.HasPrefix(f.Name, "earlier_sample/") && !strings.Contains(f.Note, "no manifest.json") {
			t.Errorf("without a manifest: %+v", f)
		}
	}
}

// TestRDMACounters checks that IB and hw counters files become the
// infiniband collector's series, placed by the manifest's source or by
// the file name, and that a since-boot count fires the alerts on it.
func TestRDMACounters(t *testing.T) {
	manifest := `{"tool": "nic_exporter collect", "samples": [{"dir": "", "time": "2026-01-02T03:04:15Z", "uptime_seconds": 600}],` +
		`"files": [{"name": "hw_counters_mlx5_0.txt", "source": "cd /sys/class/infiniband/mlx5_0/hw_counters && grep -H . *"}]}`
	r := analyzer(t).Analyze(&Bundle{Source: "b", Files: []File{
		{Name: "ib_counters_mlx5_0_1.txt", Data: []byte("link_downed:0\nsymbol_error:5000\n")},
		{Name: "hw_counters_mlx5_0.txt", Data: []byte("out_of_buffer:0\n")},
		{Name: "manifest.json", Data: []byte(manifest)},
	}})
	if got, want := findingsOf(r), "NICInfiniBandSymbolErrors mlx5_0 port 1 ib_counters_mlx5_0_1.txt:2"; got != want {
		t.Errorf("findings:\n%s\nwant:\n%s", got, want)
	}
	for _, f := range r.Files {
		if f.Note != "" {
			t.Errorf("file %+v", f)
		}
	}
	if d, ok := rdmaDir("hw_counters_rdmap0s6_1.txt", nil); !ok || d != "class/infiniband/rdmap0s6/ports/1/hw_counters" {
		t.Errorf("rdmaDir: %q %v", d, ok)
	}
	if _, err := parseRDMACounters("f", "d", "x:1\nnot a counter\n"); err == nil {
		t.Error("no error for a bad line")
	}
}

// findingsOf lists a report's findings as "alert device evidence-file:line",
// the evidence cut to its first file:line.
func findingsOf(r *Report) string {
	var out []string
	for _, f := range r.Findings {
		ev, _, _ := strings.Cut(f.Evidence, ": ")
		out = append(out, f.Alert+" "+f.Device+" "+ev)
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

func FuzzParseRDMACounters(f *testing.F) {
	f.Add("symbol_error:0\nlink_downed:2\n")
	f.Fuzz(func(t *testing.T, s string) { _, _ = parseRDMACounters("f", "d", s) })
}

func FuzzParsePCISysfs(f *testing.F) {
	f.Add(pciSysfsSample)
	f.Fuzz(func(t *testing.T, s string) { _, _ = ParsePCISysfs(s) })
}

func FuzzParseNetdevSysfs(f *testing.F) {
	f.Add("eth0/operstate:down\neth0/carrier:0\neth0/flags:0x1003\n")
	f.Fuzz(func(t *testing.T, s string) { _, _ = ParseNetdevSysfs(s) })
}

func FuzzParseDevlinkInfo(f *testing.F) {
	f.Add("pci/0000:00:06.0:\n  driver mlx5_core\n  versions:\n      fixed:\n        fw.psid MT_0000000009\n")
	f.Fuzz(func(t *testing.T, s string) { _, _ = ParseDevlinkInfo(s) })
}

// TestModuleHealthy reads a real CMIS module dump (its source is named
// in the file) as collect writes module memory: its receive power is
// within its thresholds, so no finding, and a bad row is an error.
func TestModuleHealthy(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "internal", "sff", "testdata", "cmis-cig-qsfpdd-400g-lr4.dump"))
	if err != nil {
		t.Fatal(err)
	}
	r := analyzer(t).Analyze(&Bundle{Source: "b", Files: []File{{Name: "ethtool_-m_eth0.txt", Data: data}}})
	if len(r.Findings) != 0 || r.Files[0].Note != "" || r.Files[0].Kind != KindModuleDump {
		t.Errorf("findings %+v, files %+v", r.Findings, r.Files)
	}
	var in phyInputs
	if err := in.addModule("ethtool_-m_eth0.txt", "page addr=0x50 bank=0 page=0x00\n00: zz\n"); err == nil {
		t.Error("no error for a bad row")
	}
}

// TestAdminDownNotLinkDown checks that ethtool's "Link detected: no" of
// an interface netdev_sysfs.txt shows administratively down is no
// finding, as NICLinkDown needs the interface up; an up one stays.
func TestAdminDownNotLinkDown(t *testing.T) {
	b := &Bundle{Source: "b", Files: []File{
		{Name: "ethtool_eth0.txt", Data: []byte("Settings for eth0:\n\tLink detected: no\n")},
		{Name: "ethtool_eth1.txt", Data: []byte("Settings for eth1:\n\tLink detected: no\n")},
		{Name: "netdev_sysfs.txt", Data: []byte("eth0/operstate:down\neth0/flags:0x1002\neth1/operstate:down\neth1/carrier:0\neth1/flags:0x1003\n")},
	}}
	r := analyzer(t).Analyze(b)
	if len(r.Findings) != 1 || r.Findings[0].Device != "eth1" || r.Findings[0].Alert != "NICLinkDown" {
		t.Errorf("findings %+v, want NICLinkDown of eth1 only", r.Findings)
	}
}

// TestEarlierSampleWithinBundleLimits checks that the earlier sample's
// files count against the bundle's line limit with the later sample's:
// the two together are analysed up to it, not each.
func TestEarlierSampleWithinBundleLimits(t *testing.T) {
	manifest := `{"tool": "nic_exporter collect", "samples": [` +
		`{"dir": "earlier_sample", "time": "2026-01-02T03:04:05Z", "uptime_seconds": 86400},` +
		`{"dir": "", "time": "2026-01-02T03:04:15Z", "uptime_seconds": 86410}]}`
	sysfs := strings.Repeat("eth0/carrier:1\n", 60)
	lim := Limits{MaxFileSize: 1 << 20, MaxTotal: 1 << 22, MaxFiles: 100, MaxLineBytes: 1024, MaxFileLines: 1000, MaxBundleLines: 100}
	r := analyzer(t).Analyze(&Bundle{Source: "b", Limits: lim, Files: []File{
		{Name: "earlier_sample/netdev_sysfs.txt", Data: []byte(sysfs)},
		{Name: "manifest.json", Data: []byte(manifest)},
		{Name: "netdev_sysfs.txt", Data: []byte(sysfs)},
	}})
	if r.linesAnalysed > lim.MaxBundleLines {
		t.Errorf("%d lines analysed, want at most %d", r.linesAnalysed, lim.MaxBundleLines)
	}
	for _, f := range r.Files {
		if f.Name == "earlier_sample/netdev_sysfs.txt" && !strings.Contains(f.Note, "analysed") {
			t.Errorf("the earlier sample's file was not cut: %+v", f)
		}
	}
}

func FuzzParseManifest(f *testing.F) {
	f.Add([]byte(`{"tool": "nic_exporter collect", "samples": [{"dir": "", "time": "2026-01-02T03:04:15Z", "uptime_seconds": 600}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseManifest(data)
		if err == nil {
			m.sample("")
			rdmaDir("hw_counters_mlx5_0_1.txt", m)
		}
	})
}
