package vmastatstest

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/nic-exporter/nic_exporter/vmastats"
)

func TestEncodeDecodeRoundTrip(t *testing.T) {
	for _, l := range []vmastats.Layout{vmastats.LayoutA, vmastats.LayoutB} {
		t.Run(l.String(), func(t *testing.T) {
			want := Sample(l)
			b, err := Encode(want)
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(b)) != vmastats.FileSize(l, 8) {
				t.Fatalf("size %d, want %d", len(b), vmastats.FileSize(l, 8))
			}
			got, err := vmastats.Parse(b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("round trip differs:\ngot  %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestEncodeRejects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(s *vmastats.Stats)
		msg    string
	}{
		{"unknown layout", func(s *vmastats.Stats) { s.Layout = vmastats.LayoutUnknown }, "unknown layout"},
		{"short md5", func(s *vmastats.Stats) { s.ProtocolVer = "abc" }, "not 32 characters"},
		{"too many sockets", func(s *vmastats.Stats) { s.MaxSockets = vmastats.MaxSockets + 1 }, "sockets exceed"},
		{"CQ index", func(s *vmastats.Stats) { s.CQs[0].Index = vmastats.NumCQs }, "CQ index 16 out of range"},
		{"ring index", func(s *vmastats.Stats) { s.Rings[0].Index = -1 }, "ring index -1 out of range"},
		{"ring type of another version", func(s *vmastats.Stats) { s.Rings[0].Type = vmastats.RingETHCB }, "does not exist in this version"},
		{"buffer pool index", func(s *vmastats.Stats) { s.BufferPools[0].Index = vmastats.NumBufferPools }, "buffer pool index"},
		{"multicast IPv6", func(s *vmastats.Stats) { s.Multicast.Groups[0].Group = netip.MustParseAddr("ff02::1") }, "multicast entry 0 (ff02::1) invalid"},
		{"epoll index", func(s *vmastats.Stats) { s.Iomux.Epoll[0].Index = vmastats.NumEpolls }, "epoll index"},
		{"socket slot", func(s *vmastats.Stats) { s.Sockets[1].Slot = 8 }, "socket slot 8 out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Sample(vmastats.LayoutB)
			tc.change(s)
			_, err := Encode(s)
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %v, want one containing %q", err, tc.msg)
			}
		})
	}
}

func TestEncodeIntoKeepsReaderCounter(t *testing.T) {
	s := Sample(vmastats.LayoutA)
	b, err := Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	b[0], b[1] = 7, 1 // a reader counter of 263
	s.Sockets[0].Counters[vmastats.RxPackets] = 99
	if err := EncodeInto(b, s); err != nil {
		t.Fatal(err)
	}
	got, err := vmastats.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.ReaderCounter != 263 || got.Sockets[0].Counters[vmastats.RxPackets] != 99 {
		t.Errorf("reader counter %d, rx packets %d; want 263 and 99", got.ReaderCounter, got.Sockets[0].Counters[vmastats.RxPackets])
	}
	if err := EncodeInto(b[:len(b)-1], s); err == nil || !strings.Contains(err.Error(), "needs") {
		t.Errorf("short buffer: %v", err)
	}
}
