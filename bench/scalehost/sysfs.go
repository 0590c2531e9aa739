package scalehost

import (
	"fmt"
	"path"
	"strconv"
)

// The sysfs layout follows Linux net-sysfs.c (class/net/<if> linking into
// devices/pci.../net/<if>, statistics/ from struct rtnl_link_stats64),
// pci-sysfs.c (current_link_speed strings such as "32.0 GT/s PCIe") and
// drivers/infiniband/core/sysfs.c (ports/<n>/{state,phys_state,rate},
// counters/ from the IBA PortCounters and PortCountersExtended
// attributes, hw_counters/ from drivers/infiniband/hw/mlx5/counters.c).
// The ConnectX-7 identity (MT4129, board MT_0000000838, firmware
// 28.39.1002, device id 0x1021) is the one in the infiniband collector's
// fixture, taken from the public ibstat dumps named there.

// netStatFiles are the files of /sys/class/net/<if>/statistics.
var netStatFiles = []string{
	"rx_packets", "tx_packets", "rx_bytes", "tx_bytes", "rx_errors", "tx_errors",
	"rx_dropped", "tx_dropped", "multicast", "collisions", "rx_length_errors",
	"rx_over_errors", "rx_crc_errors", "rx_frame_errors", "rx_fifo_errors",
	"rx_missed_errors", "tx_aborted_errors", "tx_carrier_errors", "tx_fifo_errors",
	"tx_heartbeat_errors", "tx_window_errors", "rx_compressed", "tx_compressed",
	"rx_nohandler",
}

// ibPortCounterFiles are the files of ports/<n>/counters on mlx5.
var ibPortCounterFiles = []string{
	"VL15_dropped", "excessive_buffer_overrun_errors", "link_downed", "link_error_recovery",
	"local_link_integrity_errors", "multicast_rcv_packets", "multicast_xmit_packets",
	"port_rcv_constraint_errors", "port_rcv_data", "port_rcv_errors", "port_rcv_packets",
	"port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors",
	"port_xmit_constraint_errors", "port_xmit_data", "port_xmit_discards",
	"port_xmit_packets", "port_xmit_wait", "symbol_error", "unicast_rcv_packets",
	"unicast_xmit_packets",
}

// ibHWCounterFiles are the files of ports/<n>/hw_counters of an mlx5
// InfiniBand port. lifespan is a setting, not a counter.
var ibHWCounterFiles = []string{
	"duplicate_request", "implied_nak_seq_err", "lifespan", "local_ack_timeout_err",
	"out_of_buffer", "out_of_sequence", "packet_seq_err", "req_cqe_error",
	"req_cqe_flush_error", "req_remote_access_errors", "req_remote_invalid_request",
	"req_rnr_retries_exceeded", "req_transport_retries_exceeded", "resp_cqe_error",
	"resp_cqe_flush_error", "resp_local_length_error", "resp_remote_access_errors",
	"rnr_nak_retry_err", "rx_atomic_requests", "rx_dct_connect", "rx_read_requests",
	"rx_write_requests",
}

// value returns a deterministic, plausible counter value for position
// (a, b): large for traffic counters, mostly zero for error counters.
func value(a, b int, traffic bool) uint64 {
	x := uint64(a+1)*0x9e3779b97f4a7c15 ^ uint64(b+1)*0xbf58476d1ce4e5b9
	x ^= x >> 31
	if traffic {
		return x % 1_000_000_000_000
	}
	if x%7 == 0 {
		return x % 100
	}
	return 0
}

// pciDir returns the devices/ path of a PCI function: behind its own root
// port, as NICs on multi-root servers are.
func pciDir(addr string) string {
	var bus int
	fmt.Sscanf(addr, "0000:%02x", &bus)
	if bus == 0 {
		return "devices/pci0000:00/" + addr
	}
	root := fmt.Sprintf("%02x", bus-1)
	return fmt.Sprintf("devices/pci0000:%s/0000:%s:01.0/%s", root, root, addr)
}

func writeSysfs(root string, c Config) error {
	w := newWriter(root)
	for i, ifc := range c.Ifaces() {
		writeNetdev(w, i, ifc)
	}
	for i, d := range c.IBDevices() {
		writeIB(w, i, d)
	}
	for _, drv := range []string{"mlx5_core", "ena"} {
		w.mkdir(path.Join(root, "bus/pci/drivers", drv))
	}
	return w.err
}

func writeNetdev(w *writer, i int, ifc Iface) {
	pci := pciDir(ifc.PCIAddress)
	dir := path.Join(pci, "net", ifc.Name)
	w.link(path.Join("class/net", ifc.Name), "../../"+dir)
	mac := fmt.Sprintf("b8:3f:d2:%02x:%02x:%02x", i>>16&0xff, i>>8&0xff, i&0xff)
	speed, mtu := "400000", "9000"
	if ifc.Driver == "ena" {
		mac = fmt.Sprintf("0a:5e:%02x:%02x:%02x:01", i>>16&0xff, i>>8&0xff, i&0xff)
		speed, mtu = "-1", "9001" // ENA reports no speed; AWS jumbo MTU
	}
	attrs := [][2]string{
		{"addr_assign_type", "0"}, {"addr_len", "6"}, {"address", mac},
		{"broadcast", "ff:ff:ff:ff:ff:ff"}, {"carrier", "1"}, {"carrier_changes", strconv.Itoa(2 + i%3)},
		{"carrier_up_count", "1"}, {"carrier_down_count", "1"}, {"dev_id", "0x0"}, {"dev_port", "0"},
		{"dormant", "0"}, {"duplex", "full"}, {"flags", "0x1003"}, {"ifalias", ""},
		{"ifindex", strconv.Itoa(ifc.Index)}, {"iflink", strconv.Itoa(ifc.Index)}, {"link_mode", "0"},
		{"mtu", mtu}, {"name_assign_type", "4"}, {"netdev_group", "0"}, {"operstate", "up"},
		{"proto_down", "0"}, {"speed", speed}, {"tx_queue_len", "1000"}, {"type", "1"},
	}
	for _, a := range attrs {
		w.file(path.Join(dir, a[0]), a[1])
	}
	for j, f := range netStatFiles {
		traffic := j < 4 || f == "multicast"
		w.file(path.Join(dir, "statistics", f), strconv.FormatUint(value(i, j, traffic), 10))
	}
	w.link(path.Join(dir, "device"), "../../../"+ifc.PCIAddress)
	class := "0x020000" // Ethernet controller
	writePCI(w, pci, ifc.Driver, class, i)
}

func writePCI(w *writer, pci, driver, class string, i int) {
	w.link(path.Join(pci, "driver"), relTo(pci, "bus/pci/drivers/"+driver))
	w.link(path.Join(pci, "subsystem"), relTo(pci, "bus/pci"))
	w.file(path.Join(pci, "numa_node"), strconv.Itoa(i%2))
	w.file(path.Join(pci, "class"), class)
	switch driver {
	case "ena":
		w.file(path.Join(pci, "vendor"), "0x1d0f")
		w.file(path.Join(pci, "device"), "0xec20")
	default:
		w.file(path.Join(pci, "vendor"), "0x15b3")
		w.file(path.Join(pci, "device"), "0x1021")
		w.file(path.Join(pci, "current_link_speed"), "32.0 GT/s PCIe")
		w.file(path.Join(pci, "max_link_speed"), "32.0 GT/s PCIe")
		w.file(path.Join(pci, "current_link_width"), "16")
		w.file(path.Join(pci, "max_link_width"), "16")
	}
}

// relTo returns the relative link target from directory dir to target,
// both relative to the sysfs root.
func relTo(dir, target string) string {
	up := ""
	for d := dir; d != "." && d != "/" && d != ""; d = path.Dir(d) {
		up += "../"
	}
	return up + target
}

func writeIB(w *writer, i int, d IBDevice) {
	pci := pciDir(d.PCIAddress)
	dir := path.Join(pci, "infiniband", d.Name)
	w.link(path.Join("class/infiniband", d.Name), "../../"+dir)
	w.link(path.Join(dir, "device"), "../../../"+d.PCIAddress)
	guid := fmt.Sprintf("b83f:d203:00%02x:%04x", i>>8&0xff, 0x1000+i&0xffff)
	for _, a := range [][2]string{
		{"node_type", "1: CA"}, {"node_guid", guid}, {"sys_image_guid", guid},
		{"fw_ver", "28.39.1002"}, {"hca_type", "MT4129"}, {"board_id", "MT_0000000838"},
		{"node_desc", fmt.Sprintf("scalehost HCA-%d", i)},
	} {
		w.file(path.Join(dir, a[0]), a[1])
	}
	port := path.Join(dir, "ports/1")
	for _, a := range [][2]string{
		{"state", "4: ACTIVE"}, {"phys_state", "5: LinkUp"}, {"rate", "400 Gb/sec (4X NDR)"},
		{"link_layer", "InfiniBand"}, {"lid", fmt.Sprintf("0x%x", 0x10+i)}, {"sm_lid", "0x1"},
		{"lid_mask_count", "0"}, {"sm_sl", "0"}, {"cap_mask", "0xa751e84a"},
	} {
		w.file(path.Join(port, a[0]), a[1])
	}
	for j, f := range ibPortCounterFiles {
		traffic := f == "port_rcv_data" || f == "port_xmit_data" || f == "port_rcv_packets" ||
			f == "port_xmit_packets" || f == "unicast_rcv_packets" || f == "unicast_xmit_packets"
		w.file(path.Join(port, "counters", f), strconv.FormatUint(value(100+i, j, traffic), 10))
	}
	for j, f := range ibHWCounterFiles {
		v := value(200+i, j, f == "rx_write_requests" || f == "rx_read_requests")
		if f == "lifespan" {
			v = 10
		}
		w.file(path.Join(port, "hw_counters", f), strconv.FormatUint(v, 10))
	}
	writePCI(w, pci, "mlx5_core", "0x020700", i) // InfiniBand controller
}
