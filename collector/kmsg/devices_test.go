package kmsg

import (
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/zap"
)

// sysfsTree builds a small sysfs tree: an Ethernet function with an RDMA
// device renamed by rdma-core (rocep8s0f0), an InfiniBand function, a root
// port and a GPU.
func sysfsTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, rel string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	for addr, class := range map[string]string{
		"0000:08:00.0": "0x020000\n", // ConnectX Ethernet
		"0000:09:00.0": "0x020700\n", // ConnectX InfiniBand
		"0000:00:01.1": "0x060400\n", // root port
		"0000:3b:00.0": "0x030200\n", // GPU
	} {
		dev := filepath.Join("devices", "pci0000:00", addr)
		write(filepath.Join(dev, "class"), class)
		link(filepath.Join("..", "..", "..", dev), filepath.Join("bus", "pci", "devices", addr))
	}
	write("devices/pci0000:00/0000:08:00.0/infiniband/rocep8s0f0/node_type", "1: CA\n")
	// An ENA function with its interface, and an mlx5 PF in switchdev
	// mode with its uplink and a VF representor.
	write(filepath.Join("devices", "pci0000:00", "0000:00:05.0", "class"), "0x020000\n")
	link(filepath.Join("..", "..", "..", "devices", "pci0000:00", "0000:00:05.0"), filepath.Join("bus", "pci", "devices", "0000:00:05.0"))
	write("devices/pci0000:00/0000:00:05.0/net/ens5/ifindex", "2\n")
	write("devices/pci0000:00/0000:08:00.0/net/enp8s0f0np0/ifindex", "3\n")
	write("devices/pci0000:00/0000:08:00.0/net/pf0vf0/ifindex", "4\n")
	link("../../devices/pci0000:00/0000:08:00.0/infiniband/rocep8s0f0", "class/infiniband/rocep8s0f0")
	link("../../../0000:08:00.0", "devices/pci0000:00/0000:08:00.0/infiniband/rocep8s0f0/device")
	// A software RDMA device (rxe) has no PCI function.
	write("devices/virtual/infiniband/rxe0/node_type", "1: CA\n")
	link("../../devices/virtual/infiniband/rxe0", "class/infiniband/rxe0")
	link("../../../virtual/net/veth0", "devices/virtual/infiniband/rxe0/device")
	return root
}

func TestSysfsDevices(t *testing.T) {
	d := SysfsDevices(sysfsTree(t))
	for _, tc := range []struct {
		addr  string
		class uint32
		ok    bool
	}{
		{"0000:08:00.0", 0x020000, true},
		{"0000:09:00.0", 0x020700, true},
		{"0000:00:01.1", 0x060400, true},
		{"0000:77:00.0", 0, false},
		{"../../etc", 0, false},
	} {
		class, ok := d.PCIClass(tc.addr)
		if class != tc.class || ok != tc.ok {
			t.Errorf("PCIClass(%q) = %#x, %v, want %#x, %v", tc.addr, class, ok, tc.class, tc.ok)
		}
	}
	for _, tc := range []struct{ name, addr string }{
		{"rocep8s0f0", "0000:08:00.0"},
		{"rxe0", ""},
		{"mlx5_9", ""},
		{"..", ""},
	} {
		addr, ok := d.RDMAFunction(tc.name)
		if addr != tc.addr || ok != (tc.addr != "") {
			t.Errorf("RDMAFunction(%q) = %q, %v, want %q", tc.name, addr, ok, tc.addr)
		}
	}
	for _, tc := range []struct{ addr, name string }{
		{"0000:00:05.0", "ens5"},
		{"0000:08:00.0", ""}, // uplink and representor: ambiguous
		{"0000:09:00.0", ""}, // no interface
		{"0000:77:00.0", ""},
		{"../../etc", ""},
	} {
		name, ok := d.NetInterface(tc.addr)
		if name != tc.name || ok != (tc.name != "") {
			t.Errorf("NetInterface(%q) = %q, %v, want %q", tc.addr, name, ok, tc.name)
		}
	}
}

// TestKmsgDevices checks what the collector does with the answers: RDMA
// names become the PCI function, NICOnly events of other functions are not
// counted, and functions sysfs does not know are counted.
func TestKmsgDevices(t *testing.T) {
	k := New(Config{
		Open:    func() (Device, error) { return newFakeKmsg(), nil },
		Rules:   kernelEngine(t),
		Replay:  true,
		Devices: SysfsDevices(sysfsTree(t)),
	}, zap.NewNop())
	for _, tc := range []struct {
		msg  string
		want kmsgKey
		ok   bool
	}{
		{"infiniband rocep8s0f0: dump_cqe:277:(pid 0): WC error: 6, Message: memory bind operation error",
			kmsgKey{"mlx5_ib", "0000:08:00.0", "mlx5_ib_wc_error"}, true},
		// An RDMA device sysfs does not know keeps its name.
		{"infiniband mlx5_bond_0: mlx5_handle_error_cqe:333:(pid 0): WC error: 10, message: remote access error",
			kmsgKey{"mlx5_ib", "mlx5_bond_0", "mlx5_ib_wc_error"}, true},
		{"pcieport 0000:00:01.1: AER: Uncorrectable (Fatal) error message received from 0000:09:00.0",
			kmsgKey{"pci", "0000:09:00.0", "pcie_aer_fatal"}, true},
		// The root port reporting its own error, and a GPU: no NICs.
		{"pcieport 0000:00:01.1: AER: Uncorrectable (Non-Fatal) error message received from 0000:00:01.1", kmsgKey{}, false},
		{"nvidia 0000:3b:00.0: 126.024 Gb/s available PCIe bandwidth, limited by 16.0 GT/s PCIe x8 link at 0000:3a:00.0 (capable of 252.048 Gb/s with 16.0 GT/s PCIe x16 link)", kmsgKey{}, false},
		// Unknown to sysfs: counted.
		{"pcieport 0000:00:01.1: AER: Corrected error received: 0000:77:00.0",
			kmsgKey{"pci", "0000:77:00.0", "pcie_aer_corrected"}, true},
		{"iavf 0000:00:05.0 enp0s5: NETDEV WATCHDOG: CPU: 1: transmit queue 0 timed out 5692 ms",
			kmsgKey{"iavf", "enp0s5", "netdev_watchdog"}, true},
		// ENA lines that name only the function count under its one
		// interface, the device label of its ethtool series.
		{"ena 0000:00:05.0: Device reset completed successfully, Driver info: Elastic Network Adapter (ENA) v2.8.0g",
			kmsgKey{"ena", "ens5", "ena_reset_completed"}, true},
		{"ena 0000:00:05.0 (unnamed net_device) (uninitialized): Reg read32 timeout occurred",
			kmsgKey{"ena", "ens5", "ena_reset_reg_read_timeout"}, true},
		// A function with several interfaces keeps its address.
		{"mlx5_core 0000:08:00.0: TX timeout on queue: 3, SQ: 0x10a, CQ: 0x40b, SQ Cons: 0x0 SQ Prod: 0x1, usecs since last trans: 10000",
			kmsgKey{"mlx5_core", "0000:08:00.0", "mlx5e_tx_timeout"}, true},
	} {
		got, ok := k.classify(tc.msg, "")
		if got != tc.want || ok != tc.ok {
			t.Errorf("%q: got %+v %v, want %+v %v", tc.msg, got, ok, tc.want, tc.ok)
		}
	}
}
