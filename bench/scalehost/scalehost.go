// Package scalehost writes a synthetic but realistic host of any size as
// the fixture sources the collectors read: a sysfs tree (network
// interfaces with statistics and PCIe links, InfiniBand devices with
// counters/ and hw_counters/), `ethtool -i` + `ethtool -S` dumps with mlx5
// or ENA statistic names, and VMA statistics files. Benchmarks and the
// side-by-side comparison with node_exporter (make bench-compare) use it
// to measure the exporter on hosts larger than any test machine.
//
// The content follows the real layouts (sources are named where each part
// is written); the values are deterministic functions of the position, so
// two runs with the same Config write identical trees.
package scalehost

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Config describes a host.
type Config struct {
	// Netdevs is the number of mlx5 Ethernet ports. Each is a network
	// interface backed by its own PCIe function, with an ethtool dump.
	Netdevs int
	// NetdevNames, when set, names the interfaces (len must be Netdevs);
	// otherwise they are named enp<bus>s0np0 like mlx5 PFs. The comparison
	// uses it to give the fixture interfaces the names of real veths.
	NetdevNames []string
	// Channels is the number of channels (queue pairs) of each mlx5 port;
	// 64 channels give about 5,000 ethtool statistics per port.
	Channels int
	// ENANetdevs is the number of additional AWS ENA interfaces (ethtool
	// dumps only; their sysfs entries are written like the mlx5 ones).
	ENANetdevs int
	// ENAQueues is the number of queues of each ENA interface.
	ENAQueues int
	// IBPorts is the number of InfiniBand ports, one per mlx5 RDMA
	// device (mlx5_0, mlx5_1, ...), as on GPU nodes with one single-port
	// HCA per GPU.
	IBPorts int
	// VMAProcesses and VMASockets describe the VMA applications: that many
	// statistics files with that many sockets each.
	VMAProcesses, VMASockets int
}

// Large is the default "large" host of the fleet-scale benchmarks: 16
// mlx5 ports with 64 channels (about 5,000 ethtool statistics each), 16
// InfiniBand ports and 4 VMA processes with 256 sockets each.
func Large() Config {
	return Config{Netdevs: 16, Channels: 64, IBPorts: 16, VMAProcesses: 4, VMASockets: 256}
}

// Small is a host for quick tests: 2 mlx5 ports with 4 channels, one ENA
// interface with 4 queues, 2 InfiniBand ports, one VMA process with 8
// sockets.
func Small() Config {
	return Config{Netdevs: 2, Channels: 4, ENANetdevs: 1, ENAQueues: 4, IBPorts: 2, VMAProcesses: 1, VMASockets: 8}
}

// Validate checks that c describes a host that can be written.
func (c Config) Validate() error {
	switch {
	case c.Netdevs < 0 || c.ENANetdevs < 0 || c.IBPorts < 0 || c.Channels < 0 || c.ENAQueues < 0:
		return errors.New("scalehost: negative count")
	case c.VMAProcesses < 0 || c.VMASockets < 0:
		return errors.New("scalehost: negative VMA count")
	case c.NetdevNames != nil && len(c.NetdevNames) != c.Netdevs:
		return fmt.Errorf("scalehost: %d interface names for %d interfaces", len(c.NetdevNames), c.Netdevs)
	case c.Netdevs+c.IBPorts > maxBuses:
		return fmt.Errorf("scalehost: %d mlx5 functions, at most %d fit the PCI buses", c.Netdevs+c.IBPorts, maxBuses)
	case c.ENANetdevs > 26:
		return errors.New("scalehost: more than 26 ENA interfaces")
	}
	for _, n := range c.NetdevNames {
		if n == "" || len(n) > 15 || filepath.Base(n) != n || n == "." || n == ".." {
			return fmt.Errorf("scalehost: bad interface name %q", n)
		}
	}
	return nil
}

// Iface is one network interface of the host.
type Iface struct {
	Name       string
	Driver     string // mlx5_core or ena
	PCIAddress string
	Index      int // ifindex
	// Queues is the number of channels (mlx5) or queues (ENA).
	Queues int
}

// Ifaces returns the host's network interfaces in ifindex order: the mlx5
// ports, then the ENA interfaces.
func (c Config) Ifaces() []Iface {
	out := make([]Iface, 0, c.Netdevs+c.ENANetdevs)
	for i := 0; i < c.Netdevs; i++ {
		bus := firstBus + i
		name := fmt.Sprintf("enp%ds0np0", bus)
		if c.NetdevNames != nil {
			name = c.NetdevNames[i]
		}
		out = append(out, Iface{Name: name, Driver: "mlx5_core", PCIAddress: fmt.Sprintf("0000:%02x:00.0", bus), Index: 2 + i, Queues: c.Channels})
	}
	for i := 0; i < c.ENANetdevs; i++ {
		// ENA interfaces on Nitro are ens5, ens6, ... on bus 0.
		out = append(out, Iface{Name: fmt.Sprintf("ens%d", 5+i), Driver: "ena", PCIAddress: fmt.Sprintf("0000:00:%02x.0", 5+i), Index: 2 + c.Netdevs + i, Queues: c.ENAQueues})
	}
	return out
}

// IBDevice is one RDMA device of the host.
type IBDevice struct {
	Name       string
	PCIAddress string
}

// IBDevices returns the host's RDMA devices, one port each, on the PCI
// buses after the Ethernet ports'.
func (c Config) IBDevices() []IBDevice {
	out := make([]IBDevice, c.IBPorts)
	for i := range out {
		out[i] = IBDevice{Name: fmt.Sprintf("mlx5_%d", i), PCIAddress: fmt.Sprintf("0000:%02x:00.0", firstBus+c.Netdevs+i)}
	}
	return out
}

// Each mlx5 function (Ethernet port or InfiniBand port) has its own bus,
// from firstBus on; ENA interfaces sit on bus 0.
const (
	firstBus = 0x10
	maxBuses = 0x100 - firstBus
)

// Layout names the places below a root where Write puts each source.
type Layout struct {
	// Sysfs is the sysfs root (--path.sysfs).
	Sysfs string
	// Ethtool holds one <interface>.txt dump per interface.
	Ethtool string
	// VMA holds the vmastat.<pid> files.
	VMA string
}

// LayoutAt returns the Layout below root.
func LayoutAt(root string) Layout {
	return Layout{
		Sysfs:   filepath.Join(root, "sys"),
		Ethtool: filepath.Join(root, "ethtool"),
		VMA:     filepath.Join(root, "vma"),
	}
}

// Write writes the sysfs tree, the ethtool dumps and the VMA statistics
// files of c below root, which must not exist yet or be empty.
func Write(root string, c Config) (Layout, error) {
	if err := c.Validate(); err != nil {
		return Layout{}, err
	}
	l := LayoutAt(root)
	if err := writeSysfs(l.Sysfs, c); err != nil {
		return Layout{}, fmt.Errorf("writing the sysfs tree: %w", err)
	}
	if err := writeEthtool(l.Ethtool, c); err != nil {
		return Layout{}, fmt.Errorf("writing the ethtool dumps: %w", err)
	}
	if err := WriteVMA(l.VMA, c); err != nil {
		return Layout{}, fmt.Errorf("writing the VMA statistics files: %w", err)
	}
	return l, nil
}

// writer creates files and links below a root and remembers the first
// error, so tree builders stay readable.
type writer struct {
	root string
	err  error
	dirs map[string]bool
}

func newWriter(root string) *writer { return &writer{root: root, dirs: make(map[string]bool)} }

func (w *writer) mkdir(dir string) {
	if w.err != nil || w.dirs[dir] {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		w.err = err
		return
	}
	w.dirs[dir] = true
}

// file writes content plus a newline, as sysfs attributes end.
func (w *writer) file(rel, content string) {
	if w.err != nil {
		return
	}
	p := filepath.Join(w.root, filepath.FromSlash(rel))
	w.mkdir(filepath.Dir(p))
	if w.err == nil {
		w.err = os.WriteFile(p, []byte(content+"\n"), 0o644)
	}
}

func (w *writer) link(rel, target string) {
	if w.err != nil {
		return
	}
	p := filepath.Join(w.root, filepath.FromSlash(rel))
	w.mkdir(filepath.Dir(p))
	if w.err == nil {
		w.err = os.Symlink(target, p)
	}
}
