// Command scalehost writes a synthetic host of any size as fixture sources
// (a sysfs tree, ethtool dumps) for benchmarks and for the comparison with
// node_exporter (make bench-compare).
//
//	go run ./bench/cmd/scalehost -out /tmp/host -size large
//	go run ./bench/cmd/scalehost -out /tmp/host -netdevs 4 -channels 8 -ib-ports 2
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/nic-exporter/nic_exporter/bench/scalehost"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "scalehost:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("scalehost", flag.ContinueOnError)
	out := fs.String("out", "", "Directory to write the host into; it must not exist or be empty.")
	size := fs.String("size", "large", "Preset to start from: large or small. The other flags override it.")
	netdevs := fs.Int("netdevs", -1, "Number of mlx5 Ethernet ports.")
	names := fs.String("netdev-names", "", "Comma-separated interface names for the mlx5 ports (default enp<bus>s0np0).")
	channels := fs.Int("channels", -1, "Channels per mlx5 port (64 give about 5,000 ethtool statistics).")
	ena := fs.Int("ena", -1, "Number of ENA interfaces.")
	enaQueues := fs.Int("ena-queues", -1, "Queues per ENA interface.")
	ib := fs.Int("ib-ports", -1, "Number of InfiniBand ports (one mlx5 RDMA device each).")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		return fmt.Errorf("-out is required")
	}
	var c scalehost.Config
	switch *size {
	case "large":
		c = scalehost.Large()
	case "small":
		c = scalehost.Small()
	default:
		return fmt.Errorf("unknown -size %q: want large or small", *size)
	}
	for _, o := range []struct {
		v   int
		dst *int
	}{{*netdevs, &c.Netdevs}, {*channels, &c.Channels}, {*ena, &c.ENANetdevs}, {*enaQueues, &c.ENAQueues}, {*ib, &c.IBPorts}} {
		if o.v >= 0 {
			*o.dst = o.v
		}
	}
	if *names != "" {
		c.NetdevNames = strings.Split(*names, ",")
		if *netdevs < 0 {
			c.Netdevs = len(c.NetdevNames)
		}
	}
	if entries, err := os.ReadDir(*out); err == nil && len(entries) > 0 {
		return fmt.Errorf("%s is not empty", *out)
	}
	l, err := scalehost.Write(*out, c)
	if err != nil {
		return err
	}
	fmt.Printf("sysfs=%s\nethtool=%s\n", l.Sysfs, l.Ethtool)
	return nil
}
