// Package netdev is the netdev collector: interface state, carrier, MTU,
// speed, interface statistics, PCIe link speed and width against the
// device's capability, NUMA node and PCIe AER error counters.
package netdev

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/internal/errclass"
	"github.com/nic-exporter/nic_exporter/internal/sysfs"
)

// Config configures the netdev collector.
type Config struct {
	// SysfsPath is the sysfs mount point, normally /sys.
	SysfsPath string
	// Filter selects interfaces by name; it is applied before any file of
	// an interface is read.
	Filter collector.NameFilter
	// Links lists the interfaces with their state and statistics: an
	// RtnlLinks on a real host, nil for a SysfsLinks at SysfsPath (the
	// demo host and fixture trees, which have no rtnetlink).
	Links LinkSource
	// ForeignNamespace says Links lists the interfaces of another network
	// namespace than the one SysfsPath shows (see foreign.go): nothing
	// is then read from SysfsPath.
	ForeignNamespace bool
}

// Collector exports the kernel's view of network interfaces: operational
// and administrative state, carrier and its changes, MTU and interface
// statistics from its LinkSource (one rtnetlink dump per poll on a real
// host), and from /sys/class/net what rtnetlink lacks: speed, MAC address,
// driver and, for interfaces backed by a PCI device, the PCIe link and
// NUMA node.
//
// It reads sysfs through internal/sysfs rather than procfs'
// NetClassByIface and NetClassPCIDevice: those read every attribute of an
// interface whether exported or not, swallow read errors and values that
// do not parse (so they cannot be counted), fail a PCI device whose link
// speed does not end in "GT/s PCIe", and do not read statistics/. The
// package documentation of internal/sysfs has the details.
type Collector struct {
	cfg         Config
	log         *zap.Logger
	links       LinkSource
	unsupported *errclass.Memo
	// readAttr reads the PCI function's attributes; sysfs.ReadAttr, which
	// tests replace to inject errors a fixture tree cannot produce
	// (EMFILE, or EACCES for root).
	readAttr func(path string) (string, error)
	// hwmon holds the temperature channels of each interface's PCI
	// function.
	hwmon hwmonCache
}

// New returns a netdev collector.
func New(cfg Config, log *zap.Logger) *Collector {
	links := cfg.Links
	if links == nil {
		links = NewSysfsLinks(cfg.SysfsPath)
	}
	return &Collector{cfg: cfg, log: log, links: links, unsupported: errclass.NewMemo(errclass.MemoConfig{}), readAttr: sysfs.ReadAttr}
}

// Name implements collector.Collector.
func (*Collector) Name() string { return "netdev" }

var _ collector.Collector = (*Collector)(nil)

// netStat is one file of /sys/class/net/<if>/statistics.
type netStat struct {
	file string
	desc *exposition.Desc
}

// netStats lists the kernel's interface statistics (struct
// rtnl_link_stats64). Files a kernel does not have are skipped silently.
var netStats = func() []netStat {
	defs := []struct{ file, help string }{
		{"rx_packets", "Packets received."},
		{"tx_packets", "Packets transmitted."},
		{"rx_bytes", "Bytes received."},
		{"tx_bytes", "Bytes transmitted."},
		{"rx_errors", "Receive errors of all kinds."},
		{"tx_errors", "Transmit errors of all kinds."},
		{"rx_dropped", "Received packets dropped by the kernel or driver, for example for lack of buffers."},
		{"tx_dropped", "Packets dropped on transmit, for example for lack of resources."},
		{"multicast", "Multicast packets received."},
		{"collisions", "Collisions on the medium."},
		{"rx_length_errors", "Received frames with a bad length."},
		{"rx_over_errors", "Receive ring buffer overflows."},
		{"rx_crc_errors", "Received frames with a bad CRC."},
		{"rx_frame_errors", "Received frames with an alignment error."},
		{"rx_fifo_errors", "Receive FIFO overruns."},
		{"rx_missed_errors", "Packets the device missed, for example for lack of host buffers."},
		{"tx_aborted_errors", "Transmissions aborted."},
		{"tx_carrier_errors", "Transmit errors from losing the carrier."},
		{"tx_fifo_errors", "Transmit FIFO underruns."},
		{"tx_heartbeat_errors", "Transmit heartbeat (SQE) errors."},
		{"tx_window_errors", "Late collisions."},
		{"rx_compressed", "Compressed packets received."},
		{"tx_compressed", "Compressed packets transmitted."},
		{"rx_nohandler", "Packets received on an inactive device or without a protocol handler."},
		{"rx_otherhost_dropped", "Packets dropped because their destination MAC was another host's."},
	}
	out := make([]netStat, len(defs))
	for i, d := range defs {
		out[i] = netStat{file: d.file, desc: exposition.MustNewDesc("nic_netdev_"+d.file+"_total", d.help+" From /sys/class/net/<device>/statistics/"+d.file+".", exposition.Counter, "device")}
	}
	return out
}()

var (
	netdevInfo = exposition.MustNewDesc("nic_netdev_info",
		"Interface facts, value 1: MAC address, driver and the PCI address of the backing device (empty when none).",
		exposition.Gauge, "device", "address", "driver", "pci_address")
	netdevUp = exposition.MustNewDesc("nic_netdev_up",
		"1 if the interface's operational state is up, else 0.", exposition.Gauge, "device")
	netdevOperState = exposition.MustNewDesc("nic_netdev_oper_state",
		"Operational state as in RFC 2863 ifOperStatus: 1 up, 2 down, 3 testing, 4 unknown, 5 dormant, 6 notpresent, 7 lowerlayerdown.",
		exposition.Gauge, "device")
	netdevAdminUp = exposition.MustNewDesc("nic_netdev_admin_up",
		"1 if the interface is administratively up (IFF_UP), else 0.", exposition.Gauge, "device")
	netdevCarrier = exposition.MustNewDesc("nic_netdev_carrier",
		"1 if the interface has a carrier (link), else 0. Absent while the interface is administratively down.", exposition.Gauge, "device")
	netdevCarrierChanges = exposition.MustNewDesc("nic_netdev_carrier_changes_total",
		"Carrier changes (link flaps) since the interface was created.", exposition.Counter, "device")
	netdevSpeed = exposition.MustNewDesc("nic_netdev_speed_bytes_per_second",
		"Negotiated link speed. Absent when the link is down or the driver reports no speed.", exposition.Gauge, "device")
	netdevMTU = exposition.MustNewDesc("nic_netdev_mtu_bytes",
		"Maximum transmission unit.", exposition.Gauge, "device")

	pcieCurSpeed = exposition.MustNewDesc("nic_pcie_link_speed_gigatransfers_per_second",
		"Current PCIe link speed of the device behind the interface, in GT/s.", exposition.Gauge, "device", "pci_address")
	pcieMaxSpeed = exposition.MustNewDesc("nic_pcie_link_max_speed_gigatransfers_per_second",
		"Maximum PCIe link speed the device supports, in GT/s.", exposition.Gauge, "device", "pci_address")
	pcieCurWidth = exposition.MustNewDesc("nic_pcie_link_width_lanes",
		"Current PCIe link width of the device behind the interface, in lanes.", exposition.Gauge, "device", "pci_address")
	pcieMaxWidth = exposition.MustNewDesc("nic_pcie_link_max_width_lanes",
		"Maximum PCIe link width the device supports, in lanes.", exposition.Gauge, "device", "pci_address")
	pcieDegraded = exposition.MustNewDesc("nic_pcie_link_degraded",
		"1 if the PCIe link trained below the device's capability (speed or width), for example x8 on an x16 card; else 0.",
		exposition.Gauge, "device", "pci_address")
	pcieNUMA = exposition.MustNewDesc("nic_pcie_numa_node",
		"NUMA node of the device behind the interface; -1 when the platform reports none.", exposition.Gauge, "device", "pci_address")
)

var operStates = map[string]float64{
	"up": 1, "down": 2, "testing": 3, "unknown": 4, "dormant": 5, "notpresent": 6, "lowerlayerdown": 7,
}

// netIface is what one poll read of one interface.
type netIface struct {
	Link
	address   string
	driver    string
	speedMbps sysfs.Optional
	pci       *pciLink
}

type pciLink struct {
	address            string
	curSpeed, maxSpeed sysfs.Optional
	curWidth, maxWidth sysfs.Optional
	numa               sysfs.Optional
	aer                []aerStats
	temps              []hwmonReading
}

// Update implements collector.Collector.
func (n *Collector) Update(ctx context.Context, p *collector.Poll) error {
	links, err := n.links.Links(n.cfg.Filter, p)
	if err != nil {
		return fmt.Errorf("listing network interfaces: %w", err)
	}
	sort.Slice(links, func(i, j int) bool { return links[i].Name < links[j].Name })
	root := filepath.Join(n.cfg.SysfsPath, "class", "net")
	seen := make(map[string]bool, len(links))
	devices := 0
	for _, l := range links {
		if err := ctx.Err(); err != nil {
			return err
		}
		ifc, identity, err := n.readIface(root, l, p)
		if errors.Is(err, sysfs.ErrVanished) {
			n.log.Debug("interface vanished during the poll", zap.String("device", l.Name))
			continue
		}
		seen[identity] = true
		devices++
		emitNetIface(p, ifc)
	}
	n.unsupported.Retain(seen)
	n.hwmon.retain(seen)
	p.SetDevices(devices)
	return nil
}

// read reads from sysfs what the link source lacks. Single unreadable
// attributes are reported to p and left out; sysfs.ErrVanished means the
// whole interface went away.
func (n *Collector) read(dir string, l Link, p *collector.Poll) (*netIface, string, error) {
	identity := l.Name + "#" + strconv.Itoa(l.Index)
	ifc := &netIface{Link: l}
	r := &attrReader{dir: dir, identity: identity, unsupported: n.unsupported, p: p}
	ifc.address, _ = r.get("address", true)
	// speed answers EINVAL while the link is down; that is the state, not
	// an error.
	if l.Carrier.OK && l.Carrier.V == 1 {
		if sp := r.num("speed", true); sp.OK && sp.V >= 0 {
			ifc.speedMbps = sp
		}
	}
	if target, err := filepath.EvalSymlinks(filepath.Join(dir, "device")); err == nil {
		if drv, err := os.Readlink(filepath.Join(target, "driver")); err == nil {
			ifc.driver = filepath.Base(drv)
		}
		ifc.pci = n.readPCI(target, identity, p)
	}
	if r.vanished {
		return nil, "", sysfs.ErrVanished
	}
	return ifc, identity, nil
}

// readPCI finds the PCI function behind an interface's device (the device
// itself, or its parent for virtio) and reads its link attributes.
// Conventional PCI devices have no link attributes and report only NUMA.
func (n *Collector) readPCI(devDir, identity string, p *collector.Poll) *pciLink {
	dir := devDir
	for i := 0; i < 2; i++ {
		if sub, err := os.Readlink(filepath.Join(dir, "subsystem")); err == nil && filepath.Base(sub) == "pci" {
			break
		}
		dir = filepath.Dir(dir)
		if i == 1 {
			return nil
		}
	}
	link := &pciLink{address: filepath.Base(dir)}
	speed := func(file string) sysfs.Optional {
		if n.unsupported.Has(identity, "pci/"+file) {
			return sysfs.Optional{}
		}
		s, err := n.readAttr(filepath.Join(dir, file))
		if err != nil {
			if !errclass.IsNotExist(err) { // no PCIe capability: not an error
				// Only an unsupported attribute is not read again: a
				// transient error (EMFILE, ENFILE, EACCES) drops the
				// series for this poll only.
				n.unsupported.Remember(identity, "pci/"+file, err, errclass.IsUnsupportedAttr)
				p.SourceError(filepath.Join(dir, file), err)
			}
			return sysfs.Optional{}
		}
		v, ok, err := sysfs.ParsePCIeSpeed(s)
		if err != nil {
			p.SourceError(filepath.Join(dir, file), err)
		}
		return sysfs.Optional{V: v, OK: ok}
	}
	width := func(file string) sysfs.Optional {
		s, err := n.readAttr(filepath.Join(dir, file))
		if err != nil {
			if !errclass.IsNotExist(err) {
				p.SourceError(filepath.Join(dir, file), err)
			}
			return sysfs.Optional{}
		}
		v, err := sysfs.ParseUint(s)
		if err != nil {
			p.SourceError(filepath.Join(dir, file), err)
			return sysfs.Optional{}
		}
		if v == 0 { // link down or not reported
			return sysfs.Optional{}
		}
		return sysfs.Optional{V: float64(v), OK: true}
	}
	link.curSpeed = speed("current_link_speed")
	link.maxSpeed = speed("max_link_speed")
	link.curWidth = width("current_link_width")
	link.maxWidth = width("max_link_width")
	if s, err := n.readAttr(filepath.Join(dir, "numa_node")); err == nil {
		if v, err := sysfs.ParseInt(s); err == nil {
			link.numa = sysfs.Optional{V: float64(v), OK: true}
		} else {
			p.SourceError(filepath.Join(dir, "numa_node"), err)
		}
	}
	link.aer = n.readAER(dir, identity, p)
	link.temps = n.readHwmon(dir, identity, p)
	return link
}

func emitNetIface(p *collector.Poll, ifc *netIface) {
	pciAddr := ""
	if ifc.pci != nil {
		pciAddr = ifc.pci.address
	}
	p.Add(netdevInfo, 1, ifc.Name, ifc.address, ifc.driver, pciAddr)
	if v, ok := operStates[ifc.OperState]; ok {
		p.Add(netdevOperState, v, ifc.Name)
		p.Add(netdevUp, collector.Bool(v == 1), ifc.Name)
	}
	sysfs.AddOpt(p, netdevAdminUp, ifc.AdminUp, ifc.Name)
	sysfs.AddOpt(p, netdevCarrier, ifc.Carrier, ifc.Name)
	sysfs.AddOpt(p, netdevCarrierChanges, ifc.CarrierChanges, ifc.Name)
	if ifc.speedMbps.OK {
		p.Add(netdevSpeed, ifc.speedMbps.V*1e6/8, ifc.Name)
	}
	sysfs.AddOpt(p, netdevMTU, ifc.MTU, ifc.Name)
	for i, st := range netStats {
		sysfs.AddOpt(p, st.desc, ifc.Stats[i], ifc.Name)
	}
	if l := ifc.pci; l != nil {
		sysfs.AddOpt(p, pcieCurSpeed, l.curSpeed, ifc.Name, l.address)
		sysfs.AddOpt(p, pcieMaxSpeed, l.maxSpeed, ifc.Name, l.address)
		sysfs.AddOpt(p, pcieCurWidth, l.curWidth, ifc.Name, l.address)
		sysfs.AddOpt(p, pcieMaxWidth, l.maxWidth, ifc.Name, l.address)
		if l.curSpeed.OK && l.maxSpeed.OK && l.curWidth.OK && l.maxWidth.OK {
			degraded := l.curSpeed.V < l.maxSpeed.V || l.curWidth.V < l.maxWidth.V
			p.Add(pcieDegraded, collector.Bool(degraded), ifc.Name, l.address)
		}
		sysfs.AddOpt(p, pcieNUMA, l.numa, ifc.Name, l.address)
		emitAER(p, ifc.Name, l.address, l.aer)
		emitHwmon(p, ifc.Name, l.address, l.temps)
	}
}
