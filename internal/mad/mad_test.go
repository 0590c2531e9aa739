package mad

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// field is one field of an IBTA attribute layout: its byte offset in the
// attribute data, its width in bits (4 for the two nibbles of byte 19 of
// PortCounters, high nibble first) and the struct field it lands in.
type field struct {
	name string
	off  int
	bits int
	low  bool // for 4-bit fields: the low nibble
}

// layoutCase fills every field of a layout with a distinct value, parses
// the bytes and checks that each value arrives in its field.
func layoutCase(t *testing.T, size int, fields []field, parse func([]byte) (any, error)) {
	t.Helper()
	d := make([]byte, size)
	want := map[string]uint64{}
	for i, f := range fields {
		v := uint64(i+1) * 0x0101010101010101 // distinct per field, non-zero in every byte
		switch f.bits {
		case 4:
			v = uint64(i%15 + 1)
			if f.low {
				d[f.off] |= byte(v)
			} else {
				d[f.off] |= byte(v) << 4
			}
		case 8:
			v &= 0xff
			d[f.off] = byte(v)
		case 16:
			v &= 0xffff
			binary.BigEndian.PutUint16(d[f.off:], uint16(v))
		case 32:
			v &= 0xffffffff
			binary.BigEndian.PutUint32(d[f.off:], uint32(v))
		case 64:
			binary.BigEndian.PutUint64(d[f.off:], v)
		}
		want[f.name] = v
	}
	got, err := parse(d)
	if err != nil {
		t.Fatal(err)
	}
	rv := reflect.ValueOf(got)
	for _, f := range fields {
		if g := rv.FieldByName(f.name).Uint(); g != want[f.name] {
			t.Errorf("%s: got %#x, want %#x", f.name, g, want[f.name])
		}
	}
	if _, err := parse(d[:size-1]); !errors.Is(err, ErrShort) {
		t.Errorf("%d bytes: %v, want ErrShort", size-1, err)
	}
}

// TestLayouts checks the parsers against the attribute layouts of IBTA
// volume 1 (release 1.2.1+): PortCounters 16.1.3.5, PortCountersExtended
// 16.1.4.11, PortRcvErrorDetails 16.1.4.1, PortXmitDiscardDetails
// 16.1.4.2, ClassPortInfo 13.4.8.1, NodeInfo 14.2.5.3, PortInfo 14.2.5.6.
func TestLayouts(t *testing.T) {
	layoutCase(t, 44, []field{
		{"PortSelect", 1, 8, false}, {"CounterSelect", 2, 16, false},
		{"SymbolErrorCounter", 4, 16, false}, {"LinkErrorRecoveryCounter", 6, 8, false}, {"LinkDownedCounter", 7, 8, false},
		{"PortRcvErrors", 8, 16, false}, {"PortRcvRemotePhysicalErrors", 10, 16, false}, {"PortRcvSwitchRelayErrors", 12, 16, false},
		{"PortXmitDiscards", 14, 16, false}, {"PortXmitConstraintErrors", 16, 8, false}, {"PortRcvConstraintErrors", 17, 8, false},
		{"CounterSelect2", 18, 8, false}, {"LocalLinkIntegrityErrors", 19, 4, false}, {"ExcessiveBufferOverrunErrors", 19, 4, true},
		{"QP1Dropped", 20, 16, false}, {"VL15Dropped", 22, 16, false},
		{"PortXmitData", 24, 32, false}, {"PortRcvData", 28, 32, false}, {"PortXmitPkts", 32, 32, false}, {"PortRcvPkts", 36, 32, false},
		{"PortXmitWait", 40, 32, false},
	}, func(d []byte) (any, error) { return ParsePortCounters(d) })
	layoutCase(t, 72, []field{
		{"PortSelect", 1, 8, false}, {"CounterSelect", 2, 16, false},
		{"PortXmitData", 8, 64, false}, {"PortRcvData", 16, 64, false}, {"PortXmitPkts", 24, 64, false}, {"PortRcvPkts", 32, 64, false},
		{"PortUnicastXmitPkts", 40, 64, false}, {"PortUnicastRcvPkts", 48, 64, false},
		{"PortMulticastXmitPkts", 56, 64, false}, {"PortMulticastRcvPkts", 64, 64, false},
	}, func(d []byte) (any, error) { return ParsePortCountersExtended(d) })
	layoutCase(t, 16, []field{
		{"PortSelect", 1, 8, false}, {"CounterSelect", 2, 16, false},
		{"PortLocalPhysicalErrors", 4, 16, false}, {"PortMalformedPacketErrors", 6, 16, false}, {"PortBufferOverrunErrors", 8, 16, false},
		{"PortDLIDMappingErrors", 10, 16, false}, {"PortVLMappingErrors", 12, 16, false}, {"PortLoopingErrors", 14, 16, false},
	}, func(d []byte) (any, error) { return ParsePortRcvErrorDetails(d) })
	layoutCase(t, 12, []field{
		{"PortSelect", 1, 8, false}, {"CounterSelect", 2, 16, false},
		{"PortInactiveDiscards", 4, 16, false}, {"PortNeighborMTUDiscards", 6, 16, false},
		{"PortSwLifetimeLimitDiscards", 8, 16, false}, {"PortSwHOQLifetimeLimitDiscards", 10, 16, false},
	}, func(d []byte) (any, error) { return ParsePortXmitDiscardDetails(d) })
	layoutCase(t, 40, []field{
		{"BaseVersion", 0, 8, false}, {"ClassVersion", 1, 8, false}, {"NodeType", 2, 8, false}, {"NumPorts", 3, 8, false},
		{"SystemImageGUID", 4, 64, false}, {"NodeGUID", 12, 64, false}, {"PortGUID", 20, 64, false},
		{"PartitionCap", 28, 16, false}, {"DeviceID", 30, 16, false}, {"Revision", 32, 32, false}, {"LocalPortNum", 36, 8, false},
	}, func(d []byte) (any, error) { return ParseNodeInfo(d) })
	layoutCase(t, 36, []field{
		{"MKey", 0, 64, false}, {"GIDPrefix", 8, 64, false}, {"LID", 16, 16, false}, {"MasterSMLID", 18, 16, false},
		{"CapabilityMask", 20, 32, false}, {"LocalPortNum", 28, 8, false}, {"LinkWidthActive", 31, 8, false},
		{"PortState", 32, 4, true}, {"PhysState", 33, 4, false}, {"LinkSpeedActive", 35, 4, false},
	}, func(d []byte) (any, error) { return ParsePortInfo(d) })

	// The 24-bit VendorID of NodeInfo and the split word of ClassPortInfo.
	ni, _ := ParseNodeInfo(append(make([]byte, 37), 0x02, 0xc9, 0x03))
	if ni.VendorID != 0x02c903 {
		t.Errorf("VendorID %#x", ni.VendorID)
	}
	cpi, err := ParseClassPortInfo([]byte{1, 1, 0x13, 0x00, 0x00, 0x00, 0x02, 0x52})
	if err != nil || cpi.CapabilityMask != 0x1300 || cpi.CapabilityMask2 != 0x12 || cpi.RespTimeValue != 0x12 {
		t.Errorf("ClassPortInfo %+v %v", cpi, err)
	}
	if !cpi.HasXmitWait() || cpi.ExtendedCounters() != 8 || cpi.HasQP1Dropped() {
		t.Errorf("capabilities of 0x1300: %+v", cpi)
	}
	for mask, n := range map[uint16]int{0x1200: 8, 0x0400: 4, 0x0100: 0} {
		if got := (ClassPortInfo{CapabilityMask: mask}).ExtendedCounters(); got != n {
			t.Errorf("ExtendedCounters of %#x: %d, want %d", mask, got, n)
		}
	}
	desc, _ := ParseNodeDescription(append([]byte("leaf1 \x01HCA-1"), make([]byte, 64)...))
	if desc != "leaf1 ?HCA-1" {
		t.Errorf("NodeDescription %q", desc)
	}
}

// TestEncodeGolden compares encoded requests with testdata/requests.golden
// (rewrite with -update).
func TestEncodeGolden(t *testing.T) {
	cases := []struct {
		name string
		req  Request
	}{
		{"PortCounters lid 2 port 35", Request{Class: ClassPerf, AttrID: AttrPortCounters, Route: LIDRoute(2), Data: perfData(35)}},
		{"ClassPortInfo lid 4", Request{Class: ClassPerf, AttrID: AttrClassPortInfo, Route: LIDRoute(4)}},
		{"NodeInfo DR 0,1", Request{Class: ClassSubnLID, AttrID: AttrNodeInfo, Route: DirectedRoute(1)}},
		{"PortInfo DR 0,1,35 port 0", Request{Class: ClassSubnLID, AttrID: AttrPortInfo, AttrMod: 0, Route: DirectedRoute(1, 35)}},
		{"PortInfo lid 2 port 3", Request{Class: ClassSubnLID, AttrID: AttrPortInfo, AttrMod: 3, Route: LIDRoute(2)}},
		// perfquery -R sends the same Set with every select bit.
		{"reset SymbolErrorCounter, LinkErrorRecoveryCounter and PortXmitWait of lid 2 port 35",
			Request{Class: ClassPerf, Method: MethodSet, AttrID: AttrPortCounters, Route: LIDRoute(2), Data: resetData(35, SelSymbolError|SelLinkErrorRecovery|SelXmitWait)}},
	}
	var b strings.Builder
	for _, tc := range cases {
		m, err := tc.req.Encode(0x1122334455667788)
		if err != nil {
			t.Fatal(err)
		}
		lid, qp := tc.req.destination()
		b.WriteString("# " + tc.name + " -> " + tc.req.Route.String() + "\n")
		b.WriteString("# sent to LID " + hex.EncodeToString([]byte{byte(lid >> 8), byte(lid)}) + " QP" + string(rune('0'+qp)) + "\n")
		b.WriteString(hex.Dump(trimZeros(m)))
	}
	path := filepath.Join("testdata", "requests.golden")
	if *update {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Errorf("encoded requests differ from %s (run with -update after checking):\n%s", path, b.String())
	}
	if _, err := (Request{Class: ClassPerf, Route: DirectedRoute(1)}).Encode(1); err == nil {
		t.Error("a directed-route PerfMgt request was encoded")
	}
	if _, err := (Request{Class: ClassSubnLID, Route: DirectedRoute(make([]uint8, 64)...)}).Encode(1); err == nil {
		t.Error("a 64-hop directed route was encoded")
	}
}

// trimZeros drops the trailing zero bytes of a MAD, rounded up to 16, so
// the golden file stays short.
func trimZeros(b []byte) []byte {
	n := len(b)
	for n > 0 && b[n-1] == 0 {
		n--
	}
	return b[:min(len(b), (n+15)/16*16)]
}

// TestCheckResponse covers the response checks: method, attribute and
// status, with the direction bit of a directed-route SMP ignored.
func TestCheckResponse(t *testing.T) {
	req := Request{Class: ClassSubnLID, AttrID: AttrNodeInfo, Route: DirectedRoute(1)}
	resp, _ := req.Encode(5)
	resp[3] = MethodGetResp
	resp[4] = 0x80 // D bit: inbound
	if _, err := checkResponse(req, resp); err != nil {
		t.Errorf("DR response with the D bit: %v", err)
	}
	resp[5] = 0x1c
	var serr *StatusError
	if _, err := checkResponse(req, resp); !errors.As(err, &serr) || serr.Code != 0x1c || serr.Unsupported() {
		t.Errorf("status 0x1c: %v", err)
	}
	resp[5] = 0x0c
	if _, err := checkResponse(req, resp); !errors.As(err, &serr) || !serr.Unsupported() {
		t.Errorf("status 0x0c: %v, want unsupported", err)
	}
	resp[5] = 0
	resp[3] = MethodGet
	if _, err := checkResponse(req, resp); err == nil {
		t.Error("a Get was taken for a response")
	}
	resp[3] = MethodGetResp
	binary.BigEndian.PutUint16(resp[16:18], AttrPortInfo)
	if _, err := checkResponse(req, resp); err == nil {
		t.Error("a response for another attribute was accepted")
	}
	if _, err := checkResponse(req, resp[:100]); !errors.Is(err, ErrShort) {
		t.Errorf("short response: %v", err)
	}
}

// FuzzParse feeds arbitrary bytes to every parser of bytes a fabric
// sends: none may panic, and parsed 4-bit fields stay within 4 bits.
func FuzzParse(f *testing.F) {
	req, _ := Request{Class: ClassPerf, AttrID: AttrPortCounters, Route: LIDRoute(2), Data: perfData(1)}.Encode(1)
	f.Add(req)
	f.Add(make([]byte, 64))
	f.Add([]byte{1, 0x81, 1, 0x81, 0x80, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = ParseHeader(b)
		_, _ = checkResponse(Request{AttrID: AttrPortCounters}, b)
		if pc, err := ParsePortCounters(b); err == nil && (pc.LocalLinkIntegrityErrors > 15 || pc.ExcessiveBufferOverrunErrors > 15) {
			t.Errorf("4-bit fields out of range: %+v", pc)
		}
		_, _ = ParsePortCountersExtended(b)
		_, _ = ParsePortRcvErrorDetails(b)
		_, _ = ParsePortXmitDiscardDetails(b)
		_, _ = ParseClassPortInfo(b)
		_, _ = ParseNodeInfo(b)
		if pi, err := ParsePortInfo(b); err == nil && (pi.PortState > 15 || pi.PhysState > 15) {
			t.Errorf("4-bit fields out of range: %+v", pi)
		}
		if s, err := ParseNodeDescription(b); err == nil {
			for _, r := range s {
				if r < 0x20 || r > 0x7e {
					t.Errorf("unprintable %q in %q", r, s)
				}
			}
		}
	})
}
