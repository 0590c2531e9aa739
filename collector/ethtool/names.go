package ethtool

import (
	"regexp"
	"strings"
)

// statKind says which label, if any, a driver statistic's number becomes.
type statKind uint8

const (
	// statDevice is a statistic of the whole interface.
	statDevice statKind = iota
	// statQueue is a statistic of one queue or channel; label "queue".
	statQueue
	// statPriority is a statistic of one traffic class; label "priority".
	statPriority
	// statLane is a statistic of one physical lane; label "lane".
	statLane
	// statClass is a statistic of one traffic class or class of service
	// (bnxt *_cos3, i40e veb.tc_3_*); label "class".
	statClass
	// statVF is a statistic of one virtual function the PF reports (i40e
	// vf000.*); label "vf".
	statVF
)

// label returns the name of the label that carries the number.
func (k statKind) label() string {
	switch k {
	case statQueue:
		return "queue"
	case statPriority:
		return "priority"
	case statLane:
		return "lane"
	case statClass:
		return "class"
	case statVF:
		return "vf"
	}
	return ""
}

// prefix returns what comes between nic_ethtool_ and the statistic in
// the metric name, so that a per-queue family never shares a name with
// the device-level statistic of the same base name (mlx5 reports both
// rx_packets and rx0_packets).
func (k statKind) prefix() string {
	switch k {
	case statQueue:
		return "queue_"
	case statPriority:
		return "priority_"
	case statLane:
		return "lane_"
	case statClass:
		return "class_"
	case statVF:
		return "vf_"
	}
	return ""
}

// statName is a driver statistic name taken apart: the kind, the base
// name without any queue, priority or lane number (sanitized to
// [a-z0-9_]) and that number. tc is the traffic class of a send queue
// whose name carries both its channel and its class (label "tc"), else
// empty.
type statName struct {
	kind  statKind
	base  string
	index string
	tc    string
}

// mlx5ChannelTC matches the send queue statistics of mlx5 drivers up to
// Linux 4.8, which name a send queue by its channel and traffic class:
// tx3_1_packets is channel 3, class 1 (en_ethtool.c of Linux 4.4,
// mlx5e_get_strings: sprintf("tx%d_%d_%s", i, tc, sq_stats_strings[j])
// for every channel i and tc below num_tc, at most 8). Later kernels
// number send queues by their txq ("tx%d_%s").
var mlx5ChannelTC = regexp.MustCompile(`^tx(0|[1-9][0-9]{0,5})_([0-7])_([a-z].*)$`)

// statPattern recognises one driver's way of putting a number in a
// statistic name. dir is the submatch with the direction ("rx", "tx",
// ...), num the one with the number, rest the one with the statistic; a
// zero dir means the statistic needs no direction prefix. When the number
// sits inside the name (bnxt rx_bytes_pri3, ice rx_priority_3_xon.nic),
// pre is the submatch before it, joined to rest with "_".
type statPattern struct {
	re             *regexp.Regexp
	kind           statKind
	dir, num, rest int
	pre            int
}

// statPatterns are tried in order; the first match wins. Names that match
// none are device-level statistics. Numbers are decimal without leading
// zeros beyond "0" itself, at most six digits, so a label value is always
// a plain small number.
var statPatterns = []statPattern{
	// ENA: queue_3_tx_cnt, queue_3_rx_bad_csum, queue_9_xdp_tx_cnt.
	{regexp.MustCompile(`^queue_(0|[1-9][0-9]{0,5})_(tx|rx|xdp_tx)_(.+)$`), statQueue, 2, 1, 3, 0},
	// virtio_net, veth, ixgbe, igb, ice: rx_queue_0_packets, tx_queue_7_xdp_xmit.
	{regexp.MustCompile(`^(rx|tx)_queue_(0|[1-9][0-9]{0,5})_(.+)$`), statQueue, 1, 2, 3, 0},
	// i40e, iavf: tx-0.tx_packets, rx-12.bytes.
	{regexp.MustCompile(`^(rx|tx)-(0|[1-9][0-9]{0,5})\.(.+)$`), statQueue, 1, 2, 3, 0},
	// bnx2x, bnxt: "[3]: rx_ucast_packets".
	{regexp.MustCompile(`^\[(0|[1-9][0-9]{0,5})\]: ?(.+)$`), statQueue, 0, 1, 2, 0},
	// be2net: "rxq0: rx_bytes".
	{regexp.MustCompile(`^(rx|tx)q(0|[1-9][0-9]{0,5}): ?(.+)$`), statQueue, 1, 2, 3, 0},
	// mlx5 per traffic class: rx_prio3_bytes, tx_prio0_pause_duration.
	{regexp.MustCompile(`^(rx|tx)_prio(0|[1-9][0-9]{0,5})_(.+)$`), statPriority, 1, 2, 3, 0},
	// Priority numbers inside or at the end of other drivers' names, kept
	// in the priority label (shapes from the drivers' ethtool string
	// tables): ice rx_priority_3_xon.nic, tx_priority_0_xoff.nic
	// (ice_ethtool.c PORT_RX_PRIO_XON "rx_priority_%u_xon.nic"); i40e
	// port.rx_priority_3_xon_count, port.tx_priority_3_xoff_2_xon_count
	// (i40e_ethtool.c "port.%s_priority_%u_xon_count"); bnxt pfc_pri3_*
	// and rx_bytes_pri3, rx_pfc_ena_frames_pri3 (bnxt_ethtool.c
	// "pfc_pri%d_rx_duration_us", bnxt_rx_bytes_pri_arr "rx_bytes_pri");
	// mlx4 rx_prio_3_packets, rx_pause_prio_3 (en_ethtool.c).
	{regexp.MustCompile(`^(?:port\.)?(rx|tx)_priority_(0|[1-9][0-9]{0,5})_(.+?)(?:\.nic)?$`), statPriority, 1, 2, 3, 0},
	{regexp.MustCompile(`^(pfc)_pri(0|[1-9][0-9]{0,5})_(.+)$`), statPriority, 1, 2, 3, 0},
	{regexp.MustCompile(`^(rx|tx)_prio_(0|[1-9][0-9]{0,5})_(.+)$`), statPriority, 1, 2, 3, 0},
	{regexp.MustCompile(`^((?:rx|tx)_.+?)_pri_?(0|[1-9][0-9]{0,5})$`), statPriority, 0, 2, 0, 1},
	{regexp.MustCompile(`^((?:rx|tx)_.+?)_prio_?(0|[1-9][0-9]{0,5})$`), statPriority, 0, 2, 0, 1},
	// Classes of service and traffic classes: bnxt rx_bytes_cos3,
	// rx_discard_packets_cos3 (bnxt_ethtool.c "%s_cos%d"), i40e
	// veb.tc_3_tx_packets (i40e_ethtool.c "veb.tc_%u_tx_packets").
	{regexp.MustCompile(`^((?:rx|tx)_.+?)_cos(0|[1-9][0-9]{0,5})$`), statClass, 0, 2, 0, 1},
	{regexp.MustCompile(`^(veb)\.tc_(0|[1-9][0-9]{0,5})_(.+)$`), statClass, 1, 2, 3, 0},
	// Per-VF statistics of an i40e PF (out-of-tree i40e "vf%03d.%s"):
	// vf000.rx_discards; leading zeros are dropped from the label.
	{regexp.MustCompile(`^vf0*(0|[1-9][0-9]{0,5})\.(.+)$`), statVF, 0, 1, 2, 0},
	// mlx5 physical lanes: rx_err_lane_2_phy.
	{regexp.MustCompile(`^(rx_err)_lane_(0|[1-9][0-9]{0,5})_(.+)$`), statLane, 1, 2, 3, 0},
	// mlx5 PTP and HTB QoS queues (en_stats.h MLX5E_DECLARE_PTP_TX_STAT
	// "ptp_tx%d_", _PTP_CQ_STAT "ptp_cq%d_", _PTP_RQ_STAT "ptp_rq0_" (older
	// kernels "ptp_rq%d_"), _QOS_TX_STAT "qos_tx%d_"): ptp_tx0_packets,
	// ptp_cq1_cqe, ptp_rq0_packets, qos_tx3_bytes. The PTP channel's own
	// counters (ptp_ch_events) carry no number and stay device level.
	{regexp.MustCompile(`^(ptp_tx|ptp_cq|ptp_rq|qos_tx)(0|[1-9][0-9]{0,5})_(.+)$`), statQueue, 1, 2, 3, 0},
	// mlx5, mlx4 channels: rx12_packets, tx3_xmit_more, ch5_events, and the
	// mlx5 XDP and AF_XDP queues of a channel, rx3_xdp_tx_xmit, tx3_xdp_xmit,
	// rx3_xsk_packets, tx3_xsk_xmit (en_stats.h "rx%d_xdp_tx_", "tx%d_xdp_",
	// "rx%d_xsk_", "tx%d_xsk_").
	{regexp.MustCompile(`^(rx|tx|ch)(0|[1-9][0-9]{0,5})_(.+)$`), statQueue, 1, 2, 3, 0},
}

// parseStatName classifies a driver statistic name. ok is false when
// nothing of the name survives sanitizing; such a statistic cannot be
// exported and is counted as skipped. It never panics, whatever the bytes.
func parseStatName(raw string) (n statName, ok bool) {
	if m := mlx5ChannelTC.FindStringSubmatch(raw); m != nil {
		if rest := sanitizeStat(m[3]); rest != "" {
			if !strings.HasPrefix(rest, "tx_") {
				rest = "tx_" + rest
			}
			return statName{kind: statQueue, base: rest, index: m[1], tc: m[2]}, true
		}
	}
	for _, p := range statPatterns {
		m := p.re.FindStringSubmatch(raw)
		if m == nil {
			continue
		}
		var rest string
		switch {
		case p.pre > 0 && p.rest > 0:
			rest = sanitizeStat(m[p.pre] + "_" + m[p.rest])
		case p.pre > 0:
			rest = sanitizeStat(m[p.pre])
		default:
			rest = sanitizeStat(m[p.rest])
		}
		if rest == "" {
			return statName{}, false
		}
		if p.dir > 0 {
			dir := m[p.dir]
			if !strings.HasPrefix(rest, dir+"_") {
				rest = dir + "_" + rest
			}
		}
		return statName{kind: p.kind, base: rest, index: m[p.num]}, true
	}
	base := sanitizeStat(raw)
	if base == "" {
		return statName{}, false
	}
	return statName{kind: statDevice, base: base}, true
}

// sanitizeStat turns a driver's statistic name into a metric name part:
// lower case, every run of characters outside [a-z0-9] becomes one "_",
// no leading or trailing "_", and no trailing "_total" (the collector adds
// it to counters). The result may be empty.
func sanitizeStat(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	pendingSep := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		default:
			pendingSep = b.Len() > 0
			continue
		}
		if pendingSep {
			b.WriteByte('_')
			pendingSep = false
		}
		b.WriteByte(c)
	}
	out := b.String()
	for strings.HasSuffix(out, "_total") {
		out = strings.TrimSuffix(out, "_total")
	}
	if out == "total" {
		return ""
	}
	return lintWords(out)
}

// lintRewrites changes the words of a driver's statistic name that
// promtool check metrics would reject in a metric name: units that are
// not base units (mlx5 rx_corrected_bits_phy counts bits, it is not a
// size), abbreviated units and metric type names. Prefixed units such as
// "milliseconds" or "kilobytes" lose their plural "s" the same way.
var lintRewrites = map[string]string{
	"bits": "bit", "minutes": "minute", "hours": "hour", "days": "day", "weeks": "week",
	"kelvins": "kelvin_degree", "fahrenheit": "fahrenheit_degree", "rankine": "rankine_degree",
	"inches": "inch", "yards": "yard", "miles": "mile", "calories": "calorie", "pounds": "pound", "ounces": "ounce",
	"s": "secs", "sec": "secs", "ms": "msecs", "us": "usecs", "ns": "nsecs",
	"b": "bx", "kb": "kbx", "mb": "mbx", "gb": "gbx", "tb": "tbx", "pb": "pbx", "m": "mx", "h": "hx", "d": "dx",
	"counter": "counters", "gauge": "gauges", "histogram": "histograms", "summary": "summaries", "untyped": "untyped_value",
}

var unitPrefixes = []string{"pico", "nano", "micro", "milli", "centi", "deci", "deca", "hecto", "kilo", "kibi", "mega", "mebi", "giga", "gibi", "tera", "tebi", "peta", "pebi"}

var prefixableUnits = map[string]bool{
	"amperes": true, "bytes": true, "grams": true, "joules": true, "meters": true, "metres": true, "seconds": true, "volts": true, "bits": true,
}

func lintWords(s string) string {
	words := strings.Split(s, "_")
	changed := false
	for i, w := range words {
		if r, ok := lintRewrites[w]; ok {
			words[i], changed = r, true
			continue
		}
		for _, p := range unitPrefixes {
			if len(w) > len(p) && strings.HasPrefix(w, p) && prefixableUnits[w[len(p):]] {
				words[i], changed = strings.TrimSuffix(w, "s"), true
				break
			}
		}
	}
	if !changed {
		return s
	}
	return strings.Join(words, "_")
}

// ethtoolGauges are the device-level statistics that are levels, not
// counts of events. Everything else a driver reports is a counter.
var ethtoolGauges = map[string]bool{
	// ENA: connections the instance can still track before
	// conntrack_allowance_exceeded starts counting drops.
	"conntrack_allowance_available": true,
	// ENA Scalable Reliable Datagram: mode bits and resource use in percent.
	"ena_srd_mode":                 true,
	"ena_srd_resource_utilization": true,
	// veth: the interface index of the other end.
	"peer_ifindex": true,
	// mlx5 (en_stats.c pcie_perf_stall_stats_desc, read from the MPCNT
	// register): percentage of the last second with stalled outbound
	// PCIe reads or writes, 0 to 100.
	"outbound_pci_stalled_rd": true,
	"outbound_pci_stalled_wr": true,
}

// ethtoolHelp is the curated meaning of the statistics the docs describe,
// keyed by metric kind prefix plus base name. The help of a family depends
// on its name only, so it is the same for every device.
var ethtoolHelp = map[string]string{
	// ENA, device level (ena_ethtool.c, AWS "Monitor network performance for ENA settings").
	"wd_expired":     "ENA keep-alive watchdog expirations: the device missed its keep-alive events for the timeout (3 s by default) and the driver reset it. Page on any increase.",
	"tx_timeout":     "Transmit timeouts: the kernel's netdev watchdog found a stuck transmit queue and the driver reset the device.",
	"interface_up":   "Times the driver brought the interface up.",
	"interface_down": "Times the driver brought the interface down.",
	"admin_q_pause":  "ENA admin queue found in a paused state (device busy or resetting).",
	"suspend":        "Times the driver suspended the device.",
	"resume":         "Times the driver resumed the device.",
	"reset_fail":     "ENA device resets that failed.",
	"total_resets":   "ENA device resets of any cause.",
	// ENA reset causes, one counter per ENA_REGS_RESET_* reason the driver
	// resets the device for (ena_ethtool.c ena_stats_global_strings,
	// ena_regs_defs.h); each increase is one reset of that cause.
	"bad_tx_req_id":                 "ENA device resets because a transmit completion carried an invalid request id.",
	"bad_rx_req_id":                 "ENA device resets because a receive completion carried an invalid request id.",
	"bad_rx_desc_num":               "ENA device resets because a received packet used too many descriptors.",
	"missing_intr":                  "ENA device resets because completions were pending but their interrupt never came.",
	"suspected_poll_starvation":     "ENA device resets because interrupts came but the queue's NAPI poll did not run: CPU starvation (busy or isolated CPUs, long softirq work) suspected.",
	"missing_tx_cmpl":               "ENA device resets because too many transmit completions were missing on a queue.",
	"rx_desc_malformed":             "ENA device resets because the device wrote a malformed receive descriptor.",
	"tx_desc_malformed":             "ENA device resets because the device wrote a malformed transmit descriptor.",
	"invalid_state":                 "ENA device resets because the driver found itself in an invalid state.",
	"os_netdev_wd":                  "ENA device resets requested by the kernel's netdev watchdog (a transmit queue timed out).",
	"missing_admin_interrupt":       "ENA device resets because an admin queue completion came without its interrupt.",
	"admin_to":                      "ENA device resets because an admin queue command timed out.",
	"device_request_reset":          "ENA device resets the device itself requested.",
	"missing_first_intr":            "ENA device resets because a queue never raised its first interrupt (interrupt setup problem).",
	"bw_in_allowance_exceeded":      "Packets queued or dropped because the inbound aggregate bandwidth exceeded the instance's allowance (AWS ENA).",
	"bw_out_allowance_exceeded":     "Packets queued or dropped because the outbound aggregate bandwidth exceeded the instance's allowance (AWS ENA).",
	"pps_allowance_exceeded":        "Packets queued or dropped because the bidirectional packet rate exceeded the instance's allowance (AWS ENA).",
	"conntrack_allowance_exceeded":  "Packets dropped because connection tracking exceeded the instance's maximum and new connections could not be established (AWS ENA).",
	"linklocal_allowance_exceeded":  "Packets dropped because traffic to link-local services (DNS, instance metadata, NTP) exceeded the per-interface packet rate (AWS ENA).",
	"conntrack_allowance_available": "Tracked connections the instance can still establish before it reaches its allowance (AWS ENA); a level, not a count.",
	"ena_admin_q_aborted_cmd":       "ENA admin queue commands that were aborted.",
	"ena_admin_q_submitted_cmd":     "ENA admin queue commands submitted to the device.",
	"ena_admin_q_completed_cmd":     "ENA admin queue commands the device completed.",
	"ena_admin_q_out_of_space":      "ENA admin queue submissions that found the queue full.",
	"ena_admin_q_no_completion":     "ENA admin queue commands that got no completion in time.",
	// ENA, per queue.
	"queue_tx_cnt":                   "Packets transmitted on the queue.",
	"queue_tx_bytes":                 "Bytes transmitted on the queue.",
	"queue_tx_missing_tx_comp":       "ENA transmit completions the driver found missing on the queue; many in a row trigger a reset.",
	"queue_tx_missed_tx":             "ENA transmit completions the driver found missing on the queue; many in a row trigger a reset.",
	"queue_tx_bad_req_id":            "ENA transmit completions with an invalid request id; each triggers a device reset.",
	"queue_tx_dma_mapping_err":       "Transmit DMA mapping errors on the queue.",
	"queue_rx_cnt":                   "Packets received on the queue.",
	"queue_rx_bytes":                 "Bytes received on the queue.",
	"queue_rx_refil_partial":         "Times the driver could refill the receive ring only partly (ENA).",
	"queue_rx_bad_csum":              "Received packets with a bad checksum the device reported (ENA).",
	"queue_rx_page_alloc_fail":       "Receive buffer page allocations that failed on the queue.",
	"queue_rx_skb_alloc_fail":        "Socket buffer allocations that failed on the queue.",
	"queue_rx_dma_mapping_err":       "Receive DMA mapping errors on the queue.",
	"queue_rx_bad_desc_num":          "Received packets that used too many descriptors (ENA); each triggers a device reset.",
	"queue_rx_bad_req_id":            "ENA receive completions with an invalid request id; each triggers a device reset.",
	"queue_rx_empty_rx_ring":         "Times the ENA receive ring was found empty.",
	"queue_rx_packets":               "Packets received on the queue.",
	"queue_tx_packets":               "Packets transmitted on the queue.",
	"queue_rx_drops":                 "Packets the queue dropped.",
	"queue_tx_xmit_more":             "Packets the queue sent with the xmit_more hint (doorbell deferred) (mlx5).",
	"queue_ch_events":                "Completion events on the channel (mlx5).",
	"queue_rx_buff_alloc_err":        "Receive buffer allocation failures on the queue (mlx5).",
	"queue_tx_stopped":               "Times the send queue was full and stopped (mlx5).",
	"queue_tx_dropped":               "Packets the send queue dropped (mlx5).",
	"queue_tx_recover":               "Send queue recoveries after an error completion (mlx5).",
	"queue_tx_cqe_err":               "Error completions on the send queue (mlx5).",
	"queue_rx_wqe_err":               "Receive work queue entries completed with an error (mlx5).",
	"queue_rx_recover":               "Receive queue recoveries after an error (mlx5).",
	"queue_rx_xdp_drop":              "Packets an XDP program dropped on the queue.",
	"queue_rx_oversize_pkts_sw_drop": "Oversized received packets the driver dropped (mlx5).",
	// mlx5, device level (Documentation/networking/device_drivers/ethernet/mellanox/mlx5/counters.rst).
	"rx_out_of_buffer":  "Packets the device dropped because no receive buffer was posted on the queue: the host did not drain the receive ring fast enough (mlx5).",
	"rx_discards_phy":   "Received packets the port dropped for lack of buffer space in the device, typically congestion or host backpressure (mlx5).",
	"tx_discards_phy":   "Packets the port discarded on transmit, for example in a congested network (mlx5).",
	"rx_crc_errors_phy": "Received frames with a bad FCS at the physical port: cabling, optics or signal quality (mlx5).",
	"rx_symbol_err_phy": "Received frames with a physical-layer symbol error (mlx5).",
	// mlx5 names of Linux 4.4 to 4.7 (en.h pport string tables: IEEE 802.3
	// "check_seq_err", "symbol_err"; RFC 2863 "in_discards",
	// "out_discards"; RFC 2819 "drop_events", "crc_align_errors"), renamed
	// to rx_*_phy/tx_*_phy by commit bfe6d8d1d433 ("net/mlx5e: Reorganize
	// ethtool statistics", Linux 4.8): in_discards and drop_events count
	// what rx_discards_phy counts (PPCNT if_in_discards,
	// ether_stats_drop_events), out_discards is tx_discards_phy,
	// check_seq_err is rx_crc_errors_phy (a_frame_check_sequence_errors),
	// symbol_err is rx_symbol_err_phy (a_symbol_error_during_carrier), and
	// crc_align_errors counts bad FCS or alignment. The NICPhy* alerts use
	// them on mlx5_core interfaces only.
	"in_discards":                    "Received packets the port dropped for lack of buffer space in the device (mlx5 before Linux 4.8: the old name of rx_discards_phy).",
	"drop_events":                    "Events in which the port dropped received packets for lack of buffer space or other resources (mlx5 before Linux 4.8, RFC 2819 etherStatsDropEvents; newer kernels count these in rx_discards_phy).",
	"out_discards":                   "Packets the port discarded on transmit, for example in a congested network (mlx5 before Linux 4.8: the old name of tx_discards_phy).",
	"check_seq_err":                  "Received frames with a bad FCS at the physical port: cabling, optics or signal quality (mlx5 before Linux 4.8: the old name of rx_crc_errors_phy).",
	"crc_align_errors":               "Received frames with a bad FCS or an alignment error at the physical port: cabling, optics or signal quality (mlx5 before Linux 4.8, RFC 2819 etherStatsCRCAlignErrors).",
	"symbol_err":                     "Received frames with a physical-layer symbol error (mlx5 before Linux 4.8: the old name of rx_symbol_err_phy).",
	"rx_pcs_symbol_err_phy":          "Symbol errors at the physical coding sublayer that the forward error correction did not correct, or all of them when FEC is off (mlx5): errors after FEC, each one damages data.",
	"rx_corrected_bit_phy":           "Bits the forward error correction corrected (mlx5 rx_corrected_bits_phy): bit errors before FEC. Over rx_bits_phy it is the pre-FEC (raw) bit error rate, the recording rule nic:phy_pre_fec_ber:rate5m.",
	"rx_bit_phy":                     "Bits received at the physical layer (mlx5 rx_bits_phy, since 2025 kernels): the denominator of the pre-FEC bit error rate rx_corrected_bits_phy / rx_bits_phy.",
	"link_down_events_phy":           "Times the physical link went down (mlx5).",
	"rx_pci_signal_integrity":        "PCIe physical layer errors the device received, such as bad TLPs or DLLPs: PCIe signal integrity (mlx5).",
	"tx_pci_signal_integrity":        "PCIe physical layer errors the device sent, such as replays: PCIe signal integrity (mlx5).",
	"outbound_pci_stalled_rd":        "Percentage (0 to 100) of the last second in which the device had outbound non-posted PCIe reads but could not issue them for lack of credits from the host (mlx5); a level, not a count.",
	"outbound_pci_stalled_wr":        "Percentage (0 to 100) of the last second in which the device had outbound posted PCIe writes but could not issue them for lack of credits from the host (mlx5); a level, not a count.",
	"outbound_pci_stalled_rd_events": "Seconds in which outbound_pci_stalled_rd was above 30% (mlx5).",
	"outbound_pci_stalled_wr_events": "Seconds in which outbound_pci_stalled_wr was above 30% (mlx5).",
	"outbound_pci_buffer_overflow":   "Packets the device dropped because its PCIe buffer overflowed; a fast rise means a host receives faster than its PCIe link carries (mlx5).",
	"pci_bw_inbound_high":            "Times the device's inbound PCIe bandwidth crossed the high (congested) threshold; more than pci_bw_inbound_low means the link is congested now (mlx5).",
	"pci_bw_inbound_low":             "Times the device's inbound PCIe bandwidth fell back below the low threshold after congestion (mlx5).",
	"pci_bw_outbound_high":           "Times the device's outbound PCIe bandwidth crossed the high (congested) threshold; more than pci_bw_outbound_low means the link is congested now (mlx5).",
	"pci_bw_outbound_low":            "Times the device's outbound PCIe bandwidth fell back below the low threshold after congestion (mlx5).",
	"total_success_recovery_phy":     "Successful physical-layer recovery events of the port (mlx5).",
	"rx_oversize_pkts_buffer":        "Received packets dropped because they were longer than the receive buffer the driver posted; often an MTU mismatch (mlx5).",
	"tx_pause_storm_warning_events":  "Times the device kept sending pause frames for a long time (mlx5 PFC storm detection).",
	"tx_pause_storm_error_events":    "Times the device sent pause frames so long that it timed out and stopped sending them; packets may have been dropped meanwhile (mlx5 PFC storm prevention).",
	"rx_global_pause":                "Link-level (global) pause frames received (mlx5).",
	"tx_global_pause":                "Link-level (global) pause frames sent (mlx5).",
	"rx_global_pause_duration":       "Time the peer asked this port to pause, in microseconds (mlx5).",
	"tx_global_pause_duration":       "Time this port asked the peer to pause, in microseconds (mlx5).",
	"module_unplug":                  "Times the port's transceiver module was unplugged (mlx5).",
	"module_bus_stuck":               "Times the transceiver module's I2C bus was found stuck (mlx5).",
	"module_high_temp":               "Times the transceiver module reported a high temperature (mlx5).",
	"module_bad_shorted":             "Times the transceiver module was found bad or shorted (mlx5).",
	"rx_pause_ctrl_phy":              "Link-level pause frames received (mlx5).",
	"tx_pause_ctrl_phy":              "Link-level pause frames sent (mlx5).",
	"rx_buffer_passed_thres_phy":     "Events in which the port's receive buffer was over 85% full (mlx5).",
	"rx_steer_missed_packets":        "Received packets that matched no steering rule and were dropped (mlx5).",
	"rx_if_down_packets":             "Packets received while the interface was down and dropped (mlx5).",
	"dev_internal_queue_oob":         "Packets dropped because a device-internal receive queue was out of buffers (mlx5).",
	"tx_queue_dropped":               "Packets the send queues dropped (mlx5).",
	"rx_buff_alloc_err":              "Receive buffer allocation failures (mlx5).",
	"peer_ifindex":                   "Interface index of the other end of the veth pair; a level, not a count.",
	"ena_srd_mode":                   "ENA Express configuration of the interface, a bitmap (ena_admin_ena_srd_flags): 1 ENA Express (SRD) enabled, 2 UDP sent over SRD too, 4 UDP receive ordering bypassed; 0 off. A level (AWS ENA, driver 2.8+).",
	"ena_srd_resource_utilization":   "Percentage of the maximum memory for concurrent ENA Express (SRD) connections that the instance uses; a level (AWS ENA, driver 2.8+).",
	"ena_srd_tx_pkts":                "Packets sent over ENA Express (SRD) (AWS ENA, driver 2.8+).",
	"ena_srd_eligible_tx_pkts":       "Packets sent that were eligible for ENA Express (SRD): both instances support and enable it, same Availability Zone, no middlebox. An eligible packet can still fall back to standard ENA (over the SRD MTU, for example) and is counted here all the same (AWS ENA, driver 2.8+).",
	"ena_srd_rx_pkts":                "Packets received over ENA Express (SRD) (AWS ENA, driver 2.8+).",
	// Per priority. The byte, packet and pause counts carry no driver name:
	// bnxt rx_bytes_pri3, mlx4 rx_prio_3_packets and rx_pause_prio_3 land
	// in the same families as mlx5's.
	"priority_rx_pause":          "Priority flow control pause frames received for the priority.",
	"priority_tx_pause":          "Priority flow control pause frames sent for the priority.",
	"priority_rx_pause_duration": "Time the peer asked this port to pause the priority, in microseconds.",
	"priority_tx_pause_duration": "Time this port asked the peer to pause the priority, in microseconds.",
	"priority_rx_discards":       "Received packets of the priority the port dropped (mlx5).",
	"priority_rx_buf_discard":    "Received packets of the priority dropped for lack of buffer space (mlx5).",
	"priority_rx_cong_discard":   "Received packets of the priority dropped by congestion control (WRED) (mlx5).",
	"priority_rx_marked":         "Received packets of the priority marked with ECN by the device (mlx5).",
	"priority_rx_bytes":          "Bytes received with the priority.",
	"priority_tx_bytes":          "Bytes transmitted with the priority.",
	"priority_rx_packets":        "Packets received with the priority.",
	"priority_tx_packets":        "Packets transmitted with the priority.",
	// mlx5, per lane.
	"lane_rx_err_phy": "Bit errors on the physical lane before forward error correction, i.e. the bits FEC corrected on that lane (mlx5 rx_err_lane_N_phy); over rx_bits_phy divided by the lane count, the lane's pre-FEC bit error rate.",
}

// helpFor returns the help text of the family of n.
func helpFor(n statName, summed bool) string {
	key := n.kind.prefix() + n.base
	meaning := ethtoolHelp[key]
	var where string
	switch n.kind {
	case statQueue:
		if summed {
			where = "Driver statistic " + n.base + " summed over the interface's queues (ethtool -S, for example mlx5 rxN_*/txN_*/chN_*, ENA queue_N_*, virtio and veth rx_queue_N_*); queues that went away keep their last value in the sum."
		} else {
			where = "Per-queue driver statistic " + n.base + " (ethtool -S, for example mlx5 rxN_*/txN_*/chN_*, ENA queue_N_*, virtio and veth rx_queue_N_*); label queue is the driver's queue or channel number."
		}
	case statPriority:
		where = "Per-priority driver statistic " + n.base + " (ethtool -S, for example mlx5 rx_prioN_*/tx_prioN_*, ice rx_priority_N_*, bnxt pfc_priN_* and *_priN, mlx4 rx_prio_N_*); label priority is the priority number."
	case statClass:
		where = "Per-class driver statistic " + n.base + " (ethtool -S, bnxt *_cosN, i40e veb.tc_N_*); label class is the class of service or traffic class."
	case statVF:
		where = "Per-VF driver statistic " + n.base + " the PF reports (ethtool -S, i40e vfNNN.*); label vf is the virtual function number."
	case statLane:
		where = "Per-lane driver statistic " + n.base + " (ethtool -S, mlx5 rx_err_lane_N_*); label lane is the physical lane."
	default:
		where = "Driver statistic " + n.base + " (ethtool -S)."
	}
	if meaning == "" {
		return where
	}
	return meaning + " " + where
}
