package netdev

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/nic-exporter/nic_exporter/collector"
)

// readIface returns what one poll exports of the interface l: the link
// source's values and, for interfaces of the namespace SysfsPath shows,
// the sysfs attributes of root/<name>.
//
// An interface of another network namespace (ForeignNamespace) has no
// directory there. Sysfs binds its network namespace when it is mounted:
// /sys/class/net, and the net/ directory of a device under /sys/devices,
// list only the interfaces of the namespace of the process that mounted
// it. The same name under /sys/class/net is either missing or a different
// interface of this namespace (every namespace has its own lo, and often
// its own eth0), so reading it would attach this namespace's speed, MAC
// address, driver and PCIe link to the foreign interface. Instead:
//
//   - state, carrier, carrier changes, MTU, statistics and the MAC
//     address come from the rtnetlink dump, opened inside the namespace;
//   - the driver, PCIe link and NUMA node come from the device behind
//     the interface, which rtnetlink names (IFLA_PARENT_DEV_NAME and
//     IFLA_PARENT_DEV_BUS_NAME, Linux 5.17) and which is not in any
//     network namespace: SysfsPath/bus/<bus>/devices/<device>, read as
//     for this namespace's interfaces (the device itself if it is a PCI
//     function, else its parent, as for virtio-net);
//   - the link speed is left out: it is only in the interface's own
//     sysfs directory (the ethtool collector's --collector.ethtool.netns
//     reads it through ethtool).
//
// On kernels before 5.17, and for virtual interfaces, there is no device,
// so no driver and no PCIe series.
func (n *Collector) readIface(root string, l Link, p *collector.Poll) (*netIface, string, error) {
	if !n.cfg.ForeignNamespace {
		return n.read(filepath.Join(root, l.Name), l, p)
	}
	identity := l.Name + "#" + strconv.Itoa(l.Index)
	ifc := &netIface{Link: l, address: l.Address}
	if dir, ok := n.parentDir(l); ok {
		if drv, err := os.Readlink(filepath.Join(dir, "driver")); err == nil {
			ifc.driver = filepath.Base(drv)
		}
		ifc.pci = n.readPCI(dir, identity, p)
	}
	return ifc, identity, nil
}

// parentDir resolves the sysfs directory of the device behind l, if the
// link source named one.
func (n *Collector) parentDir(l Link) (string, bool) {
	if !validName(l.ParentBus) || !validName(l.ParentDev) {
		return "", false
	}
	dir, err := filepath.EvalSymlinks(filepath.Join(n.cfg.SysfsPath, "bus", l.ParentBus, "devices", l.ParentDev))
	if err != nil {
		return "", false
	}
	return dir, true
}

// validName reports whether s can be one path element: the kernel sends
// device and bus names, which never contain a slash or are dot names.
func validName(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsRune(s, '/')
}

// hwAddr formats a hardware address as /sys/class/net/<if>/address does:
// lowercase hexadecimal bytes separated by colons.
func hwAddr(b []byte) string {
	const hex = "0123456789abcdef"
	var s strings.Builder
	for i, c := range b {
		if i > 0 {
			s.WriteByte(':')
		}
		s.WriteByte(hex[c>>4])
		s.WriteByte(hex[c&0xf])
	}
	return s.String()
}
