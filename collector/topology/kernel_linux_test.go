package topology

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/collectortest"
	"github.com/nic-exporter/nic_exporter/internal/testenv/guest"
)

// TestTopologyKernel boots a real kernel (Debian's) under qemu's q35
// machine with a PCIe switch, qemu's TI X3130 (x3130-upstream with two
// xio3130-downstream ports) behind a root port, carrying an e1000e NIC on
// one downstream port and a virtio-gpu-pci function, standing in for a
// GPU, on the other; a virtio-net NIC sits on a second root port. In the
// guest it checks that Scan places both NICs as the kernel's sysfs shows
// them and that its reading of the bridges (root port, then upstream and
// downstream port of each switch) is the port type each bridge's PCI
// Express capability states in its configuration space; that the e1000e
// and the stand-in are PIX (one switch) and the virtio-net and the
// stand-in PHB (through the root complex), and Pair pairs them so; and
// that the collector exports root_port and pcie_switch as found. The
// stand-in is not an NVIDIA function, so the collector itself pairs it
// with nothing: the test hands it to Pair as a GPU.
func TestTopologyKernel(t *testing.T) {
	if guest.InGuest() {
		topologyGuestChecks(t)
		return
	}
	res := guest.RunTest(t, guest.Config{
		Run:     "^TestTopologyKernel$",
		Args:    []string{"-test.v"},
		Modules: []string{"e1000e", "virtio_pci", "virtio_net"},
		QemuArgs: []string{"-machine", "q35",
			"-device", "pcie-root-port,id=rp1,chassis=1,slot=1",
			"-device", "x3130-upstream,id=up1,bus=rp1",
			"-device", "xio3130-downstream,id=dn1,bus=up1,chassis=2,slot=0",
			"-device", "xio3130-downstream,id=dn2,bus=up1,chassis=3,slot=1",
			"-device", "e1000e,bus=dn1,id=nic1",
			"-device", "virtio-gpu-pci,bus=dn2,id=gpu1",
			"-device", "pcie-root-port,id=rp2,chassis=4,slot=2",
			"-device", "virtio-net-pci,bus=rp2,id=nic2",
		},
	})
	if !strings.Contains(res.Output, "--- PASS: TestTopologyKernel") {
		t.Errorf("the guest did not run the checks; output:\n%s", res.Output)
	}
}

// PCI Express port types (PCI Express Capabilities register, bits 7:4).
const (
	portRoot       = 4
	portUpstream   = 5
	portDownstream = 6
)

// pcieType reads the device/port type of the function at the sysfs
// directory dir from its PCI Express capability, walking the capability
// list of its configuration space.
func pcieType(dir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "config"))
	if err != nil {
		return 0, err
	}
	if len(b) < 0x40 || b[0x06]&0x10 == 0 {
		return 0, fmt.Errorf("%s: no capability list", dir)
	}
	for p, n := int(b[0x34]&^3), 0; p != 0 && n < 48; n++ {
		if p+4 > len(b) {
			return 0, fmt.Errorf("%s: capability at %#x beyond the %d bytes read", dir, p, len(b))
		}
		if b[p] == 0x10 {
			return int(binary.LittleEndian.Uint16(b[p+2:]) >> 4 & 0xf), nil
		}
		p = int(b[p+1] &^ 3)
	}
	return 0, fmt.Errorf("%s: no PCI Express capability", dir)
}

// topologyGuestChecks runs in the guest.
func topologyGuestChecks(t *testing.T) {
	h, err := Scan("/sys", "", func(string) bool { return true }, func(k string, err error) { t.Errorf("%s: %v", k, err) })
	if err != nil {
		t.Fatal(err)
	}
	byDriver := make(map[string]NIC)
	for _, n := range h.NICs {
		drv, err := os.Readlink(filepath.Join("/sys/bus/pci/devices", n.Address, "driver"))
		if err != nil {
			t.Fatal(err)
		}
		byDriver[filepath.Base(drv)] = n
		t.Logf("NIC %s %v: host bridge %s, bridges %v, NUMA node %d", n.Address, n.Devices, n.HostBridge, n.Bridges, n.NUMANode)
	}
	e1000e, ok1 := byDriver["e1000e"]
	virtio, ok2 := byDriver["virtio-pci"]
	if !ok1 || !ok2 || len(h.NICs) != 2 {
		t.Fatalf("NICs by driver %v, want e1000e and virtio-pci", byDriver)
	}
	// The stand-in: virtio-gpu (vendor 0x1af4, device 0x1050).
	s := &scanner{root: "/sys", realRoot: "/sys", report: func(k string, err error) { t.Errorf("%s: %v", k, err) }}
	var standIn Function
	entries, err := os.ReadDir("/sys/bus/pci/devices")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		dev, _ := os.ReadFile(filepath.Join("/sys/bus/pci/devices", e.Name(), "device"))
		if strings.TrimSpace(string(dev)) == "0x1050" {
			f, ok := s.function(filepath.Join("/sys/bus/pci/devices", e.Name()), true)
			if !ok {
				t.Fatalf("%s: not placed", e.Name())
			}
			standIn = f
		}
	}
	if standIn.Address == "" {
		t.Fatal("no virtio-gpu function")
	}
	t.Logf("stand-in %s: bridges %v", standIn.Address, standIn.Bridges)
	if len(h.GPUs) != 0 {
		t.Errorf("GPUs %+v on a guest without NVIDIA functions", h.GPUs)
	}

	// Scan's reading of the bridges against their PCI Express port types.
	for _, f := range []Function{e1000e.Function, standIn} {
		if len(f.Bridges) != 3 {
			t.Fatalf("%s: bridges %v, want root port, upstream, downstream", f.Address, f.Bridges)
		}
	}
	if len(virtio.Bridges) != 1 {
		t.Fatalf("virtio-net %s: bridges %v, want its root port", virtio.Address, virtio.Bridges)
	}
	for _, f := range []Function{e1000e.Function, standIn, virtio.Function} {
		for i, b := range f.Bridges {
			want := portDownstream
			switch {
			case i == 0:
				want = portRoot
			case i%2 == 1:
				want = portUpstream
			}
			got, err := pcieType(filepath.Join("/sys/bus/pci/devices", b))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: bridge %d %s: PCI Express port type %d", f.Address, i, b, got)
			if got != want {
				t.Errorf("%s: bridge %d (%s) has port type %d, Scan reads it as %d", f.Address, i, b, got, want)
			}
		}
	}
	if e1000e.Switch() != standIn.Switch() || e1000e.Switch() == "" || e1000e.Bridges[2] == standIn.Bridges[2] {
		t.Errorf("e1000e %v and the stand-in %v are not on two downstream ports of one switch", e1000e.Bridges, standIn.Bridges)
	}
	if virtio.Switch() != "" || virtio.RootPort() == e1000e.RootPort() {
		t.Errorf("virtio-net %v is not alone on its own root port", virtio.Bridges)
	}

	// The links and the pairing.
	if l := Classify(e1000e.Function, standIn); l != LinkPIX {
		t.Errorf("e1000e to the stand-in: %v, want PIX", l)
	}
	if l := Classify(virtio.Function, standIn); l != LinkPHB {
		t.Errorf("virtio-net to the stand-in: %v, want PHB", l)
	}
	rows := Pair(Host{NICs: h.NICs, GPUs: []GPU{{Function: standIn}}}, Rails{Auto: true})
	for _, r := range rows {
		want, rail := LinkPHB, ""
		if r.NIC.Address == e1000e.Address {
			want, rail = LinkPIX, "0"
		}
		if r.GPU == nil || r.GPU.Address != standIn.Address || r.Link != want || r.Rail != rail {
			t.Errorf("%s: GPU %+v link %v rail %q, want the stand-in, %v, %q", r.NIC.Address, r.GPU, r.Link, r.Rail, want, rail)
		}
	}

	// The collector's series.
	f, err := collector.NewNameFilter("collector.topology.device", "", "")
	if err != nil {
		t.Fatal(err)
	}
	res := collectortest.MustPoll(t, New(Config{SysfsPath: "/sys", GPUInfoDir: "/proc/driver/nvidia/gpus", Filter: f}, zap.NewNop()), nil)
	series := collectortest.Series(t, res.Text)
	for _, n := range []NIC{e1000e, virtio} {
		for _, d := range n.Devices {
			k := fmt.Sprintf(`nic_topology_info{device=%q,gpu_index="",gpu_link="",gpu_pci="",gpu_pci_bus_id="",gpu_uuid="",numa_node=%q,pci_address=%q,pcie_switch=%q,rail="",root_port=%q}`,
				d, fmt.Sprint(n.NUMANode), n.Address, n.Switch(), n.RootPort())
			if _, ok := series[k]; !ok {
				t.Errorf("no series %s in:\n%s", k, res.Text)
			}
		}
	}
	if len(series) != len(e1000e.Devices)+len(virtio.Devices) {
		t.Errorf("%d series, want one per NIC device:\n%s", len(series), res.Text)
	}
}
