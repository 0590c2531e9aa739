package netdev

import (
	"net"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// TestNetdevForeignNamespace polls a network namespace the test creates,
// holding lo and a veth pair, through the exporter's own sysfs (which
// shows the test's namespace, not that one), as --collector.netdev.netns
// does. It requires the namespace's interfaces with their state, MTU,
// statistics and MAC address from rtnetlink, and no speed, driver or PCIe
// series: the veths have no device, and the sysfs of this namespace must
// not be read for them.
func TestNetdevForeignNamespace(t *testing.T) {
	// Deleting the namespace at the end deletes the veth pair inside it.
	ns, netns := testenv.Netns(t, "nicexp-ndf")
	run := func(args ...string) { t.Helper(); testenv.Run(t, args...) }
	run("ip", "netns", "exec", ns, "sh", "-c", "[ -d /proc/sys/net/ipv6 ] || exit 0; "+
		"sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1")
	run("ip", "-n", ns, "link", "set", "lo", "up")
	run("ip", "-n", ns, "link", "add", "fx0", "mtu", "1400", "address", "02:00:5e:00:53:01", "type", "veth",
		"peer", "name", "fy0", "mtu", "1400", "address", "02:00:5e:00:53:02")
	run("ip", "-n", ns, "link", "set", "fx0", "up")
	loopbackTraffic(t, netns, 7)

	links, err := NewRtnlLinks(netns)
	if err != nil {
		t.Fatal(err)
	}
	defer links.Close()
	snap, errs := pollOnce(t, New(Config{SysfsPath: "/sys", Links: links, ForeignNamespace: true}, zap.NewNop()))
	if got := errs.Counts(); len(got) != 0 {
		t.Errorf("source errors: %v", got)
	}
	if snap.Devices() != 3 {
		t.Errorf("devices %d, want 3 (lo, fx0, fy0)", snap.Devices())
	}
	out := snap.String()
	for _, want := range []string{
		`nic_netdev_info{device="lo",address="00:00:00:00:00:00",driver="",pci_address=""} 1`,
		`nic_netdev_info{device="fx0",address="02:00:5e:00:53:01",driver="",pci_address=""} 1`,
		`nic_netdev_info{device="fy0",address="02:00:5e:00:53:02",driver="",pci_address=""} 1`,
		`nic_netdev_rx_packets_total{device="lo"} 7`,
		`nic_netdev_tx_packets_total{device="lo"} 7`,
		`nic_netdev_mtu_bytes{device="lo"} 65536`,
		`nic_netdev_mtu_bytes{device="fx0"} 1400`,
		`nic_netdev_admin_up{device="fx0"} 1`,
		`nic_netdev_admin_up{device="fy0"} 0`,
		// fx0 is up but its peer is not: no carrier.
		`nic_netdev_carrier{device="fx0"} 0`,
		`nic_netdev_oper_state{device="fx0"} 7`,
		`nic_netdev_oper_state{device="fy0"} 2`,
		`nic_netdev_rx_otherhost_dropped_total{device="fx0"} 0`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("poll lacks %q", want)
		}
	}
	for _, absent := range []string{"nic_netdev_speed_bytes_per_second", "nic_pcie_"} {
		if strings.Contains(out, absent) {
			t.Errorf("poll has %s, which only this namespace's sysfs knows", absent)
		}
	}
	// The carrier of a down interface is absent, as for this namespace.
	if strings.Contains(out, `nic_netdev_carrier{device="fy0"}`) {
		t.Errorf("poll has a carrier for the administratively down fy0")
	}
	// None of this namespace's own interfaces is listed (lo is the
	// foreign one).
	own, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, ifc := range own {
		if ifc.Name == "lo" {
			continue
		}
		if strings.Contains(out, `device="`+ifc.Name+`"`) {
			t.Errorf("poll lists %s of the test's own namespace", ifc.Name)
		}
	}
}

// TestNetdevForeignDeviceFacts polls the test's own namespace twice, as
// its own (sysfs under /sys/class/net) and as if it were another one
// (rtnetlink's address and parent device, the device under
// /sys/bus/<bus>/devices): the MAC address, driver, PCI address, PCIe
// link and NUMA node must be the same either way. On a host whose
// interfaces are backed by devices (a virtio-net or PCI NIC) this checks
// the parent device lookup against the kernel's own links.
func TestNetdevForeignDeviceFacts(t *testing.T) {
	testenv.Root(t)
	links, err := NewRtnlLinks("")
	if err != nil {
		t.Fatal(err)
	}
	defer links.Close()
	own, _ := pollOnce(t, New(Config{SysfsPath: "/sys", Links: links}, zap.NewNop()))
	foreign, errs := pollOnce(t, New(Config{SysfsPath: "/sys", Links: links, ForeignNamespace: true}, zap.NewNop()))
	if got := errs.Counts(); len(got) != 0 {
		t.Errorf("source errors: %v", got)
	}
	facts := func(s string) []string {
		var out []string
		for _, l := range strings.Split(s, "\n") {
			if strings.HasPrefix(l, "nic_netdev_info{") || strings.HasPrefix(l, "nic_pcie_") {
				out = append(out, l)
			}
		}
		return out
	}
	want := facts(own.String())
	if len(want) == 0 {
		t.Fatal("no nic_netdev_info in a poll of the test's namespace")
	}
	if d := cmp.Diff(want, facts(foreign.String())); d != "" {
		t.Errorf("device facts from sysfs (-) and from rtnetlink's parent device (+) differ:\n%s", d)
	}
	if strings.Contains(foreign.String(), "nic_netdev_speed_bytes_per_second") {
		t.Error("the foreign poll has a link speed, which only the interface's own sysfs directory has")
	}
}
