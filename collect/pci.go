package collect

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/nic-exporter/nic_exporter/internal/logrules"
	"github.com/nic-exporter/nic_exporter/internal/safefile"
)

// pciAttrs are the PCI function attributes of pci_sysfs.txt: the link's
// speed and width against the capability, and the AER statistics
// (Linux 4.19+).
var pciAttrs = []string{"current_link_speed", "max_link_speed", "current_link_width", "max_link_width",
	"aer_dev_correctable", "aer_dev_nonfatal", "aer_dev_fatal"}

// nicFunctions returns the PCI addresses behind the network interfaces
// and RDMA devices in sysfs, sorted.
func (c *collector) nicFunctions() []string {
	seen := map[string]bool{}
	for _, class := range []string{"class/net", "class/infiniband"} {
		ents, err := os.ReadDir(filepath.Join(c.src.SysfsPath, class))
		if err != nil {
			continue
		}
		for _, e := range ents {
			target, err := filepath.EvalSymlinks(filepath.Join(c.src.SysfsPath, class, e.Name(), "device"))
			if err != nil {
				continue
			}
			if addr := filepath.Base(target); logrules.IsPCIAddress(addr) {
				seen[addr] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for a := range seen {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// pciDevice returns the sysfs directory of a PCI function.
func (c *collector) pciDevice(addr string) string {
	return filepath.Join(c.src.SysfsPath, "bus/pci/devices", addr)
}

// pciSample writes pci_sysfs.txt into dir: each attribute line of each
// NIC function prefixed with its path, as `grep -H .` prints them.
func (c *collector) pciSample(dir string) {
	var b strings.Builder
	var missing []string
	for _, addr := range c.nicFunctions() {
		devDir := c.pciDevice(addr)
		if _, err := os.Stat(devDir); err != nil {
			// The demo tree and containers without /sys/bus: the
			// function's directory through its class link.
			devDir = c.pciDeviceByClass(addr)
		}
		for _, a := range pciAttrs {
			data, err := safefile.ReadRegular(filepath.Join(devDir, a), 64<<10)
			if err != nil {
				if !errors.Is(err, os.ErrNotExist) {
					missing = append(missing, fmt.Sprintf("%s/%s: %v", addr, a, errUnwrapPath(err)))
				}
				continue
			}
			for _, l := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
				fmt.Fprintf(&b, "%s/%s:%s\n", addr, a, l)
			}
		}
	}
	src := "cd /sys/bus/pci/devices && grep -H . FUNCTION/{" + strings.Join(pciAttrs, ",") + "} (each NIC function)"
	for _, m := range missing {
		c.b.unreadable("/sys/bus/pci/devices", m)
	}
	if b.Len() > 0 {
		c.b.add(name(dir, "pci_sysfs.txt"), src, []byte(b.String()))
	}
}

// pciDeviceByClass finds a function's sysfs directory through the
// device links of the network and RDMA classes.
func (c *collector) pciDeviceByClass(addr string) string {
	for _, class := range []string{"class/net", "class/infiniband"} {
		ents, _ := os.ReadDir(filepath.Join(c.src.SysfsPath, class))
		for _, e := range ents {
			target, err := filepath.EvalSymlinks(filepath.Join(c.src.SysfsPath, class, e.Name(), "device"))
			if err == nil && filepath.Base(target) == addr {
				return target
			}
		}
	}
	return c.pciDevice(addr)
}

// errUnwrapPath returns the error of a *os.PathError without its path,
// which the message names already.
func errUnwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// netdevAttrs are the network interface attributes of netdev_sysfs.txt:
// the administrative and operational state and the carrier with its
// changes (a counter, sampled twice).
var netdevAttrs = []string{"operstate", "carrier", "carrier_changes", "flags", "speed", "mtu"}

// netdevSample writes netdev_sysfs.txt into dir: the attributes of each
// network interface that has a device, as `grep -H .` in /sys/class/net
// prints them. carrier and speed fail with EINVAL on an interface that
// is administratively down; such attributes are left out.
func (c *collector) netdevSample(dir string) {
	ents, err := os.ReadDir(filepath.Join(c.src.SysfsPath, "class/net"))
	if err != nil {
		c.b.unreadableErr("/sys/class/net", err)
		return
	}
	var b strings.Builder
	for _, e := range ents {
		base := filepath.Join(c.src.SysfsPath, "class/net", e.Name())
		if _, err := os.Stat(filepath.Join(base, "device")); err != nil {
			continue
		}
		for _, a := range netdevAttrs {
			data, err := safefile.ReadRegular(filepath.Join(base, a), 4096)
			if err != nil {
				continue
			}
			fmt.Fprintf(&b, "%s/%s:%s\n", e.Name(), a, strings.TrimSpace(string(data)))
		}
	}
	if b.Len() > 0 {
		c.b.add(name(dir, "netdev_sysfs.txt"), "cd /sys/class/net && grep -H . IF/{"+strings.Join(netdevAttrs, ",")+"} (each interface with a device)", []byte(b.String()))
	}
}
