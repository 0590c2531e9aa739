package main

import (
	"net"
	"strings"
	"testing"

	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// TestNetdevNetns runs the built binary with --collector.netdev.netns at
// a namespace the test creates with a veth pair, and requires that
// namespace's interfaces in the scrape, not the test's own.
func TestNetdevNetns(t *testing.T) {
	ns, nsPath := testenv.Netns(t, "nicexp-cmdns")
	run := func(args ...string) { t.Helper(); testenv.Run(t, args...) }
	run("ip", "-n", ns, "link", "add", "nsx0", "mtu", "1400", "address", "02:00:5e:00:53:11", "type", "veth", "peer", "name", "nsy0")
	run("ip", "-n", ns, "link", "set", "nsx0", "up")

	e := start(t, "--no-collector.kmsg", "--no-collector.vma", "--no-collector.applog", "--no-collector.devlink",
		"--no-collector.ethtool", "--no-collector.infiniband", "--collector.netdev.netns="+nsPath)
	scrape, _ := e.get(t, "/metrics", nil)
	for _, want := range []string{
		`nic_netdev_mtu_bytes{device="nsx0"} 1400`,
		`nic_netdev_admin_up{device="nsy0"} 0`,
		`nic_netdev_info{device="nsx0",address="02:00:5e:00:53:11",driver="",pci_address=""} 1`,
		`nic_exporter_collector_devices{collector="netdev"} 3`, // lo, nsx0, nsy0
		`nic_exporter_collector_up{collector="netdev"} 1`,
	} {
		if !strings.Contains(scrape, want) {
			t.Errorf("scrape lacks %q", want)
		}
	}
	own, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, ifc := range own {
		if ifc.Name != "lo" && strings.Contains(scrape, `nic_netdev_up{device="`+ifc.Name+`"}`) {
			t.Errorf("scrape has %s of the test's own namespace", ifc.Name)
		}
	}
}
