package topology

import (
	"fmt"
	"sort"
	"strings"
)

// Function is one PCI function and where it sits in the PCIe tree, as the
// path of its directory under /sys/devices shows it: the host bridge
// (root complex) it is below, the PCI bridges between that host bridge
// and the function (the root port first), and the NUMA node the kernel
// gives it.
type Function struct {
	// Address is the function's PCI address, for example 0000:07:00.0.
	Address string
	// HostBridge is the directory of its host bridge, for example
	// pci0000:00.
	HostBridge string
	// Bridges are the addresses of the PCI bridges from the root port
	// down to the function's parent: the root port, then for each PCIe
	// switch below it its upstream port and the downstream port the path
	// takes.
	Bridges []string
	// NUMANode is the function's numa_node attribute; -1 when the kernel
	// knows none.
	NUMANode int
}

// RootPort returns the address of the root port above the function, or
// "" when the function sits on the host bridge's own bus.
func (f Function) RootPort() string {
	if len(f.Bridges) == 0 {
		return ""
	}
	return f.Bridges[0]
}

// Switch returns the address of the upstream port of the first PCIe
// switch below the root port on the function's path (the switch that
// groups the GPUs and NICs of one PCIe tree on DGX and HGX boards), or ""
// when the function hangs off its root port directly.
func (f Function) Switch() string {
	if len(f.Bridges) < 2 {
		return ""
	}
	return f.Bridges[1]
}

// NIC is a network function with the devices the kernel made on it: its
// network interfaces and RDMA devices.
type NIC struct {
	Function
	// Devices are the names of its network interfaces and RDMA devices,
	// sorted.
	Devices []string
}

// GPU is an NVIDIA GPU function.
type GPU struct {
	Function
	// Index is its index in PCI bus order among the host's NVIDIA GPUs,
	// the order in which nvidia-smi and NVML number them.
	Index int
	// UUID is the GPU's UUID from the driver's information file, or ""
	// when the file is absent.
	UUID string
}

// Host is the topology one scan found.
type Host struct {
	NICs []NIC
	GPUs []GPU
}

// Link is how the path between two PCI functions runs, in the terms of
// nvidia-smi topo -m, from the closest to the farthest.
type Link int

const (
	// LinkNone means there is nothing to compare with (no GPU).
	LinkNone Link = iota
	// LinkPIX is a path through a single PCIe switch.
	LinkPIX
	// LinkPXB is a path through several PCIe switches, not through the
	// host bridge.
	LinkPXB
	// LinkPHB is a path through a PCIe host bridge (the CPU's root
	// complex).
	LinkPHB
	// LinkNODE is a path between host bridges of one NUMA node.
	LinkNODE
	// LinkSYS is a path across the interconnect between NUMA nodes.
	LinkSYS
)

// String returns the name nvidia-smi topo -m prints for the link.
func (l Link) String() string {
	switch l {
	case LinkPIX:
		return "PIX"
	case LinkPXB:
		return "PXB"
	case LinkPHB:
		return "PHB"
	case LinkNODE:
		return "NODE"
	case LinkSYS:
		return "SYS"
	}
	return ""
}

// Classify returns the link between two functions. Below a root port a
// PCIe switch appears in sysfs as two bridge levels, its upstream port
// and one of its downstream ports, so the bridges at odd positions of a
// path are switches' upstream ports and each bridge at an even position
// (after the root port) belongs to the switch above it. The link is PIX
// when the path between the two functions crosses one switch, PXB when
// it crosses several, PHB when it goes through the root complex (their
// paths part at or above the root port), NODE between host bridges of
// one NUMA node and SYS between NUMA nodes.
func Classify(a, b Function) Link {
	if a.HostBridge != b.HostBridge {
		if a.NUMANode == b.NUMANode {
			return LinkNODE
		}
		return LinkSYS
	}
	common := 0
	for common < len(a.Bridges) && common < len(b.Bridges) && a.Bridges[common] == b.Bridges[common] {
		common++
	}
	if common < 2 {
		// Different root ports, or only the root port in common: the
		// path turns in the root complex.
		return LinkPHB
	}
	switches := make(map[string]bool)
	for _, path := range [][]string{a.Bridges, b.Bridges} {
		for i := common - 1; i < len(path); i++ {
			switches[switchOf(path, i)] = true
		}
	}
	if len(switches) <= 1 {
		return LinkPIX
	}
	return LinkPXB
}

// switchOf names the switch the bridge at position i (≥ 1) of path
// belongs to by its upstream port.
func switchOf(path []string, i int) string {
	if i%2 == 0 {
		return path[i-1]
	}
	return path[i]
}

// Row is one NIC function with its nearest GPU.
type Row struct {
	NIC NIC
	// GPU is the nearest GPU, nil when the NIC has none in its NUMA node.
	GPU *GPU
	// Link is the link to GPU; LinkNone without one.
	Link Link
	// Rail is the NIC's rail, or "".
	Rail string
}

// Pair joins each NIC to its nearest GPU by the PCIe tree: a GPU behind
// the same PCIe switch first (PIX, then PXB), else one on the same root
// complex (PHB), else one in the same NUMA node (NODE); a NIC whose
// nearest GPU is across NUMA nodes has none. NICs with a closer link
// choose first; among equally near GPUs a NIC takes the first, in index
// order, that no NIC has taken yet, so that on boards where two NICs and
// two GPUs share a switch the k-th NIC pairs with the k-th GPU, as NCCL
// pairs them; when all are taken it shares the first. The rows are in
// the order of the NICs' PCI addresses.
func Pair(h Host, rails Rails) []Row {
	rows := make([]Row, len(h.NICs))
	order := make([]int, len(h.NICs))
	for i, n := range h.NICs {
		rows[i].NIC = n
		rows[i].Link = LinkNone
		for _, g := range h.GPUs {
			if l := Classify(n.Function, g.Function); rows[i].Link == LinkNone || l < rows[i].Link {
				rows[i].Link = l
			}
		}
		order[i] = i
	}
	sort.SliceStable(order, func(x, y int) bool { return rows[order[x]].Link < rows[order[y]].Link })
	taken := make(map[int]bool)
	for _, i := range order {
		r := &rows[i]
		if r.Link == LinkNone || r.Link == LinkSYS {
			r.Link = LinkNone
			continue
		}
		var first, free *GPU
		for j := range h.GPUs {
			g := &h.GPUs[j]
			if Classify(r.NIC.Function, g.Function) != r.Link {
				continue
			}
			if first == nil {
				first = g
			}
			if free == nil && !taken[g.Index] {
				free = g
			}
		}
		if free == nil {
			free = first
		}
		taken[free.Index] = true
		g := *free
		r.GPU = &g
	}
	rails.assign(rows)
	return rows
}

// Rails says which rail each NIC is on: from a map of device names to
// rail numbers, or derived from the order of the NICs.
type Rails struct {
	// Auto numbers the NIC functions that share a PCIe switch with their
	// GPU (link PIX or PXB) 0, 1, ... in PCI address order.
	Auto bool
	// Map gives the rail of the function that has one of these device
	// names (a network interface or an RDMA device).
	Map map[string]string
}

// ParseRails parses the --collector.topology.rails flag: "" (no rail
// label), "auto", or a comma-separated list of device=rail pairs such as
// "mlx5_0=0,mlx5_1=1".
func ParseRails(s string) (Rails, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "":
		return Rails{}, nil
	case "auto":
		return Rails{Auto: true}, nil
	}
	m := make(map[string]string)
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		dev, rail, ok := strings.Cut(item, "=")
		dev, rail = strings.TrimSpace(dev), strings.TrimSpace(rail)
		if !ok || dev == "" || rail == "" {
			return Rails{}, fmt.Errorf("rail %q: want device=rail, for example mlx5_0=0, or auto", item)
		}
		if _, dup := m[dev]; dup {
			return Rails{}, fmt.Errorf("rail of %s given twice", dev)
		}
		m[dev] = rail
	}
	if len(m) == 0 {
		return Rails{}, fmt.Errorf("rails %q: no device=rail pair", s)
	}
	return Rails{Map: m}, nil
}

// assign sets the rail of each row.
func (r Rails) assign(rows []Row) {
	next := 0
	for i := range rows {
		row := &rows[i]
		switch {
		case r.Auto:
			if row.Link == LinkPIX || row.Link == LinkPXB {
				row.Rail = fmt.Sprint(next)
				next++
			}
		case r.Map != nil:
			for _, d := range row.NIC.Devices {
				if v, ok := r.Map[d]; ok {
					row.Rail = v
					break
				}
			}
		}
	}
}
