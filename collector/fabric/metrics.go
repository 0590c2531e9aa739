package fabric

import (
	"strings"

	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/internal/mad"
)

// remoteLabels are the labels of every far-end series: the local HCA port
// and the port at the other end of its cable.
var remoteLabels = []string{"device", "port", "remote_guid", "remote_node", "remote_port"}

var (
	fabricLocalState = exposition.MustNewDesc("nic_fabric_local_port_state",
		"Logical state of the local HCA port as its subnet management agent reports it (PortInfo over a directed route of no hops): 1 Down, 2 Init, 3 Armed, 4 Active.",
		exposition.Gauge, "device", "port")
	fabricRemoteUp = exposition.MustNewDesc("nic_fabric_remote_up",
		"1 when this poll read the far end of the local port (its node, port state and counters), 0 when it could not: the link is down, or a query failed or timed out (counted in nic_exporter_source_errors_total).",
		exposition.Gauge, "device", "port")
	fabricRemoteInfo = exposition.MustNewDesc("nic_fabric_remote_info",
		"Value 1 for the port at the far end of the local port's cable, as last seen: its node GUID, node description, port number, node type (switch, ca, router) and the LID its performance counters are read at.",
		exposition.Gauge, append(append([]string(nil), remoteLabels...), "remote_type", "remote_lid")...)
	fabricLinkUp = exposition.MustNewDesc("nic_fabric_link_up",
		"1 while the local port is up (Init, Armed or Active) and its far end answers, 0 while the local port is Down; the remote labels are those of the far end as last seen, so a cable that went down names the switch port it leads to.",
		exposition.Gauge, remoteLabels...)
	fabricRemoteState = exposition.MustNewDesc("nic_fabric_remote_port_state",
		"Logical state of the far-end port (PortInfo:PortState): 1 Down, 2 Init, 3 Armed, 4 Active.",
		exposition.Gauge, remoteLabels...)
	fabricRemotePhysState = exposition.MustNewDesc("nic_fabric_remote_port_phys_state",
		"Physical state of the far-end port (PortInfo:PortPhysicalState), numbered as ibstat names them: 1 Sleep, 2 Polling, 3 Disabled, 4 PortConfigurationTraining, 5 LinkUp, 6 LinkErrorRecovery, 7 PhyTest.",
		exposition.Gauge, remoteLabels...)
	fabricRemoteResets = exposition.MustNewDesc("nic_fabric_remote_port_counter_resets_total",
		"Resets of saturated PortCounters counters of the far-end port this exporter sent since it started (--collector.fabric.reset-saturated, at most one per port per --collector.fabric.reset-interval). Only with the reset on.",
		exposition.Counter, remoteLabels...)
	fabricSaturated = exposition.MustNewDesc("nic_fabric_remote_port_counters_saturated",
		"1 while a fixed-width PortCounters counter of the far-end port (label counter, named like the local ports' counters/ files) is stuck at the maximum of its width (4, 8, 16 or 32 bits, IBA 16.1.3.5): it no longer counts until it is reset, so its rate reads 0. 0 otherwise. Data and packet counters read from PortCountersExtended (64 bits) are never saturated.",
		exposition.Gauge, append(append([]string(nil), remoteLabels...), "counter")...)
)

// switchLabels are the labels of the series of the switches sweep
// (--collector.fabric.scope=switches).
var switchLabels = []string{"switch_guid", "switch_node", "switch_port"}

var (
	fabricSwitchInfo = exposition.MustNewDesc("nic_fabric_switch_info",
		"Value 1 for each switch the last discovery of the switches sweep found (--collector.fabric.scope=switches): its node GUID, node description and the LID its counters are read at.",
		exposition.Gauge, "switch_guid", "switch_node", "switch_lid")
	fabricSwitchState = exposition.MustNewDesc("nic_fabric_switch_port_state",
		"Logical state of the switch port as this sweep read it (PortInfo:PortState): 1 Down, 2 Init, 3 Armed, 4 Active. Every port that was up at the last discovery is read, so a link that went down since shows 1.",
		exposition.Gauge, switchLabels...)
	fabricSwitchPhysState = exposition.MustNewDesc("nic_fabric_switch_port_phys_state",
		"Physical state of the switch port (PortInfo:PortPhysicalState), numbered as ibstat names them: 1 Sleep, 2 Polling, 3 Disabled, 4 PortConfigurationTraining, 5 LinkUp, 6 LinkErrorRecovery, 7 PhyTest.",
		exposition.Gauge, switchLabels...)
	fabricSwitchResets = exposition.MustNewDesc("nic_fabric_switch_port_counter_resets_total",
		"Resets of saturated PortCounters counters of the switch port this exporter sent since it started (--collector.fabric.reset-saturated with the switches sweep). Only with the reset on.",
		exposition.Counter, switchLabels...)
	fabricSwitchSaturated = exposition.MustNewDesc("nic_fabric_switch_port_counters_saturated",
		"1 while a fixed-width PortCounters counter of the switch port (label counter, named like the local ports' counters/ files) is stuck at the maximum of its width (IBA 16.1.3.5), 0 otherwise.",
		exposition.Gauge, append(append([]string(nil), switchLabels...), "counter")...)
)

// counter is one port counter: its name (as the local ports' counters/
// file of the infiniband collector names it), its width in bits (0 for
// 64-bit counters), the scale from the MAD's unit to the metric's, and
// its descriptors for the far end (labels remoteLabels) and for the
// switches sweep (labels switchLabels).
type counter struct {
	name  string
	bits  uint
	scale float64
	// sel is the counter's bit of a PortCounters reset; 0 for counters
	// that cannot be reset that way (QP1Dropped, the extended ones).
	sel  mad.CounterSelect
	desc *exposition.Desc
	sw   *exposition.Desc
}

// newCounter makes both descriptors of a counter from the far-end help
// text; the switches sweep's says "switch port" for "far-end port".
func newCounter(name, metric, help string, bits uint, scale float64, sel mad.CounterSelect) counter {
	swHelp := strings.NewReplacer("congestion towards the local port (a switch port waiting on the host) or from it", "congestion towards the port's link partner",
		"far-end switch port", "switch port", "far-end port", "switch port").Replace(help)
	return counter{name: name, bits: bits, scale: scale, sel: sel,
		desc: exposition.MustNewDesc(metric, help, exposition.Counter, remoteLabels...),
		sw:   exposition.MustNewDesc(strings.Replace(metric, "nic_fabric_remote_port_", "nic_fabric_switch_port_", 1), swHelp, exposition.Counter, switchLabels...)}
}

// The far-end counters, from PortCounters (IBA 16.1.3.5) and
// PortCountersExtended (16.1.4.11). Names and help follow the infiniband
// collector's for the same IBA fields, with nic_fabric_remote_port_ for
// nic_infiniband_port_.
var (
	cSymbolError        = newCounter("symbol_error", "nic_fabric_remote_port_symbol_error_total", "Minor link errors (symbol errors) detected on the far-end port's physical lanes. 16-bit, saturating.", 16, 1, mad.SelSymbolError)
	cLinkErrorRecovery  = newCounter("link_error_recovery", "nic_fabric_remote_port_link_error_recovery_total", "Times the far-end port completed link error recovery. 8-bit, saturating.", 8, 1, mad.SelLinkErrorRecovery)
	cLinkDowned         = newCounter("link_downed", "nic_fabric_remote_port_link_downed_total", "Times the far-end port's link error recovery failed and the link went down. 8-bit, saturating.", 8, 1, mad.SelLinkDowned)
	cRcvErrors          = newCounter("port_rcv_errors", "nic_fabric_remote_port_rcv_errors_total", "Packets with errors received by the far-end port (local physical errors, malformed packets, buffer overruns). 16-bit, saturating.", 16, 1, mad.SelRcvErrors)
	cRcvRemotePhys      = newCounter("port_rcv_remote_physical_errors", "nic_fabric_remote_port_rcv_remote_physical_errors_total", "Packets marked with the EBP delimiter received by the far-end port. 16-bit, saturating.", 16, 1, mad.SelRcvRemotePhysicalErrors)
	cRcvSwitchRelay     = newCounter("port_rcv_switch_relay_errors", "nic_fabric_remote_port_rcv_switch_relay_errors_total", "Packets the far-end switch port could not forward (no route, for example). 16-bit, saturating.", 16, 1, mad.SelRcvSwitchRelayErrors)
	cXmitDiscards       = newCounter("port_xmit_discards", "nic_fabric_remote_port_xmit_discards_total", "Outbound packets the far-end port discarded because it was down or congested. 16-bit, saturating.", 16, 1, mad.SelXmitDiscards)
	cXmitConstraint     = newCounter("port_xmit_constraint_errors", "nic_fabric_remote_port_xmit_constraint_errors_total", "Outbound packets the far-end port did not send because of partition or raw packet constraints. 8-bit, saturating.", 8, 1, mad.SelXmitConstraintErrors)
	cRcvConstraint      = newCounter("port_rcv_constraint_errors", "nic_fabric_remote_port_rcv_constraint_errors_total", "Packets the far-end port discarded on receipt because of partition or raw packet constraints. 8-bit, saturating.", 8, 1, mad.SelRcvConstraintErrors)
	cLocalLinkIntegrity = newCounter("local_link_integrity_errors", "nic_fabric_remote_port_local_link_integrity_errors_total", "Times the far-end port's count of local physical errors exceeded its threshold. 4-bit, saturating.", 4, 1, mad.SelLocalLinkIntegrityErrors)
	cExcessiveOverrun   = newCounter("excessive_buffer_overrun_errors", "nic_fabric_remote_port_excessive_buffer_overrun_errors_total", "Times consecutive flow-control update periods of the far-end port had buffer overruns. 4-bit, saturating.", 4, 1, mad.SelExcessiveBufferOverrunErrors)
	cVL15Dropped        = newCounter("VL15_dropped", "nic_fabric_remote_port_vl15_dropped_total", "Subnet management packets the far-end port dropped for lack of buffers. 16-bit, saturating.", 16, 1, mad.SelVL15Dropped)
	cQP1Dropped         = newCounter("qp1_dropped", "nic_fabric_remote_port_qp1_dropped_total", "General management (QP1) packets the far-end port dropped; only where its ClassPortInfo indicates the counter. 16-bit, saturating.", 16, 1, 0)
	cXmitWait           = newCounter("port_xmit_wait", "nic_fabric_remote_port_xmit_wait_total", "Ticks during which the far-end port had data to send but no flow-control credits: congestion towards the local port (a switch port waiting on the host) or from it. Only where its ClassPortInfo indicates PortXmitWait. 32-bit, saturating.", 32, 1, mad.SelXmitWait)
	cXmitData           = newCounter("port_xmit_data", "nic_fabric_remote_port_xmit_data_bytes_total", "Bytes the far-end port sent on all VLs (PortCountersExtended when indicated, else the 32-bit PortCounters word count, times 4).", 32, 4, mad.SelXmitData)
	cRcvData            = newCounter("port_rcv_data", "nic_fabric_remote_port_rcv_data_bytes_total", "Bytes the far-end port received on all VLs (PortCountersExtended when indicated, else the 32-bit PortCounters word count, times 4).", 32, 4, mad.SelRcvData)
	cXmitPkts           = newCounter("port_xmit_packets", "nic_fabric_remote_port_xmit_packets_total", "Packets the far-end port sent on all VLs (PortCountersExtended when indicated, else 32-bit PortCounters).", 32, 1, mad.SelXmitPkts)
	cRcvPkts            = newCounter("port_rcv_packets", "nic_fabric_remote_port_rcv_packets_total", "Packets the far-end port received on all VLs (PortCountersExtended when indicated, else 32-bit PortCounters).", 32, 1, mad.SelRcvPkts)
	cUnicastXmit        = newCounter("unicast_xmit_packets", "nic_fabric_remote_port_unicast_xmit_packets_total", "Unicast packets the far-end port sent (PortCountersExtended, where its ClassPortInfo indicates all eight extended counters).", 0, 1, 0)
	cUnicastRcv         = newCounter("unicast_rcv_packets", "nic_fabric_remote_port_unicast_rcv_packets_total", "Unicast packets the far-end port received (PortCountersExtended, all eight indicated).", 0, 1, 0)
	cMulticastXmit      = newCounter("multicast_xmit_packets", "nic_fabric_remote_port_multicast_xmit_packets_total", "Multicast packets the far-end port sent (PortCountersExtended, all eight indicated).", 0, 1, 0)
	cMulticastRcv       = newCounter("multicast_rcv_packets", "nic_fabric_remote_port_multicast_rcv_packets_total", "Multicast packets the far-end port received (PortCountersExtended, all eight indicated).", 0, 1, 0)
)

// value is one counter reading.
type value struct {
	c counter
	v uint64
	// bits is the width it was read at: c.bits, or 0 when a data or
	// packet counter came from PortCountersExtended.
	bits uint
}

// saturated reports whether a reading is stuck at the maximum of its
// width.
func (v value) saturated() (fixed, stuck bool) {
	if v.bits == 0 || v.bits >= 64 {
		return false, false
	}
	return true, v.v == 1<<v.bits-1
}

// counterValues turns PortCounters, and PortCountersExtended when the
// capability mask says it is valid (ext nil otherwise), into readings:
// PortXmitWait and QP1Dropped only where indicated, the 64-bit data and
// packet counters in place of the 32-bit ones where indicated.
func counterValues(cpi mad.ClassPortInfo, pc mad.PortCounters, ext *mad.PortCountersExtended) []value {
	f := func(c counter, v uint64) value { return value{c: c, v: v, bits: c.bits} }
	out := []value{
		f(cSymbolError, uint64(pc.SymbolErrorCounter)),
		f(cLinkErrorRecovery, uint64(pc.LinkErrorRecoveryCounter)),
		f(cLinkDowned, uint64(pc.LinkDownedCounter)),
		f(cRcvErrors, uint64(pc.PortRcvErrors)),
		f(cRcvRemotePhys, uint64(pc.PortRcvRemotePhysicalErrors)),
		f(cRcvSwitchRelay, uint64(pc.PortRcvSwitchRelayErrors)),
		f(cXmitDiscards, uint64(pc.PortXmitDiscards)),
		f(cXmitConstraint, uint64(pc.PortXmitConstraintErrors)),
		f(cRcvConstraint, uint64(pc.PortRcvConstraintErrors)),
		f(cLocalLinkIntegrity, uint64(pc.LocalLinkIntegrityErrors)),
		f(cExcessiveOverrun, uint64(pc.ExcessiveBufferOverrunErrors)),
		f(cVL15Dropped, uint64(pc.VL15Dropped)),
	}
	if cpi.HasQP1Dropped() {
		out = append(out, f(cQP1Dropped, uint64(pc.QP1Dropped)))
	}
	if cpi.HasXmitWait() {
		out = append(out, f(cXmitWait, uint64(pc.PortXmitWait)))
	}
	if ext != nil && cpi.ExtendedCounters() >= 4 {
		wide := func(c counter, v uint64) value { return value{c: c, v: v} }
		out = append(out, wide(cXmitData, ext.PortXmitData), wide(cRcvData, ext.PortRcvData),
			wide(cXmitPkts, ext.PortXmitPkts), wide(cRcvPkts, ext.PortRcvPkts))
		if cpi.ExtendedCounters() == 8 {
			out = append(out, wide(cUnicastXmit, ext.PortUnicastXmitPkts), wide(cUnicastRcv, ext.PortUnicastRcvPkts),
				wide(cMulticastXmit, ext.PortMulticastXmitPkts), wide(cMulticastRcv, ext.PortMulticastRcvPkts))
		}
	} else {
		out = append(out, f(cXmitData, uint64(pc.PortXmitData)), f(cRcvData, uint64(pc.PortRcvData)),
			f(cXmitPkts, uint64(pc.PortXmitPkts)), f(cRcvPkts, uint64(pc.PortRcvPkts)))
	}
	return out
}

// descs returns every metric family the collector can emit.
func descs() []*exposition.Desc {
	out := []*exposition.Desc{fabricLocalState, fabricRemoteUp, fabricRemoteInfo, fabricLinkUp, fabricRemoteState, fabricRemotePhysState, fabricSaturated,
		fabricRemoteResets, fabricSwitchInfo, fabricSwitchState, fabricSwitchPhysState, fabricSwitchSaturated, fabricSwitchResets}
	for _, c := range []counter{cSymbolError, cLinkErrorRecovery, cLinkDowned, cRcvErrors, cRcvRemotePhys, cRcvSwitchRelay,
		cXmitDiscards, cXmitConstraint, cRcvConstraint, cLocalLinkIntegrity, cExcessiveOverrun, cVL15Dropped, cQP1Dropped,
		cXmitWait, cXmitData, cRcvData, cXmitPkts, cRcvPkts, cUnicastXmit, cUnicastRcv, cMulticastXmit, cMulticastRcv} {
		out = append(out, c.desc, c.sw)
	}
	return out
}

// stuckSelect returns the reset bits of the readings stuck at the
// maximum of their width.
func stuckSelect(values []value) mad.CounterSelect {
	var sel mad.CounterSelect
	for _, v := range values {
		if fixed, stuck := v.saturated(); fixed && stuck {
			sel |= v.c.sel
		}
	}
	return sel
}
