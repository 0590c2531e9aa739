package xliostats

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// withSize returns a copy of b grown or cut to n bytes.
func withSize(b []byte, n int) []byte {
	out := make([]byte, n)
	copy(out, b)
	return out
}

// TestIdentifyUTLSSwitch builds files of the same protocol string in both
// build variants: the size equation alone tells them apart, and the
// variant changes where max_skt_inst_num and the sockets are.
func TestIdentifyUTLSSwitch(t *testing.T) {
	for _, g := range goldenTags {
		t.Run(g.tag, func(t *testing.T) {
			real := readGolden(t, g.tag, "xliostat-nodevice.bin")
			h, err := Identify(real)
			if err != nil {
				t.Fatal(err)
			}
			layouts := allLayouts(t)
			other := layouts[h.Known.Layout][0]
			if !h.Layout.UTLS {
				other = layouts[h.Known.Layout][1]
			}
			// The header fields before the socket count keep their
			// offsets in both variants before 3.60 (only blocks after the
			// rings move) and from 3.60 (only the socket block changes).
			b := withSize(real, int(other.FileSize(3)))
			for _, l := range layouts[h.Known.Layout] {
				binary.LittleEndian.PutUint64(b[l.MaxSocketsOffset():], 0)
			}
			copy(b[other.ProtocolOffset():], h.ProtocolVer)
			binary.LittleEndian.PutUint64(b[other.MaxSocketsOffset():], 3)
			s, err := Parse(b)
			if err != nil {
				t.Fatal(err)
			}
			if s.Layout != other || s.MaxSockets != 3 || s.Version() != h.Version() {
				t.Errorf("decoded as %s with %d sockets, want the other variant with 3", s.LayoutName(), s.MaxSockets)
			}
		})
	}
}

func TestIdentifyRefuses(t *testing.T) {
	f4 := readGolden(t, "3.21.2", "xliostat.bin")
	g2 := readGolden(t, "3.70.2", "xliostat.bin")
	edit := func(b []byte, f func([]byte) []byte) []byte { return f(append([]byte(nil), b...)) }
	for _, tc := range []struct {
		name string
		b    []byte
		want error
		text string
	}{
		{"short", f4[:100], ErrMalformed, "less than any libxlio layout"},
		{"huge", make([]byte, MaxSize+1), ErrUnsupported, "more than any libxlio layout"},
		{"zeros", make([]byte, len(f4)), ErrUnsupported, "no protocol string at any known offset [8 12 40200 41224]"},
		{"unknown md5", edit(f4, func(b []byte) []byte { copy(b[8:], "0123456789abcdef0123456789abcdef"); return b }), ErrUnsupported, "unknown protocol 0123456789abcdef0123456789abcdef at 8"},
		{"unknown md5 at the end", edit(g2, func(b []byte) []byte { copy(b[41224:], "fedcba9876543210fedcba9876543210"); return b }), ErrUnsupported, "unknown protocol fedcba9876543210fedcba9876543210 at 41224"},
		{"never extracted", edit(f4, func(b []byte) []byte { copy(b[8:], "3f7df2aca501e1138b3880e5da44f5f6"); return b }), ErrUnsupported, "3.941.0) is known, but its layout was never extracted"},
		{"md5 at the wrong offset", edit(f4, func(b []byte) []byte { copy(b[8:], "8acf4c5e11413c1da2c7f27b2ec26476"); return b }), ErrUnsupported, "no protocol string"},
		{"one byte more", append(append([]byte(nil), f4...), 0), ErrUnsupported, "42185 bytes fit neither UTLS variant of layout F4 (38472+8×464 or 38656+"},
		{"socket count", edit(f4, func(b []byte) []byte { b[38000] = 9; return b }), ErrUnsupported, "fit neither UTLS variant"},
		{"socket count too high", edit(g2, func(b []byte) []byte { binary.LittleEndian.PutUint64(b[41216:], 1<<40); return b }), ErrUnsupported, "fit neither UTLS variant of layout G2"},
		{"ver_info", edit(f4, func(b []byte) []byte { b[5] = 50; return b }), ErrUnsupported, "ver_info says libxlio 3.50.2.0, but protocol 1929842874382ab6a55c2dad12db9f3f is written by 3.21.2, 3.30.0-3.30.2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.b)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
				t.Errorf("got %v, want %v containing %q", err, tc.want, tc.text)
			}
		})
	}
}

// TestParseHostileBytes fills every block of a valid file with 0xff: all
// flags set, every count at its maximum. Decoding must stay in bounds.
func TestParseHostileBytes(t *testing.T) {
	for _, g := range goldenTags {
		b := readGolden(t, g.tag, "xliostat.bin")
		h, err := Identify(b)
		if err != nil {
			t.Fatal(err)
		}
		keep := map[int]bool{}
		for _, name := range []string{"stats_protocol_ver", "max_skt_inst_num", "ver_info.xlio_lib_maj", "ver_info.xlio_lib_min"} {
			f := h.Layout.header[name]
			for i := f.off; i < f.off+f.size; i++ {
				keep[i] = true
			}
		}
		for i := range b {
			if !keep[i] {
				b[i] = 0xff
			}
		}
		s, err := Parse(b)
		if err != nil {
			t.Fatalf("%s: %v", g.tag, err)
		}
		if len(s.Sockets) != 8 || len(s.CQs) != 16 || len(s.Groups) != 1024 {
			t.Errorf("%s: %d sockets, %d CQs, %d groups", g.tag, len(s.Sockets), len(s.CQs), len(s.Groups))
		}
	}
}

// FuzzParse feeds arbitrary bytes, seeded with the golden files and
// mutations of them, to Parse: it must never panic, and what it accepts
// must satisfy the size equation of the layout it chose. Every input
// worth decoding is at least 38 KB, so the fuzzer spends its time
// minimizing unless told not to:
//
//	go test -run XXX -fuzz FuzzParse -fuzztime 90s -fuzzminimizetime 1x ./xliostats
//
// (737,101 executions and 83 new interesting inputs in 90 s on 2 workers
// here, no failure.)
func FuzzParse(f *testing.F) {
	for _, g := range goldenTags {
		for _, name := range []string{"xliostat.bin", "xliostat-nodevice.bin"} {
			b, err := os.ReadFile(filepath.Join("testdata", "golden", g.tag, name))
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Parse(b)
		if err != nil {
			if !errors.Is(err, ErrUnsupported) && !errors.Is(err, ErrMalformed) {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		if int64(len(b)) != s.Layout.FileSize(int(s.MaxSockets)) {
			t.Fatalf("accepted %d bytes as %s with %d sockets", len(b), s.LayoutName(), s.MaxSockets)
		}
		for _, k := range s.Sockets {
			if k.Slot >= int(s.MaxSockets) {
				t.Fatalf("socket in slot %d of %d", k.Slot, s.MaxSockets)
			}
		}
	})
}
