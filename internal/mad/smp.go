package mad

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
)

// Node types of NodeInfo (14.2.5.3).
const (
	NodeTypeCA     = 1
	NodeTypeSwitch = 2
	NodeTypeRouter = 3
)

// NodeInfo is the NodeInfo attribute (14.2.5.3).
type NodeInfo struct {
	BaseVersion     uint8
	ClassVersion    uint8
	NodeType        uint8
	NumPorts        uint8
	SystemImageGUID uint64
	NodeGUID        uint64
	PortGUID        uint64
	PartitionCap    uint16
	DeviceID        uint16
	Revision        uint32
	// LocalPortNum is the port through which the SMP arrived: over a
	// directed route of one hop, the far end's port number of the link.
	LocalPortNum uint8
	VendorID     uint32 // 24 bits
}

// ParseNodeInfo decodes NodeInfo attribute data.
func ParseNodeInfo(d []byte) (NodeInfo, error) {
	if len(d) < 40 {
		return NodeInfo{}, fmt.Errorf("NodeInfo: %w (%d bytes)", ErrShort, len(d))
	}
	return NodeInfo{
		BaseVersion:     d[0],
		ClassVersion:    d[1],
		NodeType:        d[2],
		NumPorts:        d[3],
		SystemImageGUID: binary.BigEndian.Uint64(d[4:12]),
		NodeGUID:        binary.BigEndian.Uint64(d[12:20]),
		PortGUID:        binary.BigEndian.Uint64(d[20:28]),
		PartitionCap:    binary.BigEndian.Uint16(d[28:30]),
		DeviceID:        binary.BigEndian.Uint16(d[30:32]),
		Revision:        binary.BigEndian.Uint32(d[32:36]),
		LocalPortNum:    d[36],
		VendorID:        uint32(d[37])<<16 | uint32(d[38])<<8 | uint32(d[39]),
	}, nil
}

// ParseNodeDescription decodes the NodeDescription attribute (14.2.5.2):
// 64 bytes of text, NUL-padded. Bytes that are not printable ASCII are
// replaced by '?', since the text becomes a label value.
func ParseNodeDescription(d []byte) (string, error) {
	if len(d) < 64 {
		return "", fmt.Errorf("NodeDescription: %w (%d bytes)", ErrShort, len(d))
	}
	d = d[:64]
	if i := bytes.IndexByte(d, 0); i >= 0 {
		d = d[:i]
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '?'
		}
		return r
	}, string(d)), nil
}

// Logical port states of PortInfo:PortState (14.2.5.6).
const (
	PortStateDown   = 1
	PortStateInit   = 2
	PortStateArmed  = 3
	PortStateActive = 4
)

// PortInfo holds the PortInfo attribute fields (14.2.5.6) this package
// uses.
type PortInfo struct {
	MKey            uint64
	GIDPrefix       uint64
	LID             uint16
	MasterSMLID     uint16
	CapabilityMask  uint32
	LocalPortNum    uint8
	LinkWidthActive uint8
	LinkSpeedActive uint8 // 4 bits
	PortState       uint8 // 4 bits
	PhysState       uint8 // 4 bits
}

// ParsePortInfo decodes PortInfo attribute data.
func ParsePortInfo(d []byte) (PortInfo, error) {
	if len(d) < 36 {
		return PortInfo{}, fmt.Errorf("PortInfo: %w (%d bytes)", ErrShort, len(d))
	}
	return PortInfo{
		MKey:            binary.BigEndian.Uint64(d[0:8]),
		GIDPrefix:       binary.BigEndian.Uint64(d[8:16]),
		LID:             binary.BigEndian.Uint16(d[16:18]),
		MasterSMLID:     binary.BigEndian.Uint16(d[18:20]),
		CapabilityMask:  binary.BigEndian.Uint32(d[20:24]),
		LocalPortNum:    d[28],
		LinkWidthActive: d[31],
		LinkSpeedActive: d[35] >> 4,
		PortState:       d[32] & 0xf,
		PhysState:       d[33] >> 4,
	}, nil
}
