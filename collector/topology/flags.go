package topology

import (
	"fmt"

	"github.com/alecthomas/kingpin/v2"

	"github.com/nic-exporter/nic_exporter/collector"
)

// Spec names the topology collector and sets the defaults of its common
// flags (collector.RegisterCommonFlags). The PCIe tree changes only with
// hot-plug, so it is polled every five minutes.
func Spec() collector.Spec {
	return collector.Spec{
		Name:            "topology",
		Help:            "where each NIC function sits in the PCIe tree (NUMA node, root port, PCIe switch) and its nearest NVIDIA GPU, from sysfs, as nic_topology_info: one series per network interface and RDMA device.",
		DefaultInterval: "5m",
		DefaultTimeout:  "30s",
	}
}

// Flags are the parsed command-line flags particular to the topology
// collector (see collector.RegisterCommonFlags for the shape).
type Flags struct {
	// Rails is --collector.topology.rails as given (ParseRails).
	Rails string
}

// RegisterFlags declares the topology collector's own flags on app and
// returns the Flags they fill in when app parses.
func RegisterFlags(app *kingpin.Application) *Flags {
	f := &Flags{}
	app.Flag("collector.topology.rails", "The rail label of nic_topology_info: empty for none, auto to number the NIC functions that share a PCIe switch with their GPU 0, 1, ... in PCI address order, or device=rail pairs naming an interface or RDMA device of each NIC, e.g. mlx5_0=0,mlx5_1=1.").StringVar(&f.Rails)
	return f
}

// Check refuses a rail list that does not parse, at start rather than
// when the collector is built.
func (f *Flags) Check() error {
	if _, err := ParseRails(f.Rails); err != nil {
		return fmt.Errorf("--collector.topology.rails: %w", err)
	}
	return nil
}

// Config returns c with the rails of the flags.
func (f *Flags) Config(c Config) (Config, error) {
	r, err := ParseRails(f.Rails)
	if err != nil {
		return c, fmt.Errorf("--collector.topology.rails: %w", err)
	}
	c.Rails = r
	return c, nil
}
