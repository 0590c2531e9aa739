// Package topology is the topology collector: where each NIC function
// sits in the PCIe tree (NUMA node, root port, PCIe switch) and which
// NVIDIA GPU is nearest to it, as one info series per network interface
// and RDMA device, so that NIC series join GPU series (DCGM's) and a
// NIC's trouble is seen as its GPU's and its rail's.
//
// The tree comes from sysfs alone: the path of a function's directory
// under /sys/devices names its host bridge and every bridge above it.
// Nothing is read from PCI configuration space, which needs root. Scan
// reads a sysfs root into a Host, Pair joins NICs to GPUs; both are plain
// functions that fixture trees drive.
package topology

import (
	"context"
	"fmt"
	"strconv"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
)

// topologyInfo is the collector's one family.
var topologyInfo = exposition.MustNewDesc("nic_topology_info",
	"Where the PCI function behind a network interface or RDMA device (device) sits in the PCIe tree, and its nearest NVIDIA GPU; always 1. pci_address is the function, numa_node its NUMA node (-1: none), root_port the root port above it, pcie_switch the upstream port of the first PCIe switch below that root port (empty: none). gpu_pci is the nearest GPU's PCI address, gpu_pci_bus_id the same in NVML's form (dcgm-exporter's pci_bus_id label, 00000000:07:00.0), gpu_index its index in PCI bus order as nvidia-smi numbers GPUs, gpu_uuid its UUID from /proc/driver/nvidia/gpus/<address>/information, gpu_link the path to it in nvidia-smi topo -m terms (PIX one PCIe switch, PXB several, PHB through the root complex, NODE another root complex of the NUMA node); all empty when no GPU is in the NIC's NUMA node. rail is the NIC's rail from --collector.topology.rails.",
	exposition.Gauge, "device", "pci_address", "numa_node", "root_port", "pcie_switch",
	"gpu_pci", "gpu_pci_bus_id", "gpu_index", "gpu_uuid", "gpu_link", "rail")

// Config configures the topology collector.
type Config struct {
	// SysfsPath is the sysfs mount point, normally /sys.
	SysfsPath string
	// GPUInfoDir is the NVIDIA driver's directory of per-GPU information
	// files, normally /proc/driver/nvidia/gpus; empty: no UUIDs.
	GPUInfoDir string
	// Filter selects network interfaces and RDMA devices by name.
	Filter collector.NameFilter
	// Rails gives the rail label.
	Rails Rails
}

// Collector exports nic_topology_info. It keeps no state between polls:
// each poll scans the tree again, a few hundred small reads on a GPU
// server (one vendor attribute per PCI function, a handful of files per
// NIC and GPU), and the topology changes only with hot-plug, so it is
// polled every few minutes.
type Collector struct {
	cfg Config
	log *zap.Logger
}

// New returns a topology collector.
func New(cfg Config, log *zap.Logger) *Collector {
	return &Collector{cfg: cfg, log: log}
}

// Name implements collector.Collector.
func (*Collector) Name() string { return "topology" }

var _ collector.Collector = (*Collector)(nil)

// Update implements collector.Collector.
func (c *Collector) Update(ctx context.Context, p *collector.Poll) error {
	h, err := Scan(c.cfg.SysfsPath, c.cfg.GPUInfoDir, c.cfg.Filter.Match, p.SourceError)
	if err != nil {
		return fmt.Errorf("scanning the PCIe topology: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	rows := Pair(h, c.cfg.Rails)
	devices := 0
	for _, r := range rows {
		numa := strconv.Itoa(r.NIC.NUMANode)
		var gpuPCI, busID, index, uuid string
		if r.GPU != nil {
			gpuPCI, busID, index, uuid = r.GPU.Address, BusID(r.GPU.Address), strconv.Itoa(r.GPU.Index), r.GPU.UUID
		}
		for _, d := range r.NIC.Devices {
			p.Add(topologyInfo, 1, d, r.NIC.Address, numa, r.NIC.RootPort(), r.NIC.Switch(),
				gpuPCI, busID, index, uuid, r.Link.String(), r.Rail)
			devices++
		}
	}
	p.SetDevices(devices)
	return nil
}
