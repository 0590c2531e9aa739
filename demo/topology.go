package demo

import (
	_ "embed"
	"path/filepath"
)

//go:embed topology.txtar
var topologyTree string

// The demo host's GPUs, for the topology collector: two NVIDIA H100 PCIe
// functions on the nvidia driver, one on a root port of the ConnectX-7's
// root complex (NUMA node 0), one on a second host bridge in NUMA node 1,
// and the driver's information files with their UUIDs. The ConnectX-7's
// functions pair with the first (nvidia-smi topo -m: PHB); nothing
// changes over time.
var topologyPart = part{
	update: func(*Host) error { return nil },
	tree:   topologyTree,
}

// GPUInfoDir returns the demo host's /proc/driver/nvidia/gpus.
func (h *Host) GPUInfoDir() string {
	return filepath.Join(h.dir, "proc", "driver", "nvidia", "gpus")
}
