package ethtool

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mlx5StatGroups are the `ethtool -S` name formats of the Linux mlx5
// Ethernet driver, group by group in the order mlx5e_nic_stats_grps
// prints them, as verified line by line against
// drivers/net/ethernet/mellanox/mlx5/core/en_stats.c and en_stats.h of
// kernel-patches/bpf commit 63533010fdd0 (a bpf-next tree of the second
// half of 2025). %d is a channel, send queue, traffic class or priority
// number; %s in the pause group is "prio%d" or "global". Groups that only
// exist with CONFIG_MLX5_EN_TLS, IPsec or MACsec offload are left out; the
// ARFS counters (CONFIG_MLX5_EN_ARFS) are in. The per-channel XSK groups
// appear once AF_XDP was used on the port, the PTP group while a PTP
// channel is open, the QoS group with HTB offload, the pcie_cong group
// (en/pcie_cong_event.c) when the firmware supports congestion events.
var mlx5StatGroups = []struct {
	group   string
	formats string
}{
	{"sw (sw_stats_desc, MLX5E_DECLARE_STAT)", `rx_packets rx_bytes tx_packets tx_bytes tx_tso_packets tx_tso_bytes
		tx_tso_inner_packets tx_tso_inner_bytes tx_added_vlan_packets tx_nop tx_mpwqe_blks tx_mpwqe_pkts rx_lro_packets
		rx_lro_bytes rx_gro_packets rx_gro_bytes rx_gro_skbs rx_gro_large_hds rx_hds_nodata_packets rx_hds_nodata_bytes
		rx_hds_nosplit_packets rx_hds_nosplit_bytes rx_ecn_mark rx_removed_vlan_packets rx_csum_unnecessary rx_csum_none
		rx_csum_complete rx_csum_complete_tail rx_csum_complete_tail_slow rx_csum_unnecessary_inner rx_xdp_drop
		rx_xdp_redirect rx_xdp_tx_xmit rx_xdp_tx_mpwqe rx_xdp_tx_inlnw rx_xdp_tx_nops rx_xdp_tx_full rx_xdp_tx_err
		rx_xdp_tx_cqe tx_csum_none tx_csum_partial tx_csum_partial_inner tx_queue_stopped tx_queue_dropped tx_xmit_more
		tx_recover tx_cqes tx_queue_wake tx_cqe_err tx_time_budget_exit tx_xdp_xmit tx_xdp_mpwqe tx_xdp_inlnw tx_xdp_nops
		tx_xdp_full tx_xdp_err tx_xdp_cqes rx_wqe_err rx_mpwqe_filler_cqes rx_mpwqe_filler_strides rx_oversize_pkts_sw_drop
		rx_buff_alloc_err rx_cqe_compress_blks rx_cqe_compress_pkts rx_congst_umr rx_arfs_add rx_arfs_request_in
		rx_arfs_request_out rx_arfs_expired rx_arfs_err rx_recover rx_pp_alloc_fast rx_pp_alloc_slow
		rx_pp_alloc_slow_high_order rx_pp_alloc_empty rx_pp_alloc_refill rx_pp_alloc_waive rx_pp_recycle_cached
		rx_pp_recycle_cache_full rx_pp_recycle_ring rx_pp_recycle_ring_full rx_pp_recycle_released_ref ch_events ch_poll
		ch_arm ch_aff_change ch_force_irq ch_eq_rearm rx_xsk_packets rx_xsk_bytes rx_xsk_csum_complete
		rx_xsk_csum_unnecessary rx_xsk_csum_unnecessary_inner rx_xsk_csum_none rx_xsk_ecn_mark rx_xsk_removed_vlan_packets
		rx_xsk_xdp_drop rx_xsk_xdp_redirect rx_xsk_wqe_err rx_xsk_mpwqe_filler_cqes rx_xsk_mpwqe_filler_strides
		rx_xsk_oversize_pkts_sw_drop rx_xsk_buff_alloc_err rx_xsk_cqe_compress_blks rx_xsk_cqe_compress_pkts
		rx_xsk_congst_umr tx_xsk_xmit tx_xsk_mpwqe tx_xsk_inlnw tx_xsk_full tx_xsk_err tx_xsk_cqes`},
	{"qcnt (q_stats_desc, drop_rq_stats_desc)", `rx_out_of_buffer rx_if_down_packets`},
	{"vnic_env", `rx_steer_missed_packets dev_internal_queue_oob rx_oversize_pkts_buffer`},
	{"vport (vport_stats_desc, vport_loopback_stats_desc)", `rx_vport_unicast_packets rx_vport_unicast_bytes
		tx_vport_unicast_packets tx_vport_unicast_bytes rx_vport_multicast_packets rx_vport_multicast_bytes
		tx_vport_multicast_packets tx_vport_multicast_bytes rx_vport_broadcast_packets rx_vport_broadcast_bytes
		tx_vport_broadcast_packets tx_vport_broadcast_bytes rx_vport_rdma_unicast_packets rx_vport_rdma_unicast_bytes
		tx_vport_rdma_unicast_packets tx_vport_rdma_unicast_bytes rx_vport_rdma_multicast_packets
		rx_vport_rdma_multicast_bytes tx_vport_rdma_multicast_packets tx_vport_rdma_multicast_bytes
		vport_loopback_packets vport_loopback_bytes`},
	{"802_3 (pport_802_3_stats_desc)", `tx_packets_phy rx_packets_phy rx_crc_errors_phy tx_bytes_phy rx_bytes_phy
		tx_multicast_phy tx_broadcast_phy rx_multicast_phy rx_broadcast_phy rx_in_range_len_errors_phy
		rx_out_of_range_len_phy rx_oversize_pkts_phy rx_symbol_err_phy tx_mac_control_phy rx_mac_control_phy
		rx_unsupported_op_phy rx_pause_ctrl_phy tx_pause_ctrl_phy`},
	{"2863 (pport_2863_stats_desc)", `rx_discards_phy tx_discards_phy tx_errors_phy`},
	{"2819 (pport_2819_stats_desc)", `rx_undersize_pkts_phy rx_fragments_phy rx_jabbers_phy rx_64_bytes_phy
		rx_65_to_127_bytes_phy rx_128_to_255_bytes_phy rx_256_to_511_bytes_phy rx_512_to_1023_bytes_phy
		rx_1024_to_1518_bytes_phy rx_1519_to_2047_bytes_phy rx_2048_to_4095_bytes_phy rx_4096_to_8191_bytes_phy
		rx_8192_to_10239_bytes_phy`},
	// rx_bits_phy (PPCNT phy_received_bits) was added to the phy
	// statistical group in 2025, after the commit named above.
	{"phy (pport_phy_*_stats_desc)", `link_down_events_phy rx_bits_phy rx_pcs_symbol_err_phy rx_corrected_bits_phy
		rx_err_lane_0_phy rx_err_lane_1_phy rx_err_lane_2_phy rx_err_lane_3_phy total_success_recovery_phy`},
	{"eth_ext (pport_eth_ext_stats_desc)", `rx_buffer_passed_thres_phy`},
	{"pcie (pcie_perf_stats_desc, _desc64, pcie_perf_stall_stats_desc)", `rx_pci_signal_integrity
		tx_pci_signal_integrity outbound_pci_buffer_overflow outbound_pci_stalled_rd outbound_pci_stalled_wr
		outbound_pci_stalled_rd_events outbound_pci_stalled_wr_events`},
	{"per_prio (pport_per_prio_traffic_stats_desc, pport_per_prio_pfc_stats_desc, pport_pfc_stall_stats_desc)",
		`rx_prio%d_bytes rx_prio%d_packets rx_prio%d_discards tx_prio%d_bytes tx_prio%d_packets rx_%s_pause
		rx_%s_pause_duration tx_%s_pause tx_%s_pause_duration rx_%s_pause_transition tx_pause_storm_warning_events
		tx_pause_storm_error_events`},
	{"pme (mlx5e_pme_status_desc, mlx5e_pme_error_desc)", `module_unplug module_bus_stuck module_high_temp
		module_bad_shorted`},
	{"channels (ch_stats_desc, MLX5E_DECLARE_CH_STAT \"ch%d_\")", `ch%d_events ch%d_poll ch%d_arm ch%d_aff_change
		ch%d_force_irq ch%d_eq_rearm`},
	{"channels (rq_stats_desc, MLX5E_DECLARE_RX_STAT \"rx%d_\")", `rx%d_packets rx%d_bytes rx%d_csum_complete
		rx%d_csum_complete_tail rx%d_csum_complete_tail_slow rx%d_csum_unnecessary rx%d_csum_unnecessary_inner
		rx%d_csum_none rx%d_xdp_drop rx%d_xdp_redirect rx%d_lro_packets rx%d_lro_bytes rx%d_gro_packets rx%d_gro_bytes
		rx%d_gro_skbs rx%d_gro_large_hds rx%d_hds_nodata_packets rx%d_hds_nodata_bytes rx%d_hds_nosplit_packets
		rx%d_hds_nosplit_bytes rx%d_ecn_mark rx%d_removed_vlan_packets rx%d_wqe_err rx%d_mpwqe_filler_cqes
		rx%d_mpwqe_filler_strides rx%d_oversize_pkts_sw_drop rx%d_buff_alloc_err rx%d_cqe_compress_blks
		rx%d_cqe_compress_pkts rx%d_congst_umr rx%d_arfs_add rx%d_arfs_request_in rx%d_arfs_request_out
		rx%d_arfs_expired rx%d_arfs_err rx%d_recover rx%d_pp_alloc_fast rx%d_pp_alloc_slow rx%d_pp_alloc_slow_high_order
		rx%d_pp_alloc_empty rx%d_pp_alloc_refill rx%d_pp_alloc_waive rx%d_pp_recycle_cached rx%d_pp_recycle_cache_full
		rx%d_pp_recycle_ring rx%d_pp_recycle_ring_full rx%d_pp_recycle_released_ref`},
	{"channels (xskrq_stats_desc, \"rx%d_xsk_\")", `rx%d_xsk_packets rx%d_xsk_bytes rx%d_xsk_csum_complete
		rx%d_xsk_csum_unnecessary rx%d_xsk_csum_unnecessary_inner rx%d_xsk_csum_none rx%d_xsk_ecn_mark
		rx%d_xsk_removed_vlan_packets rx%d_xsk_xdp_drop rx%d_xsk_xdp_redirect rx%d_xsk_wqe_err
		rx%d_xsk_mpwqe_filler_cqes rx%d_xsk_mpwqe_filler_strides rx%d_xsk_oversize_pkts_sw_drop rx%d_xsk_buff_alloc_err
		rx%d_xsk_cqe_compress_blks rx%d_xsk_cqe_compress_pkts rx%d_xsk_congst_umr`},
	{"channels (rq_xdpsq_stats_desc, \"rx%d_xdp_tx_\")", `rx%d_xdp_tx_xmit rx%d_xdp_tx_mpwqe rx%d_xdp_tx_inlnw
		rx%d_xdp_tx_nops rx%d_xdp_tx_full rx%d_xdp_tx_err rx%d_xdp_tx_cqes`},
	{"channels (sq_stats_desc, MLX5E_DECLARE_TX_STAT \"tx%d_\")", `tx%d_packets tx%d_bytes tx%d_tso_packets
		tx%d_tso_bytes tx%d_tso_inner_packets tx%d_tso_inner_bytes tx%d_csum_partial tx%d_csum_partial_inner
		tx%d_added_vlan_packets tx%d_nop tx%d_timestamps tx%d_mpwqe_blks tx%d_mpwqe_pkts tx%d_csum_none tx%d_stopped
		tx%d_dropped tx%d_xmit_more tx%d_recover tx%d_cqes tx%d_wake tx%d_cqe_err tx%d_time_budget_exit`},
	{"channels (xsksq_stats_desc, \"tx%d_xsk_\")", `tx%d_xsk_xmit tx%d_xsk_mpwqe tx%d_xsk_inlnw tx%d_xsk_full
		tx%d_xsk_err tx%d_xsk_cqes`},
	{"channels (xdpsq_stats_desc, \"tx%d_xdp_\")", `tx%d_xdp_xmit tx%d_xdp_mpwqe tx%d_xdp_inlnw tx%d_xdp_nops
		tx%d_xdp_full tx%d_xdp_err tx%d_xdp_cqes`},
	{"per_port_buff_congest (pport_per_tc_prio_stats_desc, pport_per_tc_congest_prio_stats_desc)",
		`rx_prio%d_buf_discard rx_prio%d_cong_discard rx_prio%d_marked`},
	{"ptp (ptp_ch_stats_desc \"ptp_ch_\", ptp_sq \"ptp_tx%d_\", ptp_cq \"ptp_cq%d_\", ptp_rq \"ptp_rq0_\")",
		`ptp_ch_events ptp_ch_poll ptp_ch_arm ptp_ch_eq_rearm ptp_tx%d_packets ptp_tx%d_bytes ptp_tx%d_csum_partial
		ptp_tx%d_csum_partial_inner ptp_tx%d_added_vlan_packets ptp_tx%d_nop ptp_tx%d_csum_none ptp_tx%d_stopped
		ptp_tx%d_dropped ptp_tx%d_xmit_more ptp_tx%d_recover ptp_tx%d_cqes ptp_tx%d_wake ptp_tx%d_cqe_err
		ptp_tx%d_time_budget_exit ptp_cq%d_cqe ptp_cq%d_err_cqe ptp_cq%d_abort ptp_cq%d_abort_abs_diff_ns
		ptp_cq%d_late_cqe ptp_cq%d_lost_cqe ptp_rq%d_packets ptp_rq%d_bytes ptp_rq%d_csum_complete
		ptp_rq%d_csum_complete_tail ptp_rq%d_csum_complete_tail_slow ptp_rq%d_csum_unnecessary
		ptp_rq%d_csum_unnecessary_inner ptp_rq%d_csum_none ptp_rq%d_xdp_drop ptp_rq%d_xdp_redirect ptp_rq%d_lro_packets
		ptp_rq%d_lro_bytes ptp_rq%d_ecn_mark ptp_rq%d_removed_vlan_packets ptp_rq%d_wqe_err ptp_rq%d_mpwqe_filler_cqes
		ptp_rq%d_mpwqe_filler_strides ptp_rq%d_oversize_pkts_sw_drop ptp_rq%d_buff_alloc_err ptp_rq%d_cqe_compress_blks
		ptp_rq%d_cqe_compress_pkts ptp_rq%d_congst_umr ptp_rq%d_recover`},
	{"qos (qos_sq_stats_desc, MLX5E_DECLARE_QOS_TX_STAT \"qos_tx%d_\")", `qos_tx%d_packets qos_tx%d_bytes
		qos_tx%d_tso_packets qos_tx%d_tso_bytes qos_tx%d_tso_inner_packets qos_tx%d_tso_inner_bytes qos_tx%d_csum_partial
		qos_tx%d_csum_partial_inner qos_tx%d_added_vlan_packets qos_tx%d_nop qos_tx%d_timestamps qos_tx%d_mpwqe_blks
		qos_tx%d_mpwqe_pkts qos_tx%d_csum_none qos_tx%d_stopped qos_tx%d_dropped qos_tx%d_xmit_more qos_tx%d_recover
		qos_tx%d_cqes qos_tx%d_wake qos_tx%d_cqe_err qos_tx%d_time_budget_exit`},
	{"pcie_cong (en/pcie_cong_event.c mlx5e_pcie_cong_stats_desc)", `pci_bw_inbound_high pci_bw_inbound_low
		pci_bw_outbound_high pci_bw_outbound_low`},
}

// mlx5Formats returns every format of mlx5StatGroups.
func mlx5Formats() []string {
	var out []string
	for _, g := range mlx5StatGroups {
		out = append(out, strings.Fields(g.formats)...)
	}
	return out
}

// mlx5FormatRE returns a regular expression that matches the names a
// format expands to.
func mlx5FormatRE(f string) *regexp.Regexp {
	q := regexp.QuoteMeta(f)
	q = strings.ReplaceAll(q, "%d", `(?:0|[1-9][0-9]*)`)
	q = strings.ReplaceAll(q, "%s", `(?:prio[0-7]|global)`)
	return regexp.MustCompile("^" + q + "$")
}

// ethtoolSeries returns the family name and labels the ethtool collector
// gives a driver statistic in the default per-queue mode.
func ethtoolSeries(raw string) (family string, labels map[string]string, ok bool) {
	n, ok := parseStatName(raw)
	if !ok {
		return "", nil, false
	}
	family = "nic_ethtool_" + n.kind.prefix() + n.base
	if !(n.kind == statDevice && ethtoolGauges[n.base]) {
		family += "_total"
	}
	labels = map[string]string{"device": "eth0"}
	if l := n.kind.label(); l != "" {
		labels[l] = n.index
	}
	return family, labels, true
}

// TestMlx5DriverNames pins how the collector names the series of real
// mlx5 statistics (en_stats.c, en_stats.h and en/pcie_cong_event.c, see
// mlx5StatGroups): queue, priority and lane numbers become labels, the
// PCIe stall percentages are gauges, everything else a counter.
func TestMlx5DriverNames(t *testing.T) {
	for _, tc := range []struct {
		raw    string
		family string
		labels string // label=value pairs besides device, comma separated
	}{
		// Device level (sw, qcnt, vnic_env, vport, IEEE 802.3, RFC 2863, phy, PCIe, pme).
		{"rx_out_of_buffer", "nic_ethtool_rx_out_of_buffer_total", ""},
		{"rx_if_down_packets", "nic_ethtool_rx_if_down_packets_total", ""},
		{"rx_steer_missed_packets", "nic_ethtool_rx_steer_missed_packets_total", ""},
		{"dev_internal_queue_oob", "nic_ethtool_dev_internal_queue_oob_total", ""},
		{"rx_oversize_pkts_buffer", "nic_ethtool_rx_oversize_pkts_buffer_total", ""},
		{"rx_xdp_tx_cqe", "nic_ethtool_rx_xdp_tx_cqe_total", ""},
		{"tx_xdp_cqes", "nic_ethtool_tx_xdp_cqes_total", ""},
		{"rx_xsk_packets", "nic_ethtool_rx_xsk_packets_total", ""},
		{"ch_events", "nic_ethtool_ch_events_total", ""},
		{"vport_loopback_packets", "nic_ethtool_vport_loopback_packets_total", ""},
		{"rx_crc_errors_phy", "nic_ethtool_rx_crc_errors_phy_total", ""},
		{"rx_symbol_err_phy", "nic_ethtool_rx_symbol_err_phy_total", ""},
		{"rx_pause_ctrl_phy", "nic_ethtool_rx_pause_ctrl_phy_total", ""},
		{"tx_pause_ctrl_phy", "nic_ethtool_tx_pause_ctrl_phy_total", ""},
		{"rx_discards_phy", "nic_ethtool_rx_discards_phy_total", ""},
		{"tx_discards_phy", "nic_ethtool_tx_discards_phy_total", ""},
		{"rx_1024_to_1518_bytes_phy", "nic_ethtool_rx_1024_to_1518_bytes_phy_total", ""},
		{"link_down_events_phy", "nic_ethtool_link_down_events_phy_total", ""},
		{"rx_pcs_symbol_err_phy", "nic_ethtool_rx_pcs_symbol_err_phy_total", ""},
		{"rx_corrected_bits_phy", "nic_ethtool_rx_corrected_bit_phy_total", ""},
		{"total_success_recovery_phy", "nic_ethtool_total_success_recovery_phy_total", ""},
		{"rx_buffer_passed_thres_phy", "nic_ethtool_rx_buffer_passed_thres_phy_total", ""},
		{"rx_pci_signal_integrity", "nic_ethtool_rx_pci_signal_integrity_total", ""},
		{"tx_pci_signal_integrity", "nic_ethtool_tx_pci_signal_integrity_total", ""},
		{"outbound_pci_buffer_overflow", "nic_ethtool_outbound_pci_buffer_overflow_total", ""},
		{"outbound_pci_stalled_rd", "nic_ethtool_outbound_pci_stalled_rd", ""},
		{"outbound_pci_stalled_wr", "nic_ethtool_outbound_pci_stalled_wr", ""},
		{"outbound_pci_stalled_rd_events", "nic_ethtool_outbound_pci_stalled_rd_events_total", ""},
		{"outbound_pci_stalled_wr_events", "nic_ethtool_outbound_pci_stalled_wr_events_total", ""},
		{"rx_global_pause", "nic_ethtool_rx_global_pause_total", ""},
		{"tx_global_pause_duration", "nic_ethtool_tx_global_pause_duration_total", ""},
		{"tx_pause_storm_error_events", "nic_ethtool_tx_pause_storm_error_events_total", ""},
		{"module_unplug", "nic_ethtool_module_unplug_total", ""},
		{"module_bus_stuck", "nic_ethtool_module_bus_stuck_total", ""},
		{"module_high_temp", "nic_ethtool_module_high_temp_total", ""},
		{"module_bad_shorted", "nic_ethtool_module_bad_shorted_total", ""},
		{"ptp_ch_events", "nic_ethtool_ptp_ch_events_total", ""},
		{"pci_bw_inbound_high", "nic_ethtool_pci_bw_inbound_high_total", ""},
		// Per lane (pport_phy_statistical_err_lanes_stats_desc).
		{"rx_err_lane_0_phy", "nic_ethtool_lane_rx_err_phy_total", "lane=0"},
		{"rx_err_lane_3_phy", "nic_ethtool_lane_rx_err_phy_total", "lane=3"},
		// Per priority (per_prio, per_port_buff_congest).
		{"rx_prio0_bytes", "nic_ethtool_priority_rx_bytes_total", "priority=0"},
		{"tx_prio7_packets", "nic_ethtool_priority_tx_packets_total", "priority=7"},
		{"rx_prio3_discards", "nic_ethtool_priority_rx_discards_total", "priority=3"},
		{"rx_prio3_pause", "nic_ethtool_priority_rx_pause_total", "priority=3"},
		{"tx_prio3_pause_duration", "nic_ethtool_priority_tx_pause_duration_total", "priority=3"},
		{"rx_prio3_pause_transition", "nic_ethtool_priority_rx_pause_transition_total", "priority=3"},
		{"rx_prio5_buf_discard", "nic_ethtool_priority_rx_buf_discard_total", "priority=5"},
		{"rx_prio5_cong_discard", "nic_ethtool_priority_rx_cong_discard_total", "priority=5"},
		{"rx_prio5_marked", "nic_ethtool_priority_rx_marked_total", "priority=5"},
		// Per channel and queue (channels, ptp, qos).
		{"ch12_events", "nic_ethtool_queue_ch_events_total", "queue=12"},
		{"rx12_packets", "nic_ethtool_queue_rx_packets_total", "queue=12"},
		{"rx3_pp_recycle_released_ref", "nic_ethtool_queue_rx_pp_recycle_released_ref_total", "queue=3"},
		{"rx3_xdp_tx_cqes", "nic_ethtool_queue_rx_xdp_tx_cqes_total", "queue=3"},
		{"rx3_xsk_packets", "nic_ethtool_queue_rx_xsk_packets_total", "queue=3"},
		{"tx17_stopped", "nic_ethtool_queue_tx_stopped_total", "queue=17"},
		{"tx17_timestamps", "nic_ethtool_queue_tx_timestamps_total", "queue=17"},
		{"tx3_xdp_xmit", "nic_ethtool_queue_tx_xdp_xmit_total", "queue=3"},
		{"tx3_xsk_xmit", "nic_ethtool_queue_tx_xsk_xmit_total", "queue=3"},
		{"ptp_tx1_packets", "nic_ethtool_queue_ptp_tx_packets_total", "queue=1"},
		{"ptp_cq1_abort_abs_diff_ns", "nic_ethtool_queue_ptp_cq_abort_abs_diff_nsecs_total", "queue=1"},
		{"ptp_cq1_lost_cqe", "nic_ethtool_queue_ptp_cq_lost_cqe_total", "queue=1"},
		{"ptp_rq0_packets", "nic_ethtool_queue_ptp_rq_packets_total", "queue=0"},
		{"qos_tx3_bytes", "nic_ethtool_queue_qos_tx_bytes_total", "queue=3"},
	} {
		matched := false
		for _, f := range mlx5Formats() {
			if mlx5FormatRE(f).MatchString(tc.raw) {
				matched = true
				break
			}
		}
		if !matched {
			t.Errorf("%s: not a name the mlx5 driver prints (mlx5StatGroups)", tc.raw)
		}
		family, labels, ok := ethtoolSeries(tc.raw)
		if !ok {
			t.Errorf("%s: not exported", tc.raw)
			continue
		}
		want := map[string]string{"device": "eth0"}
		if tc.labels != "" {
			for _, kv := range strings.Split(tc.labels, ",") {
				k, v, _ := strings.Cut(kv, "=")
				want[k] = v
			}
		}
		if family != tc.family || fmt.Sprint(labels) != fmt.Sprint(want) {
			t.Errorf("%s: got %s%v, want %s%v", tc.raw, family, labels, tc.family, want)
		}
	}
}

// TestMlx5FormatsClassified checks that every name format of the mlx5
// driver lands where its number says: a channel, send queue, PTP or QoS
// number becomes label queue, a priority label priority, a lane label
// lane, and a name without a number stays device level. It also checks
// that no two formats share a series.
func TestMlx5FormatsClassified(t *testing.T) {
	seen := map[string]string{}
	for _, f := range mlx5Formats() {
		for _, inst := range expandMlx5Format(f) {
			n, ok := parseStatName(inst.raw)
			if !ok {
				t.Errorf("%s: not exported", inst.raw)
				continue
			}
			if n.kind != inst.kind || n.index != inst.index {
				t.Errorf("%s (%s): classified as %s %q, want %s %q", inst.raw, f, n.kind.label(), n.index, inst.kind.label(), inst.index)
			}
			family, labels, _ := ethtoolSeries(inst.raw)
			key := family + fmt.Sprint(labels)
			if other, dup := seen[key]; dup && other != inst.raw {
				t.Errorf("%s and %s both map to %s", other, inst.raw, key)
			}
			seen[key] = inst.raw
		}
	}
}

type mlx5Instance struct {
	raw   string
	kind  statKind
	index string
}

// expandMlx5Format returns two names of a format with their expected
// classification.
func expandMlx5Format(f string) []mlx5Instance {
	switch {
	case strings.Contains(f, "%s"): // per-priority pause or global pause
		return []mlx5Instance{
			{strings.ReplaceAll(f, "%s", "prio6"), statPriority, "6"},
			{strings.ReplaceAll(f, "%s", "global"), statDevice, ""},
		}
	case strings.HasPrefix(f, "rx_prio%d") || strings.HasPrefix(f, "tx_prio%d"):
		return []mlx5Instance{{strings.ReplaceAll(f, "%d", "6"), statPriority, "6"}}
	case strings.Contains(f, "%d"):
		return []mlx5Instance{
			{strings.ReplaceAll(f, "%d", "0"), statQueue, "0"},
			{strings.ReplaceAll(f, "%d", "63"), statQueue, "63"},
		}
	case strings.HasPrefix(f, "rx_err_lane_"):
		return []mlx5Instance{{f, statLane, strings.TrimSuffix(strings.TrimPrefix(f, "rx_err_lane_"), "_phy")}}
	}
	return []mlx5Instance{{f, statDevice, ""}}
}

// TestMlx5DumpsUseDriverNames checks that the recorded mlx5 dumps of the
// fixtures and of the demo host print only names the driver prints, in
// the driver's group order.
func TestMlx5DumpsUseDriverNames(t *testing.T) {
	formats := mlx5Formats()
	res := make([]*regexp.Regexp, len(formats))
	for i, f := range formats {
		res[i] = mlx5FormatRE(f)
	}
	for _, path := range []string{
		filepath.Join("testdata", "mlx5.txt"),
		filepath.Join("..", "..", "demo", "ethtool_mlx5.txt"),
	} {
		names := dumpStatNames(t, path)
		if len(names) == 0 {
			t.Fatalf("%s: no statistics", path)
		}
		group := 0 // index into mlx5StatGroups of the previous name's group
		for _, name := range names {
			g := -1
			for gi, grp := range mlx5StatGroups {
				for _, fm := range strings.Fields(grp.formats) {
					if mlx5FormatRE(fm).MatchString(name) {
						g = gi
						break
					}
				}
				if g >= 0 {
					break
				}
			}
			switch {
			case g < 0:
				t.Errorf("%s: %q is not a name the mlx5 driver prints", path, name)
			case g < group && !(mlx5StatGroups[g].group[:8] == "channels" && mlx5StatGroups[group].group[:8] == "channels"):
				t.Errorf("%s: %q (group %s) after group %s", path, name, mlx5StatGroups[g].group, mlx5StatGroups[group].group)
			default:
				group = g
			}
		}
	}
}

// dumpStatNames returns the statistic names of an `ethtool -S` dump file
// in their order. (The collector's own tests cannot use ethtooldump, which
// imports the collector.)
func dumpStatNames(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, stats, ok := strings.Cut(string(b), "NIC statistics:\n")
	if !ok {
		t.Fatalf("%s: no NIC statistics section", path)
	}
	var names []string
	for _, line := range strings.Split(stats, "\n") {
		name, _, ok := strings.Cut(strings.TrimSpace(line), ": ")
		if ok {
			names = append(names, name)
		}
	}
	return names
}
