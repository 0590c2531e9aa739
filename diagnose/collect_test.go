package diagnose

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	r := &Report{}
	NewAnalyzer(nil).pciSysfsFindings(r, "pci_sysfs.txt", fns)
	var got []string
	for _, fd := range r.Findings {
		got = append(got, fd.Alert+" "+fd.Device+" "+fd.Evidence)
	}
	want := []string{"NICPCIeLinkDegraded 0000:08:00.1 pci_sysfs.txt:3", "NICPCIeAERUncorrectable 0000:08:00.1 pci_sysfs.txt:8"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
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
	r := &Report{}
	NewAnalyzer(nil).netdevSysfsFindings(r, "netdev_sysfs.txt", ifs)
	if len(r.Findings) != 1 || r.Findings[0].Device != "enp8s0f1np1" || r.Findings[0].Evidence != "netdev_sysfs.txt:2" || r.Findings[0].Alert != "NICLinkDown" {
		t.Errorf("findings %+v", r.Findings)
	}
	// An interface ethtool already showed down is not named twice.
	NewAnalyzer(nil).netdevSysfsFindings(r, "netdev_sysfs.txt", ifs)
	if len(r.Findings) != 1 {
		t.Errorf("duplicate finding: %+v", r.Findings)
	}
	for _, bad := range []string{"eth0/carrier:2\n", "eth0/flags:up\n", "\n"} {
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

// TestEarlierSampleIgnored checks that the first sample of a collect
// bundle gives no findings of its own.
func TestEarlierSampleIgnored(t *testing.T) {
	b := &Bundle{Source: "b", Files: []File{
		{Name: "earlier_sample/pci_sysfs.txt", Data: []byte(pciSysfsSample)},
	}}
	r := NewAnalyzer(rules(t)).Analyze(b)
	if len(r.Findings) != 0 || !strings.Contains(r.Files[0].Note, "earlier sample") {
		t.Errorf("findings %+v, files %+v", r.Findings, r.Files)
	}
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

// TestModuleFindingsHealthy reads a real CMIS module dump (its source is
// named in the file) as collect writes module memory: its receive power
// is within its thresholds, so no finding.
func TestModuleFindingsHealthy(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "internal", "sff", "testdata", "cmis-cig-qsfpdd-400g-lr4.dump"))
	if err != nil {
		t.Fatal(err)
	}
	r := &Report{}
	if err := NewAnalyzer(nil).moduleFindings(r, "ethtool_-m_eth0.txt", string(data)); err != nil {
		t.Fatal(err)
	}
	if len(r.Findings) != 0 {
		t.Errorf("findings %+v", r.Findings)
	}
	if err := NewAnalyzer(nil).moduleFindings(r, "ethtool_-m_eth0.txt", "page addr=0x50 bank=0 page=0x00\n00: zz\n"); err == nil {
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
	r := NewAnalyzer(rules(t)).Analyze(b)
	if len(r.Findings) != 1 || r.Findings[0].Device != "eth1" || r.Findings[0].Alert != "NICLinkDown" {
		t.Errorf("findings %+v, want NICLinkDown of eth1 only", r.Findings)
	}
}
