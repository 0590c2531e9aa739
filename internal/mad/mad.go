package mad

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"
)

// MADSize is the size of every MAD this package sends and receives: the
// 256 bytes of a non-RMPP management datagram (IBTA vol. 1, 13.4.2).
const MADSize = 256

// Management classes (IBTA vol. 1, table 109).
const (
	// ClassSubnLID is the LID-routed Subnet Management class.
	ClassSubnLID = 0x01
	// ClassPerf is the Performance Management class.
	ClassPerf = 0x04
	// ClassSubnDirected is the directed-route Subnet Management class.
	ClassSubnDirected = 0x81
)

// Methods (IBTA vol. 1, 13.4.5).
const (
	// MethodGet reads an attribute.
	MethodGet = 0x01
	// MethodSet writes an attribute; the response is a GetResp with the
	// attribute's new value. For PerfMgt PortCounters it resets the
	// counters its CounterSelect names (16.1.3.5).
	MethodSet = 0x02
	// MethodGetResp is the response to a Get.
	MethodGetResp = 0x81
)

// Attribute identifiers of the Subnet Management class (14.2.5).
const (
	AttrNodeDescription = 0x0010
	AttrNodeInfo        = 0x0011
	AttrPortInfo        = 0x0015
)

// Attribute identifiers of the Performance Management class (16.1.2).
const (
	AttrClassPortInfo          = 0x0001
	AttrPortCounters           = 0x0012
	AttrPortRcvErrorDetails    = 0x0015
	AttrPortXmitDiscardDetails = 0x0016
	AttrPortCountersExtended   = 0x001D
)

// Offsets of the attribute data in the MAD: 64 for both the SMP formats
// (14.2.1.1 and 14.2.1.2) and the Performance Management GMP (16.1.1),
// whose 40 reserved bytes follow the 24-byte common header.
const dataOffset = 64

// dataSize is the attribute data of an SMP (64 bytes). A PerfMgt MAD has
// 192, but every attribute read here fits in the first 64 except
// PortCountersExtended, which has 72.
const dataSize = 64

// Header is the common MAD header (IBTA vol. 1, 13.4.2), with the fields
// of the directed-route SMP (14.2.1.2) where its Status field is split.
type Header struct {
	BaseVersion  uint8
	MgmtClass    uint8
	ClassVersion uint8
	Method       uint8
	// Status is the 16-bit status field; for a directed-route SMP the top
	// bit is the D (direction) bit and is left out (see Direction).
	Status        uint16
	ClassSpecific uint16
	TID           uint64
	AttrID        uint16
	AttrMod       uint32
}

// Status codes of the common MAD header (13.4.7), bits 4:2 of Status.
const (
	statusInvalidField  = 0x001c
	statusUnsupClassVer = 0x0004
	statusUnsupMethod   = 0x0008
	statusUnsupAttr     = 0x000c
)

// StatusError is a response whose MAD status is not success. Code is the
// status field (without a directed-route SMP's direction bit).
type StatusError struct {
	Code   uint16
	AttrID uint16
}

// Error implements error.
func (e *StatusError) Error() string {
	var what string
	switch e.Code & 0x1c {
	case 0:
		what = "busy or redirect required"
	case statusUnsupClassVer:
		what = "unsupported class or version"
	case statusUnsupMethod:
		what = "unsupported method"
	case statusUnsupAttr:
		what = "unsupported attribute or modifier"
	case statusInvalidField:
		what = "invalid field"
	default:
		what = "error"
	}
	return fmt.Sprintf("MAD status 0x%04x (%s) for attribute 0x%04x", e.Code, what, e.AttrID)
}

// Unsupported reports whether the status says the attribute (or method,
// or class version) is not implemented by the responder, as opposed to a
// transient error.
func (e *StatusError) Unsupported() bool {
	switch e.Code & 0x1c {
	case statusUnsupClassVer, statusUnsupMethod, statusUnsupAttr:
		return true
	}
	return false
}

// ErrTimeout is returned when no response arrived: the transport (the
// kernel or ibsim) gave the request back with status ETIMEDOUT, or the
// caller's deadline expired first. It wraps syscall.ETIMEDOUT.
var ErrTimeout = fmt.Errorf("MAD timed out: %w", syscall.ETIMEDOUT)

// ErrShort is returned for a MAD or attribute shorter than its layout.
var ErrShort = errors.New("MAD too short")

// ParseHeader decodes the common header of a MAD.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < 24 {
		return Header{}, fmt.Errorf("header: %w (%d bytes)", ErrShort, len(b))
	}
	h := Header{
		BaseVersion:   b[0],
		MgmtClass:     b[1],
		ClassVersion:  b[2],
		Method:        b[3],
		Status:        binary.BigEndian.Uint16(b[4:6]),
		ClassSpecific: binary.BigEndian.Uint16(b[6:8]),
		TID:           binary.BigEndian.Uint64(b[8:16]),
		AttrID:        binary.BigEndian.Uint16(b[16:18]),
		AttrMod:       binary.BigEndian.Uint32(b[20:24]),
	}
	if h.MgmtClass == ClassSubnDirected {
		h.Status &= 0x7fff
	}
	return h, nil
}

// Route says where a request goes: by LID, or by a directed route of
// outgoing port numbers from the local port (an empty path is the local
// node itself, a path of one port is the node at the far end of that
// port's link).
type Route struct {
	// LID is the destination LID of a LID-routed request.
	LID uint16
	// Path is the directed route; it is used when Directed is true.
	Path     []uint8
	Directed bool
}

// LIDRoute returns the route to a LID.
func LIDRoute(lid uint16) Route { return Route{LID: lid} }

// DirectedRoute returns a directed route through the given output ports.
func DirectedRoute(ports ...uint8) Route {
	return Route{Path: append([]uint8(nil), ports...), Directed: true}
}

// String formats the route as the diags do: a LID in decimal, or a
// comma-separated port path starting with 0.
func (r Route) String() string {
	if !r.Directed {
		return fmt.Sprintf("lid %d", r.LID)
	}
	s := "DR 0"
	for _, p := range r.Path {
		s += fmt.Sprintf(",%d", p)
	}
	return s
}

// maxHops is the longest directed route an SMP carries (64-byte path,
// entry 0 unused).
const maxHops = 63

// permissiveLID is the destination LID of a directed-route SMP and the
// DrSLID/DrDLID of a pure directed route (14.2.2).
const permissiveLID = 0xffff

// Request is one Get (or Set) request: the class, attribute, modifier and
// route, plus a PerfMgt attribute's leading bytes (PortSelect). The TID is
// set by the Client.
type Request struct {
	Class uint8
	// Method is MethodGet when zero, or MethodSet.
	Method  uint8
	AttrID  uint16
	AttrMod uint32
	Route   Route
	// Data is copied to the attribute data (offset 64), for example a
	// PerfMgt PortSelect in byte 1.
	Data []byte
}

// Encode builds the 256-byte request MAD with the given transaction ID.
func (r Request) Encode(tid uint64) ([]byte, error) {
	b := make([]byte, MADSize)
	class := r.Class
	if class == ClassSubnLID && r.Route.Directed {
		class = ClassSubnDirected
	}
	if class == ClassPerf && r.Route.Directed {
		return nil, errors.New("performance management MADs cannot be directed-routed")
	}
	b[0] = 1 // BaseVersion
	b[1] = class
	b[2] = 1 // ClassVersion of SM and PerfMgt
	b[3] = MethodGet
	if r.Method != 0 {
		b[3] = r.Method
	}
	binary.BigEndian.PutUint64(b[8:16], tid)
	binary.BigEndian.PutUint16(b[16:18], r.AttrID)
	binary.BigEndian.PutUint32(b[20:24], r.AttrMod)
	if class == ClassSubnDirected {
		if len(r.Route.Path) > maxHops {
			return nil, fmt.Errorf("directed route of %d hops is longer than %d", len(r.Route.Path), maxHops)
		}
		// Status: D bit 0 (outbound); HopPointer 0; HopCount.
		b[6] = 0
		b[7] = uint8(len(r.Route.Path))
		binary.BigEndian.PutUint16(b[32:34], permissiveLID) // DrSLID
		binary.BigEndian.PutUint16(b[34:36], permissiveLID) // DrDLID
		// InitialPath at 128; entry 0 is unused.
		copy(b[129:], r.Route.Path)
	}
	if len(r.Data) > MADSize-dataOffset {
		return nil, fmt.Errorf("request data of %d bytes does not fit", len(r.Data))
	}
	copy(b[dataOffset:], r.Data)
	return b, nil
}

// destination returns the DLID and QP the request MAD goes to: QP0 and
// the permissive LID for directed-route SMPs, QP0 for LID-routed SMPs,
// QP1 for GMPs.
func (r Request) destination() (lid uint16, qp uint32) {
	switch {
	case r.Class == ClassSubnLID && r.Route.Directed:
		return permissiveLID, 0
	case r.Class == ClassSubnLID:
		return r.Route.LID, 0
	}
	return r.Route.LID, 1
}

// checkResponse validates a response MAD against its request and returns
// its attribute data (from offset 64 to the end of the MAD).
func checkResponse(req Request, resp []byte) ([]byte, error) {
	if len(resp) < MADSize {
		return nil, fmt.Errorf("response: %w (%d bytes)", ErrShort, len(resp))
	}
	h, err := ParseHeader(resp)
	if err != nil {
		return nil, err
	}
	if h.Method != MethodGetResp {
		return nil, fmt.Errorf("response method 0x%02x, want GetResp", h.Method)
	}
	if h.AttrID != req.AttrID {
		return nil, fmt.Errorf("response attribute 0x%04x, want 0x%04x", h.AttrID, req.AttrID)
	}
	if h.Status != 0 {
		return nil, &StatusError{Code: h.Status, AttrID: h.AttrID}
	}
	return resp[dataOffset:], nil
}
