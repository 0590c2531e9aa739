package infiniband

import (
	"strings"

	"github.com/nic-exporter/nic_exporter/collector/exposition"
)

// ibPhysStates names the InfiniBand physical port states as ibstat prints
// them (IBA PortInfo:PortPhysicalState), by the number the kernel writes in
// ports/<n>/phys_state.
var ibPhysStates = map[uint64]string{
	1: "Sleep",
	2: "Polling",
	3: "Disabled",
	4: "PortConfigurationTraining",
	5: "LinkUp",
	6: "LinkErrorRecovery",
	7: "PhyTest",
}

// ibPortStates names the InfiniBand logical port states (IBA
// PortInfo:PortState) by the number the kernel writes in ports/<n>/state.
var ibPortStates = map[uint64]string{
	1: "DOWN",
	2: "INIT",
	3: "ARMED",
	4: "ACTIVE",
	5: "ACTIVE_DEFER",
}

var (
	ibInfo = exposition.MustNewDesc("nic_infiniband_info",
		"InfiniBand/RDMA device facts, value 1: HCA type, board id, firmware version, node GUID and the PCI address of the device (empty for software devices such as rxe).",
		exposition.Gauge, "device", "hca_type", "board_id", "firmware_version", "node_guid", "pci_address")
	ibPortState = exposition.MustNewDesc("nic_infiniband_port_state",
		"Logical port state from ports/<port>/state: 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE, 5 ACTIVE_DEFER.",
		exposition.Gauge, "device", "port")
	ibPortPhysState = exposition.MustNewDesc("nic_infiniband_port_phys_state",
		"Physical port state from ports/<port>/phys_state, numbered as ibstat names them: 1 Sleep, 2 Polling, 3 Disabled, 4 PortConfigurationTraining, 5 LinkUp, 6 LinkErrorRecovery, 7 PhyTest.",
		exposition.Gauge, "device", "port")
	ibPortRate = exposition.MustNewDesc("nic_infiniband_port_rate_bytes_per_second",
		"Active data rate of the port from ports/<port>/rate (for example 400 Gb/sec (4X NDR) is 5e10).",
		exposition.Gauge, "device", "port")
	ibPortInfo = exposition.MustNewDesc("nic_infiniband_port_info",
		"Port facts, value 1: link layer (InfiniBand or Ethernet).",
		exposition.Gauge, "device", "port", "link_layer")
	ibPortNetdev = exposition.MustNewDesc("nic_infiniband_port_netdev_info",
		"Value 1 for each network interface the port backs: the IPoIB interface of an InfiniBand port, the Ethernet interface of a RoCE port.",
		exposition.Gauge, "device", "port", "netdev")
	ibPortLID = exposition.MustNewDesc("nic_infiniband_port_lid",
		"Base local identifier the subnet manager assigned to the port (InfiniBand link layer only; 0 until a subnet manager configures the port).",
		exposition.Gauge, "device", "port")
	ibPortSMLID = exposition.MustNewDesc("nic_infiniband_port_sm_lid",
		"Local identifier of the subnet manager that manages the port (InfiniBand link layer only).",
		exposition.Gauge, "device", "port")
)

// ibCounter is one counter file with its fixed metric.
type ibCounter struct {
	file  string
	scale float64 // multiplier from the file's unit to the metric's
	desc  *exposition.Desc
	// bits is the width of the IBA PortCounters field behind the file; 0
	// for the 64-bit PortCountersExtended counters, which never saturate
	// in practice, and for hw_counters.
	bits uint
}

// saturatedAt returns the value at which a counter of the given width
// stops counting, and false for counters without a width.
func saturatedAt(bits uint) (uint64, bool) {
	if bits == 0 || bits >= 64 {
		return 0, false
	}
	return 1<<bits - 1, true
}

// ibPortCounters lists the IBA PortCounters and PortCountersExtended the
// kernel exposes in ports/<port>/counters. Where the device supports
// PortCountersExtended the data and packet files carry the 64-bit
// extended values; otherwise they are the classic 32-bit counters, which
// saturate at their maximum instead of wrapping, as do the 4-, 8- and
// 16-bit error counters.
//
// The widths are those of the PortCounters attribute (IBA vol. 1,
// 16.1.3.5) as the kernel declares it in include/rdma/ib_pma.h, struct
// ib_pma_portcounters: symbol_error_counter __be16,
// link_error_recovery_counter u8, link_downed_counter u8, port_rcv_errors,
// port_rcv_remphys_errors, port_rcv_switch_relay_errors and
// port_xmit_discards __be16, port_xmit_constraint_errors and
// port_rcv_constraint_errors u8, link_overrun_errors u8 holding LocalLink
// (bits 7:4) and BufferOverrun (bits 3:0), vl15_dropped __be16, and
// port_xmit_data, port_rcv_data, port_xmit_packets, port_rcv_packets and
// port_xmit_wait __be32.
var ibPortCounters = func() []ibCounter {
	defs := []struct {
		file, help string
		scale      float64
		bits       uint
	}{
		{"symbol_error", "Minor link errors (symbol errors) detected on one or more physical lanes. 16-bit, saturating.", 1, 16},
		{"link_error_recovery", "Times the port training state machine completed link error recovery. 8-bit, saturating.", 1, 8},
		{"link_downed", "Times the link error recovery process failed and the link went down. 8-bit, saturating.", 1, 8},
		{"port_rcv_errors", "Received packets with errors (local physical errors, malformed packets, buffer overruns). 16-bit, saturating.", 1, 16},
		{"port_rcv_remote_physical_errors", "Received packets marked with the EBP delimiter (a remote physical error). 16-bit, saturating.", 1, 16},
		{"port_rcv_switch_relay_errors", "Received packets discarded because they could not be forwarded by the switch relay. 16-bit, saturating.", 1, 16},
		{"port_xmit_discards", "Outbound packets discarded because the port was down or congested. 16-bit, saturating.", 1, 16},
		{"port_xmit_constraint_errors", "Outbound packets not transmitted because of partition or raw packet constraints. 8-bit, saturating.", 1, 8},
		{"port_rcv_constraint_errors", "Received packets discarded because of partition or raw packet constraints. 8-bit, saturating.", 1, 8},
		{"local_link_integrity_errors", "Times the count of local physical errors exceeded the LocalPhyErrors threshold. 4-bit, saturating.", 1, 4},
		{"excessive_buffer_overrun_errors", "Times consecutive flow-control update periods had buffer overruns. 4-bit, saturating.", 1, 4},
		{"VL15_dropped", "Received subnet management (VL15) packets dropped for lack of buffers. 16-bit, saturating.", 1, 16},
		{"port_xmit_data", "Data transmitted on all VLs, in bytes (the file counts 4-byte words; mlx4's counters_ext/port_xmit_data_64 when present).", 4, 32},
		{"port_rcv_data", "Data received on all VLs, in bytes (the file counts 4-byte words; mlx4's counters_ext/port_rcv_data_64 when present).", 4, 32},
		{"port_xmit_packets", "Packets transmitted on all VLs (mlx4's counters_ext/port_xmit_packets_64 when present).", 1, 32},
		{"port_rcv_packets", "Packets received on all VLs (mlx4's counters_ext/port_rcv_packets_64 when present).", 1, 32},
		{"port_xmit_wait", "Ticks during which the port had data to transmit but none was sent (no flow-control credits): congestion from the fabric. 32-bit, saturating, unless extended.", 1, 32},
		{"unicast_xmit_packets", "Unicast packets transmitted (PortCountersExtended).", 1, 0},
		{"unicast_rcv_packets", "Unicast packets received (PortCountersExtended).", 1, 0},
		{"multicast_xmit_packets", "Multicast packets transmitted (PortCountersExtended).", 1, 0},
		{"multicast_rcv_packets", "Multicast packets received (PortCountersExtended).", 1, 0},
	}
	out := make([]ibCounter, len(defs))
	for i, d := range defs {
		out[i] = ibCounter{file: d.file, scale: d.scale, bits: d.bits, desc: exposition.MustNewDesc(ibPortCounterName(d.file, d.scale),
			d.help+" From ports/<port>/counters/"+d.file+".", exposition.Counter, "device", "port")}
	}
	return out
}()

// PortCounterBits returns the width of the IBA PortCounters field behind
// the ports/<port>/counters file of that name (4, 8, 16 or 32 bits; 0
// for the 64-bit PortCountersExtended ones), and false for a name the
// collector does not read. The data and packet files are 32 bits wide
// here but carry 64-bit values where the kernel serves them from
// PortCountersExtended. diagnose uses it to tell apart the readings of a
// file of bare values.
func PortCounterBits(file string) (uint, bool) {
	for _, c := range ibPortCounters {
		if c.file == file {
			return c.bits, true
		}
	}
	return 0, false
}

// ibCounterSaturated says whether a fixed-width port counter is stuck at
// its maximum.
var ibCounterSaturated = exposition.MustNewDesc("nic_infiniband_port_counters_saturated",
	"1 while the IBA PortCounters counter (label counter, the file name in ports/<port>/counters) is stuck at the maximum of its width (4, 8, 16 or 32 bits; include/rdma/ib_pma.h): it no longer counts until it is reset, for example with perfquery -x -R, so its rate reads 0. 0 otherwise. A 32-bit data or packet counter that the kernel serves from PortCountersExtended (value above 2^32-1) or from mlx4's counters_ext/*_64 is never saturated.",
	exposition.Gauge, "device", "port", "counter")

// ibPortCounterName derives a counters/ file's metric name: the prefix
// nic_infiniband_port_, the file name in lower case without its own
// "port_" prefix, "_bytes" for the data counters, then "_total".
func ibPortCounterName(file string, scale float64) string {
	n := "nic_infiniband_port_" + strings.ToLower(strings.TrimPrefix(file, "port_"))
	if scale != 1 {
		n += "_bytes"
	}
	return n + "_total"
}

// ibHWCounters lists the hw_counters files nic_exporter knows, by driver.
// Each becomes nic_infiniband_hw_<file>_total; files not listed here (for
// example the hundreds of hfi1 per-context counters) are skipped, and so is
// lifespan, which is a setting (how long the kernel caches the values, in
// milliseconds), not a counter.
var ibHWCounters = func() map[string]*exposition.Desc {
	defs := []struct{ file, help string }{
		// mlx5 (drivers/infiniband/hw/mlx5/counters.c): queue counters.
		{"rx_write_requests", "mlx5: RDMA write requests received (responder)."},
		{"rx_read_requests", "mlx5: RDMA read requests received (responder)."},
		{"rx_atomic_requests", "mlx5: atomic requests received (responder)."},
		{"rx_dct_connect", "mlx5: DCT connect requests received."},
		{"out_of_buffer", "mlx5: packets dropped because no receive WQE was posted (responder sent an RNR NAK, or a UD packet was dropped); the sender's side of rnr_nak_retry_err."},
		{"out_of_sequence", "mlx5: out-of-sequence packets received (responder); a sign of packet loss in the fabric."},
		{"duplicate_request", "Duplicate requests received (responder): the requester retransmitted a packet already executed."},
		{"rnr_nak_retry_err", "mlx5: RNR NAKs received (requester). Each is retried; when the QP's rnr_retry count is exhausted the work request completes with IBV_WC_RNR_RETRY_EXC_ERR."},
		{"packet_seq_err", "mlx5: NAK sequence errors received (requester)."},
		{"implied_nak_seq_err", "mlx5: implied NAK sequence errors (requester): an ACK with a later PSN implies an earlier request was lost."},
		{"local_ack_timeout_err", "mlx5: ACK timer expirations (requester). Each is retried; when the QP's retry_cnt is exhausted the work request completes with IBV_WC_RETRY_EXC_ERR."},
		{"resp_local_length_error", "mlx5: responder local length errors: an incoming message was longer than the posted receive buffer (IBV_WC_LOC_LEN_ERR on the receive CQ)."},
		{"resp_cqe_error", "mlx5: responder completions with an error status."},
		{"req_cqe_error", "mlx5: requester completions with an error status."},
		{"req_remote_invalid_request", "mlx5: requester received a remote invalid request NAK (IBV_WC_REM_INV_REQ_ERR)."},
		{"req_remote_access_errors", "mlx5: requester received a remote access error NAK, for example a bad rkey (IBV_WC_REM_ACCESS_ERR)."},
		{"resp_remote_access_errors", "mlx5: responder detected a remote access error, for example an RDMA request with a bad rkey (the peer sees IBV_WC_REM_ACCESS_ERR)."},
		{"resp_cqe_flush_error", "mlx5: responder completions flushed with error because the QP went to the error state (IBV_WC_WR_FLUSH_ERR on the receive CQ)."},
		{"req_cqe_flush_error", "mlx5: requester completions flushed with error because the QP went to the error state (IBV_WC_WR_FLUSH_ERR on the send CQ)."},
		{"req_transport_retries_exceeded", "mlx5: requester transport retry count exceeded; the QP moved to error (IBV_WC_RETRY_EXC_ERR)."},
		{"req_rnr_retries_exceeded", "mlx5: requester RNR retry count exceeded; the QP moved to error (IBV_WC_RNR_RETRY_EXC_ERR)."},
		{"roce_adp_retrans", "mlx5: adaptive retransmissions of RoCE traffic."},
		{"roce_adp_retrans_to", "mlx5: adaptive retransmission timeouts of RoCE traffic."},
		{"roce_slow_restart", "mlx5: RoCE slow restarts."},
		{"roce_slow_restart_cnps", "mlx5: CNPs sent during RoCE slow restart."},
		{"roce_slow_restart_trans", "mlx5: transitions to the RoCE slow restart state."},
		{"rx_icrc_encapsulated", "mlx5: RoCE packets received with an ICRC error."},
		// mlx5 congestion counters (RoCE DCQCN).
		{"rp_cnp_ignored", "mlx5: congestion notification packets received and ignored by the reaction point."},
		{"rp_cnp_handled", "mlx5: congestion notification packets handled by the reaction point (the sender slowed down)."},
		{"np_ecn_marked_roce_packets", "mlx5: ECN-marked RoCE packets received by the notification point."},
		{"np_cnp_sent", "mlx5: congestion notification packets sent by the notification point in reply to CE-marked (ECN) RoCE packets it received."},
		// rxe, Soft-RoCE (drivers/infiniband/sw/rxe/rxe_hw_counters.c).
		{"sent_pkts", "rxe: packets sent."},
		{"rcvd_pkts", "rxe: packets received."},
		{"out_of_seq_request", "rxe: out-of-sequence requests received."},
		{"rcvd_rnr_err", "rxe: RNR NAKs received."},
		{"send_rnr_err", "rxe: RNR NAKs sent."},
		{"rcvd_seq_err", "rxe: sequence error NAKs received."},
		{"ack_deferred", "rxe: ACK processing deferred to the completer task."},
		{"retry_exceeded_err", "rxe: transport retry count exceeded (IBV_WC_RETRY_EXC_ERR)."},
		{"retry_rnr_exceeded_err", "rxe: RNR retry count exceeded (IBV_WC_RNR_RETRY_EXC_ERR)."},
		{"completer_retry_err", "rxe: retries started by the completer."},
		{"send_err", "rxe: packets that failed to be sent."},
		{"link_downed", "rxe: times the underlying network interface went down."},
		{"rdma_sends", "rxe: RDMA send work requests."},
		{"rdma_recvs", "rxe: RDMA receive work requests."},
		// AWS EFA (drivers/infiniband/hw/efa/efa_verbs.c). Port
		// counters (EFA_DEFINE_PORT_STATS, ports/1/hw_counters) are the
		// device's own, read with the EFA_ADMIN_GET_STATS admin command
		// in efa_fill_port_stats; before the driver split its statistics
		// into device and port ones, the device-level hw_counters/ held
		// the same values. The device's SRD transport retransmits and
		// reroutes on its own, so loss shows here and not as errors.
		{"tx_bytes", "efa: bytes the device transmitted (basic statistics, Linux 5.4)."},
		{"tx_pkts", "efa: packets the device transmitted (basic statistics, Linux 5.4)."},
		{"rx_bytes", "efa: bytes the device received (basic statistics, Linux 5.4)."},
		{"rx_pkts", "efa: packets the device received (basic statistics, Linux 5.4)."},
		{"rx_drops", "efa: received packets the device dropped (basic statistics, Linux 5.4)."},
		{"rdma_read_bytes", "efa: bytes this host read from remote memory with RDMA read work requests (requester; Linux 5.10)."},
		{"rdma_read_resp_bytes", "efa: bytes this host sent in response to remote RDMA read requests (responder; Linux 5.10)."},
		{"rdma_read_wr_err", "efa: RDMA read work requests that completed with an error (Linux 5.10)."},
		{"rdma_write_bytes", "efa: bytes this host wrote to remote memory with RDMA write work requests (requester; Linux 6.6)."},
		{"rdma_write_recv_bytes", "efa: bytes remote hosts wrote into this host's memory with RDMA write (responder; Linux 6.6)."},
		{"rdma_write_wr_err", "efa: RDMA write work requests that completed with an error (Linux 6.6)."},
		{"retrans_bytes", "efa: bytes the SRD transport retransmitted (network statistics, Linux 6.17; Nitro v4 and later devices)."},
		{"retrans_pkts", "efa: packets the SRD transport retransmitted (network statistics, Linux 6.17; Nitro v4 and later devices)."},
		{"retrans_timeout_events", "efa: times SRD traffic timed out and the device moved it to another network path (Linux 6.17)."},
		{"unresponsive_remote_events", "efa: times a remote SRD peer stopped responding (Linux 6.17)."},
		{"impaired_remote_conn_events", "efa: times an SRD connection entered an impaired state, in which the device limits its throughput (Linux 6.17)."},
		// EFA device statistics (EFA_DEFINE_DEVICE_STATS, the
		// device-level hw_counters, port="0"): the driver's admin queue
		// to the device (efa_com.c).
		{"cmds_err", "efa: admin commands to the device that failed (device statistics, Linux 5.4)."},
		{"no_completion_cmds", "efa: admin commands the device never completed within the driver's timeout; the driver then stops its admin queue (efa_com.c, Linux 5.4)."},
	}
	out := make(map[string]*exposition.Desc, len(defs))
	for _, d := range defs {
		out[d.file] = exposition.MustNewDesc("nic_infiniband_hw_"+d.file+"_total",
			d.help+" From hw_counters/"+d.file+" of the port, or of the device with port=\"0\".",
			exposition.Counter, "device", "port")
	}
	return out
}()
