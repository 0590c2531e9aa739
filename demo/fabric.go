package demo

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/nic-exporter/nic_exporter/internal/mad"
)

// The demo's InfiniBand port mlx5_0 port 1 is cabled to port 12 of a leaf
// switch. FabricPort answers the fabric collector's management queries as
// that switch would: it is the far end of the demo port.
const (
	demoSwitchGUID = 0x0002c90300a1b2c3
	demoSwitchName = "MF0;leaf-07:MQM9700/U1"
	demoSwitchPort = 12
	demoSwitchLID  = 7
)

// fabricPart holds the faults of the demo's far end. It has no files: the
// FabricPort answers from the demo clock when asked.
var fabricPart = part{
	faults: map[string]string{
		"fabric_symbol_errors": "the switch port at the far end of mlx5_0 port 1 sees a bad cable from its side: its SymbolErrorCounter rises by 1 a second and its PortRcvErrors by 1 every 2 s, while the host's own counters stay clean",
		"fabric_congestion":    "the switch port at the far end of mlx5_0 port 1 waits for credits to send to the host: its PortXmitWait rises by 500,000 ticks a second (a host that does not drain its receive queues)",
	},
	update: func(*Host) error { return nil },
}

// The fault rates of the far end, per second of the fault.
const (
	fabricSymbolErrorRate = 1
	fabricRcvErrorRate    = 0.5
	fabricXmitWaitRate    = 5e5
)

// FabricPort is the demo host's local InfiniBand port as the fabric
// collector sees it through a MAD client: the port's own PortInfo follows
// the ib_link_down fault, and the far end, a switch port, carries the
// port's traffic mirrored (what the host sends, the switch port receives)
// with a clean error record. It implements the fabric collector's
// Querier with the types of internal/mad.
type FabricPort struct{ h *Host }

// FabricPort returns the demo's far-end answerer for mlx5_0 port 1.
func (h *Host) FabricPort() *FabricPort { return &FabricPort{h: h} }

// linkUp reports whether the demo port's link is up (the ib_link_down
// phases of updateInfiniBand).
func (f *FabricPort) linkUp() bool {
	cur, ok := f.h.Current("ib_link_down")
	return !ok || cur >= ibRecoveryEnd
}

func (f *FabricPort) busy() time.Duration {
	t := f.h.Elapsed() + 24*time.Hour
	var outage time.Duration
	for _, d := range f.h.Spans("ib_link_down") {
		outage += min(d, ibInitEnd)
	}
	return t - outage
}

// PortInfo answers the local port (no hop) and the switch's ports.
func (f *FabricPort) PortInfo(_ context.Context, r mad.Route, port uint8) (mad.PortInfo, error) {
	if len(r.Path) == 0 {
		if !f.linkUp() {
			return mad.PortInfo{LID: 3, PortState: mad.PortStateDown, PhysState: 2}, nil
		}
		return mad.PortInfo{LID: 3, PortState: mad.PortStateActive, PhysState: 5}, nil
	}
	if !f.linkUp() {
		return mad.PortInfo{}, mad.ErrTimeout
	}
	return mad.PortInfo{LID: demoSwitchLID, LocalPortNum: port, PortState: mad.PortStateActive, PhysState: 5}, nil
}

// NodeInfo answers for the switch at the far end.
func (f *FabricPort) NodeInfo(context.Context, mad.Route) (mad.NodeInfo, error) {
	if !f.linkUp() {
		return mad.NodeInfo{}, mad.ErrTimeout
	}
	return mad.NodeInfo{BaseVersion: 1, ClassVersion: 1, NodeType: mad.NodeTypeSwitch, NumPorts: 64,
		SystemImageGUID: demoSwitchGUID, NodeGUID: demoSwitchGUID, PortGUID: demoSwitchGUID,
		LocalPortNum: demoSwitchPort, VendorID: 0x02c9}, nil
}

// NodeDescription answers for the switch at the far end.
func (f *FabricPort) NodeDescription(context.Context, mad.Route) (string, error) {
	return demoSwitchName, nil
}

// ClassPortInfo answers as a switch with PortXmitWait and all extended
// counters.
func (f *FabricPort) ClassPortInfo(context.Context, uint16) (mad.ClassPortInfo, error) {
	return mad.ClassPortInfo{BaseVersion: 1, ClassVersion: 1,
		CapabilityMask: mad.CapAllPortSelect | mad.CapExtendedWidth | mad.CapXmitWait}, nil
}

// PortCounters answers for the switch port: healthy, no errors, a little
// congestion (PortXmitWait), traffic the mirror of the host's; the
// fabric_ faults add errors and congestion for the time they have been in
// effect, saturating like the real fixed-width counters.
func (f *FabricPort) PortCounters(context.Context, uint16, uint8) (mad.PortCounters, error) {
	t := f.busy().Seconds()
	sat32 := func(v float64) uint32 { return uint32(min(v, math.MaxUint32)) }
	sat16 := func(v float64) uint16 { return uint16(min(v, math.MaxUint16)) }
	bad := f.h.ActiveFor("fabric_symbol_errors").Seconds()
	congested := f.h.ActiveFor("fabric_congestion").Seconds()
	return mad.PortCounters{PortSelect: demoSwitchPort, PortXmitDiscards: 3,
		SymbolErrorCounter: sat16(math.Floor(fabricSymbolErrorRate * bad)), PortRcvErrors: sat16(math.Floor(fabricRcvErrorRate * bad)),
		PortXmitWait: sat32(2e6 + 5e3*t + fabricXmitWaitRate*congested),
		PortXmitData: sat32(2.8e9 * t), PortRcvData: sat32(3.0e9 * t), PortXmitPkts: sat32(2.7e6 * t), PortRcvPkts: sat32(2.9e6 * t)}, nil
}

// errDemoReset is the demo switch's answer to a counter reset: it has no
// counters to clear, its values follow the demo clock.
var errDemoReset = fmt.Errorf("the demo's far-end switch port computes its counters from the demo clock and takes no reset: %w", errors.ErrUnsupported)

// ResetPortCounters refuses: see errDemoReset.
func (*FabricPort) ResetPortCounters(context.Context, uint16, uint8, mad.CounterSelect) (mad.PortCounters, error) {
	return mad.PortCounters{}, errDemoReset
}

// PortCountersExtended answers for the switch port.
func (f *FabricPort) PortCountersExtended(context.Context, uint16, uint8) (mad.PortCountersExtended, error) {
	t := f.busy().Seconds()
	return mad.PortCountersExtended{PortSelect: demoSwitchPort,
		PortXmitData: uint64(2.8e9 * t), PortRcvData: uint64(3.0e9 * t), PortXmitPkts: uint64(2.7e6 * t), PortRcvPkts: uint64(2.9e6 * t),
		PortUnicastXmitPkts: uint64(2.7e6 * t), PortUnicastRcvPkts: uint64(2.9e6 * t), PortMulticastXmitPkts: uint64(3 * t), PortMulticastRcvPkts: uint64(2 * t)}, nil
}

// Close implements the Querier; the demo port holds nothing.
func (*FabricPort) Close() error { return nil }
