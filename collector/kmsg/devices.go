package kmsg

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/nic-exporter/nic_exporter/internal/logrules"
	"github.com/nic-exporter/nic_exporter/internal/sysfs"
)

// Devices answers the two questions the collector asks about the devices
// a log line names. main hands in the host's sysfs (SysfsDevices) or the
// demo host's tree.
type Devices interface {
	// PCIClass returns the 24-bit PCI class code of the function at the
	// PCI address addr (0x020000 for an Ethernet controller), and false
	// when the function is unknown.
	PCIClass(addr string) (class uint32, ok bool)
	// RDMAFunction returns the PCI address of the function behind the
	// RDMA device name (mlx5_0, rocep8s0f0, mlx5_bond_0), and false when
	// there is no such RDMA device or it is not a PCI function.
	RDMAFunction(name string) (addr string, ok bool)
	// NetInterface returns the network interface of the function at the
	// PCI address addr, and false unless it has exactly one (none while
	// a probe fails; an mlx5 PF in switchdev mode also lists its
	// representors).
	NetInterface(addr string) (name string, ok bool)
}

// IsNICClass reports whether class is a network controller (PCI base class
// 0x02, which includes InfiniBand controllers, 0x0207).
func IsNICClass(class uint32) bool { return class>>16 == 0x02 }

// SysfsDevices returns Devices reading the sysfs tree mounted at root
// (normally /sys): bus/pci/devices/<address>/class and net/, and the
// device link of class/infiniband/<name>. Every question reads sysfs afresh, so functions
// and RDMA devices that appear later are known; questions are asked only
// for matching lines, which are rare.
func SysfsDevices(root string) Devices { return sysfsDevices{root: root} }

type sysfsDevices struct{ root string }

func (s sysfsDevices) PCIClass(addr string) (uint32, bool) {
	if !logrules.IsPCIAddress(addr) {
		return 0, false
	}
	v, err := sysfs.ReadAttr(filepath.Join(s.root, "bus", "pci", "devices", addr, "class"))
	if err != nil {
		return 0, false
	}
	class, err := parseClass(v)
	if err != nil {
		return 0, false
	}
	return class, true
}

// parseClass parses a sysfs class attribute such as "0x020000".
func parseClass(s string) (uint32, error) {
	v, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(s), "0x"), 16, 24)
	if err != nil {
		return 0, fmt.Errorf("PCI class %q: %w", s, err)
	}
	return uint32(v), nil
}

func (s sysfsDevices) NetInterface(addr string) (string, bool) {
	if !logrules.IsPCIAddress(addr) {
		return "", false
	}
	entries, err := os.ReadDir(filepath.Join(s.root, "bus", "pci", "devices", addr, "net"))
	if err != nil || len(entries) != 1 {
		return "", false
	}
	return entries[0].Name(), true
}

func (s sysfsDevices) RDMAFunction(name string) (string, bool) {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return "", false
	}
	target, err := os.Readlink(filepath.Join(s.root, "class", "infiniband", name, "device"))
	if err != nil {
		return "", false
	}
	addr := filepath.Base(target)
	if !logrules.IsPCIAddress(addr) {
		return "", false
	}
	return addr, true
}
