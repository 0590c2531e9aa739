package netdev

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/internal/sysfs"
)

// staticLinks is a LinkSource that returns the same links every poll.
type staticLinks []Link

func (s staticLinks) Links(filter collector.NameFilter, _ *collector.Poll) ([]Link, error) {
	var out []Link
	for _, l := range s {
		if filter.Match(l.Name) {
			out = append(out, l)
		}
	}
	return out, nil
}

// TestForeignNamespaceReadsOnlyTheDevice polls links of another
// namespace against the fixture sysfs tree, whose /sys/class/net has
// interfaces of the same names but other values. Only the devices that
// rtnetlink names are read, through /sys/bus/<bus>/devices; nothing of
// the same-named interfaces of this namespace.
func TestForeignNamespaceReadsOnlyTheDevice(t *testing.T) {
	root := sysfsFixture(t)
	dev := filepath.Join(root, "bus/pci/devices/0000:08:00.1")
	if err := os.MkdirAll(filepath.Dir(dev), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../../devices/pci0000:00/0000:00:01.1/0000:08:00.1", dev); err != nil {
		t.Fatal(err)
	}
	up := sysfs.Optional{V: 1, OK: true}
	links := staticLinks{
		// A ConnectX port moved into the namespace: its PCI function
		// is in the fixture; its MAC address is not the one of the
		// fixture's same-named interface.
		{Name: "enp8s0f1np1", Index: 9, AdminUp: up, OperState: "up", Carrier: up, MTU: sysfs.Optional{V: 1500, OK: true},
			Address: "02:00:5e:00:53:01", ParentDev: "0000:08:00.1", ParentBus: "pci"},
		// Same name as a fixture interface with a PCI device, but no
		// device of its own (a veth): no driver, no PCIe.
		{Name: "ens5", Index: 10, AdminUp: up, OperState: "up", Address: "02:00:5e:00:53:02"},
		// A device the kernel names that this sysfs does not have, and
		// names that are not one path element: ignored.
		{Name: "gone0", Index: 11, ParentDev: "0000:99:00.0", ParentBus: "pci"},
		{Name: "evil0", Index: 12, ParentDev: "..", ParentBus: "pci"},
		{Name: "evil1", Index: 13, ParentDev: "0000:08:00.1", ParentBus: "../bus/pci"},
	}
	snap, errs := pollOnce(t, New(Config{SysfsPath: root, Links: links, ForeignNamespace: true}, zap.NewNop()))
	if got := errs.Counts(); len(got) != 0 {
		t.Errorf("source errors: %v", got)
	}
	golden(t, "foreign.prom", snap.String())
	out := snap.String()
	for _, absent := range []string{"nic_netdev_speed_bytes_per_second", `fc:4c:ea:f9:42:35`, `nic_pcie_numa_node{device="ens5"`, `driver="ena"`} {
		if strings.Contains(out, absent) {
			t.Errorf("poll has %s, from this namespace's sysfs", absent)
		}
	}
}

func TestHWAddr(t *testing.T) {
	for _, tt := range []struct {
		in   []byte
		want string
	}{
		{nil, ""},
		{[]byte{0, 0, 0, 0, 0, 0}, "00:00:00:00:00:00"},
		{[]byte{0xfc, 0x4c, 0xea, 0xf9, 0x42, 0x35}, "fc:4c:ea:f9:42:35"},
		{[]byte{0x80, 0, 0x10, 0x29, 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0xb8, 0x59, 0x9f, 0x03, 0, 0xd7, 0x5b, 0x3c}, "80:00:10:29:fe:80:00:00:00:00:00:00:b8:59:9f:03:00:d7:5b:3c"}, // IPoIB
	} {
		if got := hwAddr(tt.in); got != tt.want {
			t.Errorf("hwAddr(%x) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
