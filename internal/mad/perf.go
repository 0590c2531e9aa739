package mad

import (
	"encoding/binary"
	"fmt"
)

// PerfMgt ClassPortInfo CapabilityMask bits (IBTA vol. 1, 16.1.2 and the
// 1.2.1 errata; the names are libibmad's).
const (
	// CapAllPortSelect: PortSelect 0xFF reads the sum of all ports.
	CapAllPortSelect = 1 << 8
	// CapExtendedWidth: PortCountersExtended has all eight 64-bit counters.
	CapExtendedWidth = 1 << 9
	// CapExtendedWidthNoIETF: PortCountersExtended has the four 64-bit
	// data and packet counters only.
	CapExtendedWidthNoIETF = 1 << 10
	// CapXmitWait: PortCounters:PortXmitWait is implemented.
	CapXmitWait = 1 << 12
	// CapQP1Dropped: PortCounters:QP1Dropped is implemented.
	CapQP1Dropped = 1 << 15
)

// ClassPortInfo is the Performance Management ClassPortInfo attribute
// (13.4.8.1): which optional counters a port's agent implements.
type ClassPortInfo struct {
	BaseVersion     uint8
	ClassVersion    uint8
	CapabilityMask  uint16
	CapabilityMask2 uint32 // 27 bits
	RespTimeValue   uint8  // 5 bits
}

// HasQP1Dropped reports whether PortCounters:QP1Dropped is valid.
func (c ClassPortInfo) HasQP1Dropped() bool { return c.CapabilityMask&CapQP1Dropped != 0 }

// HasXmitWait reports whether PortCounters:PortXmitWait is valid.
func (c ClassPortInfo) HasXmitWait() bool { return c.CapabilityMask&CapXmitWait != 0 }

// ExtendedCounters returns how many of PortCountersExtended's counters
// are valid: 8 (all), 4 (data and packets only) or 0 (the attribute is
// not indicated, so the 32-bit PortCounters data counters are the ones to
// use).
func (c ClassPortInfo) ExtendedCounters() int {
	switch {
	case c.CapabilityMask&CapExtendedWidth != 0:
		return 8
	case c.CapabilityMask&CapExtendedWidthNoIETF != 0:
		return 4
	}
	return 0
}

// ParseClassPortInfo decodes ClassPortInfo attribute data.
func ParseClassPortInfo(d []byte) (ClassPortInfo, error) {
	if len(d) < 8 {
		return ClassPortInfo{}, fmt.Errorf("ClassPortInfo: %w (%d bytes)", ErrShort, len(d))
	}
	w := binary.BigEndian.Uint32(d[4:8])
	return ClassPortInfo{
		BaseVersion:     d[0],
		ClassVersion:    d[1],
		CapabilityMask:  binary.BigEndian.Uint16(d[2:4]),
		CapabilityMask2: w >> 5,
		RespTimeValue:   uint8(w & 0x1f),
	}, nil
}

// PortCounters is the PortCounters attribute (16.1.3.5). The fields have
// the attribute's widths; every counter saturates at its maximum rather
// than wrapping. PortXmitData and PortRcvData count 32-bit words.
type PortCounters struct {
	PortSelect                   uint8
	CounterSelect                uint16
	SymbolErrorCounter           uint16
	LinkErrorRecoveryCounter     uint8
	LinkDownedCounter            uint8
	PortRcvErrors                uint16
	PortRcvRemotePhysicalErrors  uint16
	PortRcvSwitchRelayErrors     uint16
	PortXmitDiscards             uint16
	PortXmitConstraintErrors     uint8
	PortRcvConstraintErrors      uint8
	CounterSelect2               uint8
	LocalLinkIntegrityErrors     uint8 // 4 bits
	ExcessiveBufferOverrunErrors uint8 // 4 bits
	QP1Dropped                   uint16
	VL15Dropped                  uint16
	PortXmitData                 uint32
	PortRcvData                  uint32
	PortXmitPkts                 uint32
	PortRcvPkts                  uint32
	PortXmitWait                 uint32
}

// ParsePortCounters decodes PortCounters attribute data.
func ParsePortCounters(d []byte) (PortCounters, error) {
	if len(d) < 44 {
		return PortCounters{}, fmt.Errorf("PortCounters: %w (%d bytes)", ErrShort, len(d))
	}
	be16 := func(o int) uint16 { return binary.BigEndian.Uint16(d[o : o+2]) }
	be32 := func(o int) uint32 { return binary.BigEndian.Uint32(d[o : o+4]) }
	return PortCounters{
		PortSelect:                   d[1],
		CounterSelect:                be16(2),
		SymbolErrorCounter:           be16(4),
		LinkErrorRecoveryCounter:     d[6],
		LinkDownedCounter:            d[7],
		PortRcvErrors:                be16(8),
		PortRcvRemotePhysicalErrors:  be16(10),
		PortRcvSwitchRelayErrors:     be16(12),
		PortXmitDiscards:             be16(14),
		PortXmitConstraintErrors:     d[16],
		PortRcvConstraintErrors:      d[17],
		CounterSelect2:               d[18],
		LocalLinkIntegrityErrors:     d[19] >> 4,
		ExcessiveBufferOverrunErrors: d[19] & 0xf,
		QP1Dropped:                   be16(20),
		VL15Dropped:                  be16(22),
		PortXmitData:                 be32(24),
		PortRcvData:                  be32(28),
		PortXmitPkts:                 be32(32),
		PortRcvPkts:                  be32(36),
		PortXmitWait:                 be32(40),
	}, nil
}

// PortCountersExtended is the PortCountersExtended attribute (16.1.4.11):
// 64-bit data and packet counters. Which are valid depends on the
// ClassPortInfo capability mask (ExtendedCounters).
type PortCountersExtended struct {
	PortSelect            uint8
	CounterSelect         uint16
	PortXmitData          uint64
	PortRcvData           uint64
	PortXmitPkts          uint64
	PortRcvPkts           uint64
	PortUnicastXmitPkts   uint64
	PortUnicastRcvPkts    uint64
	PortMulticastXmitPkts uint64
	PortMulticastRcvPkts  uint64
}

// ParsePortCountersExtended decodes PortCountersExtended attribute data.
// It needs the 72 bytes of the attribute.
func ParsePortCountersExtended(d []byte) (PortCountersExtended, error) {
	if len(d) < 72 {
		return PortCountersExtended{}, fmt.Errorf("PortCountersExtended: %w (%d bytes)", ErrShort, len(d))
	}
	be64 := func(o int) uint64 { return binary.BigEndian.Uint64(d[o : o+8]) }
	return PortCountersExtended{
		PortSelect:            d[1],
		CounterSelect:         binary.BigEndian.Uint16(d[2:4]),
		PortXmitData:          be64(8),
		PortRcvData:           be64(16),
		PortXmitPkts:          be64(24),
		PortRcvPkts:           be64(32),
		PortUnicastXmitPkts:   be64(40),
		PortUnicastRcvPkts:    be64(48),
		PortMulticastXmitPkts: be64(56),
		PortMulticastRcvPkts:  be64(64),
	}, nil
}

// PortRcvErrorDetails is the optional PortRcvErrorDetails attribute
// (16.1.4.1): the causes behind PortRcvErrors. 16-bit, saturating.
type PortRcvErrorDetails struct {
	PortSelect                uint8
	CounterSelect             uint16
	PortLocalPhysicalErrors   uint16
	PortMalformedPacketErrors uint16
	PortBufferOverrunErrors   uint16
	PortDLIDMappingErrors     uint16
	PortVLMappingErrors       uint16
	PortLoopingErrors         uint16
}

// ParsePortRcvErrorDetails decodes PortRcvErrorDetails attribute data.
func ParsePortRcvErrorDetails(d []byte) (PortRcvErrorDetails, error) {
	if len(d) < 16 {
		return PortRcvErrorDetails{}, fmt.Errorf("PortRcvErrorDetails: %w (%d bytes)", ErrShort, len(d))
	}
	be16 := func(o int) uint16 { return binary.BigEndian.Uint16(d[o : o+2]) }
	return PortRcvErrorDetails{
		PortSelect:                d[1],
		CounterSelect:             be16(2),
		PortLocalPhysicalErrors:   be16(4),
		PortMalformedPacketErrors: be16(6),
		PortBufferOverrunErrors:   be16(8),
		PortDLIDMappingErrors:     be16(10),
		PortVLMappingErrors:       be16(12),
		PortLoopingErrors:         be16(14),
	}, nil
}

// PortXmitDiscardDetails is the optional PortXmitDiscardDetails attribute
// (16.1.4.2): the causes behind PortXmitDiscards. 16-bit, saturating.
type PortXmitDiscardDetails struct {
	PortSelect                     uint8
	CounterSelect                  uint16
	PortInactiveDiscards           uint16
	PortNeighborMTUDiscards        uint16
	PortSwLifetimeLimitDiscards    uint16
	PortSwHOQLifetimeLimitDiscards uint16
}

// ParsePortXmitDiscardDetails decodes PortXmitDiscardDetails attribute data.
func ParsePortXmitDiscardDetails(d []byte) (PortXmitDiscardDetails, error) {
	if len(d) < 12 {
		return PortXmitDiscardDetails{}, fmt.Errorf("PortXmitDiscardDetails: %w (%d bytes)", ErrShort, len(d))
	}
	be16 := func(o int) uint16 { return binary.BigEndian.Uint16(d[o : o+2]) }
	return PortXmitDiscardDetails{
		PortSelect:                     d[1],
		CounterSelect:                  be16(2),
		PortInactiveDiscards:           be16(4),
		PortNeighborMTUDiscards:        be16(6),
		PortSwLifetimeLimitDiscards:    be16(8),
		PortSwHOQLifetimeLimitDiscards: be16(10),
	}, nil
}

// CounterSelect names PortCounters counters for a reset (Set of
// PortCounters, 16.1.3.5): bits 0 to 15 are the attribute's CounterSelect
// field, in the order of the counters in the attribute (SymbolErrorCounter
// first, PortRcvPkts last); SelXmitWait is sent as CounterSelect2.
// QP1Dropped has no select bit in CounterSelect and is never reset here.
type CounterSelect uint32

// The counters of a PortCounters reset.
const (
	SelSymbolError CounterSelect = 1 << iota
	SelLinkErrorRecovery
	SelLinkDowned
	SelRcvErrors
	SelRcvRemotePhysicalErrors
	SelRcvSwitchRelayErrors
	SelXmitDiscards
	SelXmitConstraintErrors
	SelRcvConstraintErrors
	SelLocalLinkIntegrityErrors
	SelExcessiveBufferOverrunErrors
	SelVL15Dropped
	SelXmitData
	SelRcvData
	SelXmitPkts
	SelRcvPkts
	// SelXmitWait resets PortXmitWait, through CounterSelect2.
	SelXmitWait
)

// resetData returns the attribute data of a PortCounters Set that resets
// the counters sel names on port.
func resetData(port uint8, sel CounterSelect) []byte {
	d := perfData(port)
	binary.BigEndian.PutUint16(d[2:4], uint16(sel&0xffff))
	if sel&SelXmitWait != 0 {
		d[18] = 1 // CounterSelect2 bit 0: PortXmitWait
	}
	return d
}
