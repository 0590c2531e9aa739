package scalehost

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/nic-exporter/nic_exporter/internal/ethtooldump"
	"github.com/nic-exporter/nic_exporter/internal/ethtoolioctl"
)

// Statistic names of `ethtool -S`, in driver order.
//
// mlx5: the groups and names of Linux
// drivers/net/ethernet/mellanox/mlx5/core/en_stats.c and en_stats.h,
// verified line by line against kernel-patches/bpf commit 63533010fdd0 (a
// bpf-next tree of the second half of 2025), for a ConnectX-7 port with
// CONFIG_MLX5_EN_ARFS=y, CONFIG_MLX5_EN_TLS off, one traffic class, AF_XDP
// never used and no PTP or HTB queues, with the pause counters of all 8
// priorities (PFC) and of global pause (the driver prints each kind only
// while that mode is on; both are kept to cover every name): software counters (with the rx_xsk_*/tx_xsk_* totals the driver
// always prints), q counters, vNIC env, vport, IEEE 802.3, RFC 2863,
// RFC 2819, phy, eth_ext, PCIe, per priority, port module events, then per
// channel ch<N>_, rx<N>_ with rx<N>_xdp_tx_, tx<N>_, tx<N>_xdp_, then the
// per-TC buffer and congestion counters. The same list as the collector's
// fixture collector/ethtool/testdata/mlx5.txt (a test checks it): 304
// statistics plus 89 per channel, so 64 channels give 6,000 (node_exporter
// issue #2096 reported about 5,000 for ConnectX ports of older kernels,
// whose channels had fewer counters).
//
// ENA: Linux drivers/net/ethernet/amazon/ena/ena_ethtool.c (global and
// ENI allowance counters, queue_<N>_tx_ and queue_<N>_rx_ per queue, the
// ena_admin_q_ counters).

var mlx5Global = []string{
	// sw (sw_stats_desc)
	"rx_packets", "rx_bytes", "tx_packets", "tx_bytes", "tx_tso_packets", "tx_tso_bytes",
	"tx_tso_inner_packets", "tx_tso_inner_bytes", "tx_added_vlan_packets", "tx_nop", "tx_mpwqe_blks",
	"tx_mpwqe_pkts", "rx_lro_packets", "rx_lro_bytes", "rx_gro_packets", "rx_gro_bytes", "rx_gro_skbs",
	"rx_gro_large_hds", "rx_hds_nodata_packets", "rx_hds_nodata_bytes", "rx_hds_nosplit_packets",
	"rx_hds_nosplit_bytes", "rx_ecn_mark", "rx_removed_vlan_packets", "rx_csum_unnecessary", "rx_csum_none",
	"rx_csum_complete", "rx_csum_complete_tail", "rx_csum_complete_tail_slow", "rx_csum_unnecessary_inner",
	"rx_xdp_drop", "rx_xdp_redirect", "rx_xdp_tx_xmit", "rx_xdp_tx_mpwqe", "rx_xdp_tx_inlnw",
	"rx_xdp_tx_nops", "rx_xdp_tx_full", "rx_xdp_tx_err", "rx_xdp_tx_cqe", "tx_csum_none", "tx_csum_partial",
	"tx_csum_partial_inner", "tx_queue_stopped", "tx_queue_dropped", "tx_xmit_more", "tx_recover", "tx_cqes",
	"tx_queue_wake", "tx_cqe_err", "tx_time_budget_exit", "tx_xdp_xmit", "tx_xdp_mpwqe", "tx_xdp_inlnw",
	"tx_xdp_nops", "tx_xdp_full", "tx_xdp_err", "tx_xdp_cqes", "rx_wqe_err", "rx_mpwqe_filler_cqes",
	"rx_mpwqe_filler_strides", "rx_oversize_pkts_sw_drop", "rx_buff_alloc_err", "rx_cqe_compress_blks",
	"rx_cqe_compress_pkts", "rx_congst_umr", "rx_arfs_add", "rx_arfs_request_in", "rx_arfs_request_out",
	"rx_arfs_expired", "rx_arfs_err", "rx_recover", "rx_pp_alloc_fast", "rx_pp_alloc_slow",
	"rx_pp_alloc_slow_high_order", "rx_pp_alloc_empty", "rx_pp_alloc_refill", "rx_pp_alloc_waive",
	"rx_pp_recycle_cached", "rx_pp_recycle_cache_full", "rx_pp_recycle_ring", "rx_pp_recycle_ring_full",
	"rx_pp_recycle_released_ref", "ch_events", "ch_poll", "ch_arm", "ch_aff_change", "ch_force_irq",
	"ch_eq_rearm", "rx_xsk_packets", "rx_xsk_bytes", "rx_xsk_csum_complete", "rx_xsk_csum_unnecessary",
	"rx_xsk_csum_unnecessary_inner", "rx_xsk_csum_none", "rx_xsk_ecn_mark", "rx_xsk_removed_vlan_packets",
	"rx_xsk_xdp_drop", "rx_xsk_xdp_redirect", "rx_xsk_wqe_err", "rx_xsk_mpwqe_filler_cqes",
	"rx_xsk_mpwqe_filler_strides", "rx_xsk_oversize_pkts_sw_drop", "rx_xsk_buff_alloc_err",
	"rx_xsk_cqe_compress_blks", "rx_xsk_cqe_compress_pkts", "rx_xsk_congst_umr", "tx_xsk_xmit",
	"tx_xsk_mpwqe", "tx_xsk_inlnw", "tx_xsk_full", "tx_xsk_err", "tx_xsk_cqes",
	// q counters
	"rx_out_of_buffer", "rx_if_down_packets",
	// vNIC env
	"rx_steer_missed_packets", "dev_internal_queue_oob", "rx_oversize_pkts_buffer",
	// vport
	"rx_vport_unicast_packets", "rx_vport_unicast_bytes", "tx_vport_unicast_packets",
	"tx_vport_unicast_bytes", "rx_vport_multicast_packets", "rx_vport_multicast_bytes",
	"tx_vport_multicast_packets", "tx_vport_multicast_bytes", "rx_vport_broadcast_packets",
	"rx_vport_broadcast_bytes", "tx_vport_broadcast_packets", "tx_vport_broadcast_bytes",
	"rx_vport_rdma_unicast_packets", "rx_vport_rdma_unicast_bytes",
	"tx_vport_rdma_unicast_packets", "tx_vport_rdma_unicast_bytes",
	"rx_vport_rdma_multicast_packets", "rx_vport_rdma_multicast_bytes",
	"tx_vport_rdma_multicast_packets", "tx_vport_rdma_multicast_bytes",
	"vport_loopback_packets", "vport_loopback_bytes",
	// IEEE 802.3
	"tx_packets_phy", "rx_packets_phy", "rx_crc_errors_phy", "tx_bytes_phy", "rx_bytes_phy",
	"tx_multicast_phy", "tx_broadcast_phy", "rx_multicast_phy", "rx_broadcast_phy",
	"rx_in_range_len_errors_phy", "rx_out_of_range_len_phy", "rx_oversize_pkts_phy",
	"rx_symbol_err_phy", "tx_mac_control_phy", "rx_mac_control_phy", "rx_unsupported_op_phy",
	"rx_pause_ctrl_phy", "tx_pause_ctrl_phy",
	// RFC 2863
	"rx_discards_phy", "tx_discards_phy", "tx_errors_phy",
	// RFC 2819
	"rx_undersize_pkts_phy", "rx_fragments_phy", "rx_jabbers_phy", "rx_64_bytes_phy",
	"rx_65_to_127_bytes_phy", "rx_128_to_255_bytes_phy", "rx_256_to_511_bytes_phy",
	"rx_512_to_1023_bytes_phy", "rx_1024_to_1518_bytes_phy", "rx_1519_to_2047_bytes_phy",
	"rx_2048_to_4095_bytes_phy", "rx_4096_to_8191_bytes_phy", "rx_8192_to_10239_bytes_phy",
	// phy
	"link_down_events_phy", "rx_pcs_symbol_err_phy", "rx_corrected_bits_phy",
	"rx_err_lane_0_phy", "rx_err_lane_1_phy", "rx_err_lane_2_phy", "rx_err_lane_3_phy",
	"total_success_recovery_phy",
	// eth ext
	"rx_buffer_passed_thres_phy",
	// PCIe
	"rx_pci_signal_integrity", "tx_pci_signal_integrity", "outbound_pci_buffer_overflow",
	"outbound_pci_stalled_rd", "outbound_pci_stalled_wr", "outbound_pci_stalled_rd_events",
	"outbound_pci_stalled_wr_events",
}

var (
	mlx5PrioTraffic = []string{"rx_prio%d_bytes", "rx_prio%d_packets", "rx_prio%d_discards", "tx_prio%d_bytes", "tx_prio%d_packets"}
	// The pause counters, for "prio<N>" of each PFC priority, then "global".
	mlx5Pause      = []string{"rx_%s_pause", "rx_%s_pause_duration", "tx_%s_pause", "tx_%s_pause_duration", "rx_%s_pause_transition"}
	mlx5PauseStorm = []string{"tx_pause_storm_warning_events", "tx_pause_storm_error_events"}
	mlx5PME        = []string{"module_unplug", "module_bus_stuck", "module_high_temp", "module_bad_shorted"}
	mlx5BuffCong   = []string{"rx_prio%d_buf_discard", "rx_prio%d_cong_discard", "rx_prio%d_marked"}
)

var (
	mlx5Ch = []string{"events", "poll", "arm", "aff_change", "force_irq", "eq_rearm"}
	mlx5RQ = []string{
		"packets", "bytes", "csum_complete", "csum_complete_tail", "csum_complete_tail_slow",
		"csum_unnecessary", "csum_unnecessary_inner", "csum_none", "xdp_drop", "xdp_redirect",
		"lro_packets", "lro_bytes", "gro_packets", "gro_bytes", "gro_skbs", "gro_large_hds",
		"hds_nodata_packets", "hds_nodata_bytes", "hds_nosplit_packets", "hds_nosplit_bytes", "ecn_mark",
		"removed_vlan_packets", "wqe_err", "mpwqe_filler_cqes", "mpwqe_filler_strides",
		"oversize_pkts_sw_drop", "buff_alloc_err", "cqe_compress_blks", "cqe_compress_pkts", "congst_umr",
		"arfs_add", "arfs_request_in", "arfs_request_out", "arfs_expired", "arfs_err", "recover",
		"pp_alloc_fast", "pp_alloc_slow", "pp_alloc_slow_high_order", "pp_alloc_empty", "pp_alloc_refill",
		"pp_alloc_waive", "pp_recycle_cached", "pp_recycle_cache_full", "pp_recycle_ring",
		"pp_recycle_ring_full", "pp_recycle_released_ref",
	}
	mlx5SQ = []string{
		"packets", "bytes", "tso_packets", "tso_bytes", "tso_inner_packets", "tso_inner_bytes",
		"csum_partial", "csum_partial_inner", "added_vlan_packets", "nop", "timestamps", "mpwqe_blks",
		"mpwqe_pkts", "csum_none", "stopped", "dropped", "xmit_more", "recover", "cqes", "wake",
		"cqe_err", "time_budget_exit",
	}
	mlx5XDPSQ = []string{"xmit", "mpwqe", "inlnw", "nops", "full", "err", "cqes"}
)

// Mlx5StatNames returns the `ethtool -S` names of an mlx5 port with the
// given number of channels.
func Mlx5StatNames(channels int) []string {
	perChannel := len(mlx5Ch) + len(mlx5RQ) + len(mlx5XDPSQ) + len(mlx5SQ) + len(mlx5XDPSQ)
	out := make([]string, 0, len(mlx5Global)+8*(len(mlx5PrioTraffic)+len(mlx5Pause)+len(mlx5BuffCong))+
		len(mlx5Pause)+len(mlx5PauseStorm)+len(mlx5PME)+channels*perChannel)
	out = append(out, mlx5Global...)
	for p := 0; p < 8; p++ {
		for _, f := range mlx5PrioTraffic {
			out = append(out, fmt.Sprintf(f, p))
		}
	}
	for p := 0; p < 8; p++ {
		for _, f := range mlx5Pause {
			out = append(out, fmt.Sprintf(f, fmt.Sprintf("prio%d", p)))
		}
	}
	for _, f := range mlx5Pause {
		out = append(out, fmt.Sprintf(f, "global"))
	}
	out = append(out, mlx5PauseStorm...)
	out = append(out, mlx5PME...)
	for i := 0; i < channels; i++ {
		for _, s := range mlx5Ch {
			out = append(out, fmt.Sprintf("ch%d_%s", i, s))
		}
	}
	for i := 0; i < channels; i++ {
		for _, s := range mlx5RQ {
			out = append(out, fmt.Sprintf("rx%d_%s", i, s))
		}
		for _, s := range mlx5XDPSQ {
			out = append(out, fmt.Sprintf("rx%d_xdp_tx_%s", i, s))
		}
	}
	for i := 0; i < channels; i++ {
		for _, s := range mlx5SQ {
			out = append(out, fmt.Sprintf("tx%d_%s", i, s))
		}
	}
	for i := 0; i < channels; i++ {
		for _, s := range mlx5XDPSQ {
			out = append(out, fmt.Sprintf("tx%d_xdp_%s", i, s))
		}
	}
	for p := 0; p < 8; p++ {
		for _, f := range mlx5BuffCong {
			out = append(out, fmt.Sprintf(f, p))
		}
	}
	return out
}

var (
	enaGlobal = []string{
		"tx_timeout", "suspend", "resume", "wd_expired", "interface_up", "interface_down",
		"admin_q_pause", "bw_in_allowance_exceeded", "bw_out_allowance_exceeded",
		"pps_allowance_exceeded", "conntrack_allowance_exceeded", "linklocal_allowance_exceeded",
		"conntrack_allowance_available",
	}
	enaTx = []string{
		"cnt", "bytes", "queue_stop", "queue_wakeup", "dma_mapping_err", "linearize",
		"linearize_failed", "napi_comp", "tx_poll", "doorbells", "prepare_ctx_err", "bad_req_id",
		"llq_buffer_copy", "missed_tx", "unmask_interrupt",
	}
	enaRx = []string{
		"cnt", "bytes", "rx_copybreak_pkt", "csum_good", "refil_partial", "csum_bad",
		"page_alloc_fail", "skb_alloc_fail", "dma_mapping_err", "bad_desc_num", "bad_req_id",
		"empty_rx_ring", "csum_unchecked", "xdp_aborted", "xdp_drop", "xdp_pass", "xdp_tx",
		"xdp_invalid", "xdp_redirect",
	}
	enaAdmin = []string{"aborted_cmd", "submitted_cmd", "completed_cmd", "out_of_space", "no_completion"}
)

// ENAStatNames returns the `ethtool -S` names of an ENA interface with
// the given number of queues.
func ENAStatNames(queues int) []string {
	out := make([]string, 0, len(enaGlobal)+queues*(len(enaTx)+len(enaRx))+len(enaAdmin))
	out = append(out, enaGlobal...)
	for q := 0; q < queues; q++ {
		for _, s := range enaTx {
			out = append(out, fmt.Sprintf("queue_%d_tx_%s", q, s))
		}
		for _, s := range enaRx {
			out = append(out, fmt.Sprintf("queue_%d_rx_%s", q, s))
		}
	}
	for _, s := range enaAdmin {
		out = append(out, "ena_admin_q_"+s)
	}
	return out
}

// isTraffic says whether a statistic counts packets or bytes, which are
// large on a busy host; everything else is mostly zero.
func isTraffic(name string) bool {
	return strings.HasSuffix(name, "packets") || strings.HasSuffix(name, "bytes") ||
		strings.HasSuffix(name, "_cnt") || strings.HasSuffix(name, "_events") || strings.HasSuffix(name, "_poll")
}

// EthtoolDump returns the `ethtool -i` and `ethtool -S` output of ifc, as
// the two commands print them one after the other.
func EthtoolDump(ifc Iface, seed int) string {
	var names []string
	var b strings.Builder
	switch ifc.Driver {
	case "ena":
		names = ENAStatNames(ifc.Queues)
		fmt.Fprintf(&b, "driver: ena\nversion: 2.8.0g\nfirmware-version: \n")
	default:
		names = Mlx5StatNames(ifc.Queues)
		fmt.Fprintf(&b, "driver: mlx5_core\nversion: 6.1.0\nfirmware-version: 28.39.1002 (MT_0000000838)\n")
	}
	fmt.Fprintf(&b, "expansion-rom-version: \nbus-info: %s\nsupports-statistics: yes\n", ifc.PCIAddress)
	b.WriteString("NIC statistics:\n")
	for j, n := range names {
		v := value(seed, j, isTraffic(n))
		if n == "conntrack_allowance_available" {
			v = 500000
		}
		b.WriteString("     ")
		b.WriteString(n)
		b.WriteString(": ")
		b.WriteString(strconv.FormatUint(v, 10))
		b.WriteByte('\n')
	}
	return b.String()
}

func writeEthtool(dir string, c Config) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i, ifc := range c.Ifaces() {
		f, err := os.Create(filepath.Join(dir, ifc.Name+".txt"))
		if err != nil {
			return err
		}
		bw := bufio.NewWriter(f)
		fmt.Fprintf(bw, "# Synthetic %s dump written by bench/scalehost (names from the Linux driver sources).\n", ifc.Driver)
		bw.WriteString(EthtoolDump(ifc, i))
		if err := bw.Flush(); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}

// EthtoolSource reads the dumps Write put in l.Ethtool for c's interfaces
// and serves them as the ethtool collector's source, with the link up at
// 400 Gb/s (mlx5) or unknown speed (ENA).
func EthtoolSource(l Layout, c Config) (*ethtooldump.Source, error) {
	var devs []*ethtooldump.Device
	for _, ifc := range c.Ifaces() {
		f, err := os.Open(filepath.Join(l.Ethtool, ifc.Name+".txt"))
		if err != nil {
			return nil, err
		}
		d, err := ethtooldump.Parse(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ifc.Name, err)
		}
		link := ethtoolioctl.Link{HasSettings: true, SpeedMbps: 400000, Duplex: 1, Autoneg: 1, HasDetected: true, Detected: true}
		if ifc.Driver == "ena" {
			link = ethtoolioctl.Link{HasDetected: true, Detected: true}
		}
		devs = append(devs, &ethtooldump.Device{Name: ifc.Name, Index: ifc.Index, Dump: d, Link: link})
	}
	return ethtooldump.NewSource(devs...), nil
}
