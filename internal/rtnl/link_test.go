package rtnl

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mdlayher/netlink"
)

// ifinfomsg builds struct ifinfomsg for index and flags followed by attrs.
func ifinfomsg(t *testing.T, index int32, flags uint32, attrs ...netlink.Attribute) []byte {
	t.Helper()
	b := make([]byte, sizeofIfInfomsg)
	binary.NativeEndian.PutUint32(b[4:], uint32(index))
	binary.NativeEndian.PutUint32(b[8:], flags)
	if len(attrs) == 0 {
		return b
	}
	a, err := netlink.MarshalAttributes(attrs)
	if err != nil {
		t.Fatal(err)
	}
	return append(b, a...)
}

func u32b(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }

// stats64 builds an IFLA_STATS64 payload of n fields, field i = i+1.
func stats64(n int) []byte {
	var b []byte
	for i := range n {
		b = binary.NativeEndian.AppendUint64(b, uint64(i+1))
	}
	return b
}

func wantStats(n int) (s [NumStats]uint64) {
	for i := range min(n, NumStats) {
		s[i] = uint64(i + 1)
	}
	return s
}

func TestParseLink(t *testing.T) {
	tests := []struct {
		name    string
		msg     func(t *testing.T) []byte
		want    Link
		wantErr error
	}{{
		name: "bare ifinfomsg",
		msg:  func(t *testing.T) []byte { return ifinfomsg(t, 7, iffUp) },
		want: Link{Index: 7, Flags: iffUp},
	}, {
		name: "all attributes, stats of Linux 5.19 and later",
		msg: func(t *testing.T) []byte {
			return ifinfomsg(t, 2, iffUp|iffRunning,
				netlink.Attribute{Type: iflaIfname, Data: []byte("eth0\x00")},
				netlink.Attribute{Type: iflaAddress, Data: []byte{0xfc, 0x4c, 0xea, 0xf9, 0x42, 0x35}},
				netlink.Attribute{Type: iflaParentDevName, Data: []byte("0000:08:00.1\x00")},
				netlink.Attribute{Type: iflaParentDevBusName, Data: []byte("pci\x00")},
				netlink.Attribute{Type: iflaOperstate, Data: []byte{6}},
				netlink.Attribute{Type: iflaMTU, Data: u32b(9000)},
				netlink.Attribute{Type: iflaCarrier, Data: []byte{1}},
				netlink.Attribute{Type: iflaCarrierChanges, Data: u32b(5)},
				netlink.Attribute{Type: iflaCarrierUpCount, Data: u32b(3)},
				netlink.Attribute{Type: iflaCarrierDownCount, Data: u32b(2)},
				netlink.Attribute{Type: iflaStats64, Data: stats64(25)},
			)
		},
		want: Link{Index: 2, Name: "eth0", Flags: iffUp | iffRunning,
			Address:   []byte{0xfc, 0x4c, 0xea, 0xf9, 0x42, 0x35},
			ParentDev: "0000:08:00.1", ParentBus: "pci",
			HasOperState: true, OperState: 6, HasMTU: true, MTU: 9000,
			HasCarrier: true, Carrier: true, HasCarrierChanges: true, CarrierChanges: 5,
			HasCarrierUpDown: true, CarrierUp: 3, CarrierDown: 2,
			NStats: 25, Stats: wantStats(25)},
	}, {
		name: "stats before rx_nohandler (Linux 4.5)",
		msg: func(t *testing.T) []byte {
			return ifinfomsg(t, 3, 0, netlink.Attribute{Type: iflaStats64, Data: stats64(23)})
		},
		want: Link{Index: 3, NStats: 23, Stats: wantStats(23)},
	}, {
		name: "stats before rx_otherhost_dropped (Linux 4.6 to 5.18)",
		msg: func(t *testing.T) []byte {
			return ifinfomsg(t, 3, 0, netlink.Attribute{Type: iflaStats64, Data: stats64(24)})
		},
		want: Link{Index: 3, NStats: 24, Stats: wantStats(24)},
	}, {
		name: "a future kernel's longer stats",
		msg: func(t *testing.T) []byte {
			return ifinfomsg(t, 3, 0, netlink.Attribute{Type: iflaStats64, Data: stats64(27)})
		},
		want: Link{Index: 3, NStats: 25, Stats: wantStats(25)},
	}, {
		name: "carrier up without down count",
		msg: func(t *testing.T) []byte {
			return ifinfomsg(t, 4, 0, netlink.Attribute{Type: iflaCarrierUpCount, Data: u32b(3)})
		},
		want: Link{Index: 4, CarrierUp: 3},
	}, {
		name: "short u32 and empty u8 attributes are absent",
		msg: func(t *testing.T) []byte {
			return ifinfomsg(t, 5, 0,
				netlink.Attribute{Type: iflaMTU, Data: []byte{1, 2}},
				netlink.Attribute{Type: iflaOperstate, Data: nil},
				netlink.Attribute{Type: iflaCarrier, Data: nil})
		},
		want: Link{Index: 5},
	}, {
		name: "stats shorter than the oldest struct",
		msg: func(t *testing.T) []byte {
			return ifinfomsg(t, 6, 0, netlink.Attribute{Type: iflaStats64, Data: stats64(22)})
		},
		want:    Link{Index: 6},
		wantErr: ErrTruncated,
	}, {
		name:    "short ifinfomsg",
		msg:     func(t *testing.T) []byte { return make([]byte, sizeofIfInfomsg-1) },
		wantErr: ErrTruncated,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseLink(tt.msg(t))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("ParseLink (-want +got):\n%s", d)
			}
		})
	}
}

func TestParseLinkBadAttribute(t *testing.T) {
	b := ifinfomsg(t, 1, 0, netlink.Attribute{Type: iflaIfname, Data: []byte("lo\x00")})
	// An attribute header whose length runs past the message.
	b = append(b, 0xff, 0x00, byte(iflaMTU), 0x00)
	if _, err := ParseLink(b); err == nil {
		t.Fatal("ParseLink accepted an attribute longer than the message")
	}
}

// captured returns the RTM_NEWLINK payloads captured from a real kernel
// into testdata/dump (see TestCapture).
func captured(t testing.TB) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "dump", "*.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no captured dump in testdata/dump; run go test ./internal/rtnl -run TestCapture -capture")
	}
	out := make(map[string][]byte)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = b
	}
	return out
}

// TestParseCaptured decodes the captured dump and checks the values that
// TestCapture's namespace fixes.
func TestParseCaptured(t *testing.T) {
	msgs := captured(t)
	links := make(map[string]Link)
	for file, b := range msgs {
		l, err := ParseLink(b)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		links[l.Name] = l
	}
	lo, ok := links["lo"]
	if !ok || lo.Index != 1 || !lo.HasMTU || lo.MTU != 65536 || lo.Flags&iffUp == 0 {
		t.Errorf("lo = %+v, want index 1, MTU 65536, up", lo)
	}
	if lo.NStats < minStats || lo.Stats[0] == 0 || lo.Stats[0] != lo.Stats[1] {
		t.Errorf("lo statistics %v (%d fields): want equal nonzero rx and tx packets", lo.Stats, lo.NStats)
	}
	va, ok := links["va"]
	if !ok || !va.HasMTU || va.MTU != 1400 || !va.HasCarrier || !va.Carrier || !va.HasOperState || va.OperState != OperUp {
		t.Errorf("va = %+v, want MTU 1400, carrier, operstate up", va)
	}
}

func FuzzParseLink(f *testing.F) {
	for _, b := range captured(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := ParseLink(b)
		if err != nil {
			return
		}
		if l.NStats != 0 && (l.NStats < minStats || l.NStats > NumStats) {
			t.Fatalf("NStats %d out of range", l.NStats)
		}
	})
}
