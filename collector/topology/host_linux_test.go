package topology_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nic-exporter/nic_exporter/collector/topology"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// pciBusInfo matches a PCI address in ethtool -i's bus-info line.
var pciBusInfo = regexp.MustCompile(`^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)

// TestHostMatchesEthtool scans this host's /sys and checks the result
// against the kernel's own answer through another path, the
// ETHTOOL_GDRVINFO ioctl (ethtool -i): every interface whose bus-info is a
// PCI address is a device of the NIC at that address, and no other
// interface is a NIC device. Each NIC's address must have its directory
// in /sys/bus/pci/devices, and so must every bridge above it.
func TestHostMatchesEthtool(t *testing.T) {
	ethtool := testenv.LookPath(t, "ethtool")
	h, err := topology.Scan("/sys", "/proc/driver/nvidia/gpus", func(string) bool { return true }, func(k string, err error) { t.Errorf("%s: %v", k, err) })
	if err != nil {
		t.Fatal(err)
	}
	nicOf := make(map[string]string)
	for _, n := range h.NICs {
		for _, d := range n.Devices {
			nicOf[d] = n.Address
		}
		for _, a := range append([]string{n.Address}, n.Bridges...) {
			if _, err := os.Stat(filepath.Join("/sys/bus/pci/devices", a)); err != nil {
				t.Errorf("NIC %s: %v", n.Address, err)
			}
		}
	}
	ifaces, err := os.ReadDir("/sys/class/net")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, e := range ifaces {
		name := e.Name()
		out, err := exec.Command(ethtool, "-i", name).Output()
		if err != nil {
			continue // no driver information (lo on old kernels)
		}
		bus := ""
		for _, line := range strings.Split(string(out), "\n") {
			if v, ok := strings.CutPrefix(line, "bus-info:"); ok {
				bus = strings.TrimSpace(v)
			}
		}
		ppn, _ := os.ReadFile(filepath.Join("/sys/class/net", name, "phys_port_name"))
		_, vf := os.Lstat(filepath.Join("/sys/class/net", name, "device", "physfn"))
		if !pciBusInfo.MatchString(bus) || strings.Contains(string(ppn), "vf") || vf == nil {
			if a, ok := nicOf[name]; ok {
				t.Errorf("%s (bus-info %q) is a device of NIC %s", name, bus, a)
			}
			continue
		}
		checked++
		if got := nicOf[name]; got != bus {
			t.Errorf("%s: NIC %q, ethtool -i bus-info %q", name, got, bus)
		}
	}
	t.Logf("%d interfaces on PCI checked, %d NIC functions, %d GPUs", checked, len(h.NICs), len(h.GPUs))
}
