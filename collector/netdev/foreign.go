package netdev

import (
	"path/filepath"
	"strconv"

	"github.com/nic-exporter/nic_exporter/collector"
)

// readIface returns what one poll exports of the interface l: the link
// source's values and, for interfaces of the namespace SysfsPath shows,
// the sysfs attributes of root/<name>.
//
// For an interface of another network namespace (ForeignNamespace) only
// the link source's values are exported. Sysfs binds its network
// namespace when it is mounted: /sys/class/net, and the net/ directory
// of a device under /sys/devices, list only the interfaces of the
// namespace of the process that mounted it, never another namespace's.
// The same name under /sys/class/net is therefore either missing or a
// different interface of this namespace (every namespace has its own lo,
// and often its own eth0), so reading it would attach this namespace's
// speed, MAC address, driver and PCIe link to the foreign interface.
// What is left out: nic_netdev_speed_bytes_per_second, the
// nic_pcie_* series and, in nic_netdev_info, the address, driver and
// pci_address labels, which are empty. State, carrier, carrier changes,
// MTU and all interface statistics come from the rtnetlink dump, which
// is opened inside the namespace.
func (n *Collector) readIface(root string, l Link, p *collector.Poll) (*netIface, string, error) {
	if n.cfg.ForeignNamespace {
		return &netIface{Link: l}, l.Name + "#" + strconv.Itoa(l.Index), nil
	}
	return n.read(filepath.Join(root, l.Name), l, p)
}
