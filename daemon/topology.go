package daemon

import (
	"fmt"

	"github.com/alecthomas/kingpin/v2"
	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/topology"
)

// topologySpec describes the topology collector. Its one flag of its own
// is kept in a variable of this spec's closures rather than in
// extraFlags: the spec that registers the flag is the one whose build
// reads it (collectorFlags keeps the spec).
func topologySpec() collectorSpec {
	var rails string
	return collectorSpec{
		name: "topology",
		help: "where each NIC function sits in the PCIe tree (NUMA node, root port, PCIe switch) and its nearest NVIDIA GPU, from sysfs, as nic_topology_info: one series per network interface and RDMA device.",
		// The tree changes only with hot-plug.
		defaultInterval: "5m",
		defaultTimeout:  "30s",
		flags: func(app *kingpin.Application, _ *extraFlags) {
			app.Flag("collector.topology.rails", "The rail label of nic_topology_info: empty for none, auto to number the NIC functions that share a PCIe switch with their GPU 0, 1, ... in PCI address order, or device=rail pairs naming an interface or RDMA device of each NIC, e.g. mlx5_0=0,mlx5_1=1.").StringVar(&rails)
		},
		build: func(_ *extraFlags, src *Sources, f collector.NameFilter, log *zap.Logger) (collector.Collector, error) {
			r, err := topology.ParseRails(rails)
			if err != nil {
				return nil, fmt.Errorf("--collector.topology.rails: %w", err)
			}
			return topology.New(topology.Config{SysfsPath: src.SysfsPath, GPUInfoDir: src.GPUInfoDir, Filter: f, Rails: r}, log), nil
		},
	}
}
