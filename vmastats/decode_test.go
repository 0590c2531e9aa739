package vmastats

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestEncodeDecodeRoundTrip(t *testing.T) {
	for _, l := range []Layout{LayoutA, LayoutB} {
		t.Run(l.String(), func(t *testing.T) {
			want := testStats(l)
			b, err := Encode(want)
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(b)) != FileSize(l, 8) {
				t.Fatalf("size %d, want %d", len(b), FileSize(l, 8))
			}
			got, err := Parse(b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("round trip differs:\ngot  %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestFileSizeKnownValues(t *testing.T) {
	// Sizes seen from the real library with VMA_STATS_FD_NUM=100.
	if got := FileSize(LayoutB, 100); got != 46816 {
		t.Errorf("layout B, 100 sockets: %d, want 46816", got)
	}
	if got := FileSize(LayoutA, 100); got != 46008 {
		t.Errorf("layout A, 100 sockets: %d, want 46008", got)
	}
}

func TestParseRejects(t *testing.T) {
	good, err := Encode(testStats(LayoutB))
	if err != nil {
		t.Fatal(err)
	}
	mutate := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	for _, tc := range []struct {
		name string
		in   []byte
		want error
		msg  string
	}{
		{"empty", nil, ErrMalformed, "header alone"},
		{"short header", good[:HeaderSize-1], ErrMalformed, "header alone"},
		{"truncated", good[:len(good)-1], ErrUnsupported, "writes"},
		{"extended", append(append([]byte(nil), good...), 0), ErrUnsupported, "writes"},
		{"unknown md5", mutate(func(b []byte) []byte { copy(b[offProtocolVer:], "0123456789abcdef0123456789abcdef"); return b }), ErrUnsupported, `libvma 9.8.84.0 with stats_protocol_ver "0123456789abcdef0123456789abcdef"`},
		{"pre-A md5", mutate(func(b []byte) []byte { copy(b[offProtocolVer:], "1540a317441ac15aafa764c00ce01b8e"); return b }), ErrUnsupported, "not a known layout"},
		{"control chars in md5", mutate(func(b []byte) []byte { copy(b[offProtocolVer:], "\x1b[31m"); return b }), ErrUnsupported, `"?[31m`},
		{"too many sockets", mutate(func(b []byte) []byte { le.PutUint64(b[offMaxSockets:], 1<<40); return b }), ErrMalformed, "exceeds"},
		{"socket count mismatch", mutate(func(b []byte) []byte { le.PutUint64(b[offMaxSockets:], 9); return b }), ErrUnsupported, "9 sockets"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.in)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %v, want %v containing %q", err, tc.want, tc.msg)
			}
		})
	}
}

func TestRingTypeEnums(t *testing.T) {
	for _, tc := range []struct {
		e    RingEnum
		raw  int32
		want RingType
	}{
		{RingEnumOld, 0, RingETH}, {RingEnumOld, 1, RingETHCB}, {RingEnumOld, 2, RingETHDirect}, {RingEnumOld, 3, RingTAP}, {RingEnumOld, 4, RingIB},
		{RingEnumNew, 0, RingETH}, {RingEnumNew, 1, RingETHDirect}, {RingEnumNew, 2, RingTAP}, {RingEnumNew, 3, RingIB},
		{RingEnumNew, 4, RingUnknown}, {RingEnumOld, -1, RingUnknown}, {RingEnumOld, 99, RingUnknown},
	} {
		if got := ringType(tc.e, tc.raw); got != tc.want {
			t.Errorf("ringType(%d, %d) = %v, want %v", tc.e, tc.raw, got, tc.want)
		}
	}
}

func TestDisabledBlocksAreSkipped(t *testing.T) {
	b, err := Encode(testStats(LayoutB))
	if err != nil {
		t.Fatal(err)
	}
	stride := LayoutB.SocketStride()
	b[offSockets+5*stride] = 0 // close the TCP socket; its data stays
	b[offRing] = 0
	b[offCQ+sizeCQ] = 0
	s, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Sockets) != 1 || s.Sockets[0].Slot != 0 || len(s.Rings) != 1 || s.Rings[0].Index != 3 || len(s.CQs) != 0 {
		t.Errorf("disabled blocks decoded: %d sockets, %d rings, %d CQs", len(s.Sockets), len(s.Rings), len(s.CQs))
	}
}

func TestDiscover(t *testing.T) {
	d1, d2 := t.TempDir(), t.TempDir()
	for _, n := range []string{"vmastat.12", "vmastat.3", "vmastat.", "vmastat.012", "vmastat.1x", "xliostat.5", "vmastat.99999999999"} {
		if err := os.WriteFile(filepath.Join(d1, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(d2, "vmastat.7"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Discover([]string{d1, filepath.Join(d1, "missing"), d2})
	if err != nil {
		t.Fatal(err)
	}
	want := []Candidate{{filepath.Join(d1, "vmastat.3"), 3}, {filepath.Join(d1, "vmastat.12"), 12}, {filepath.Join(d2, "vmastat.7"), 7}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if _, err := Discover([]string{filepath.Join(d1, "missing")}); !errors.Is(err, ErrNoDir) {
		t.Errorf("missing directory: %v, want ErrNoDir", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, l := range []Layout{LayoutA, LayoutB} {
		b, err := Encode(testStats(l))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	// The golden files written through libvma's own headers.
	for _, g := range goldenFiles {
		b, err := os.ReadFile(filepath.Join(goldenDir, g.bin+".bin"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Parse(b)
		if err != nil {
			if s != nil {
				t.Fatal("stats returned with an error")
			}
			return
		}
		if len(s.Sockets) > int(s.MaxSockets) || len(s.CQs) > numCQ || len(s.Rings) > numRing || len(s.Multicast.Groups) > maxMCGroups {
			t.Fatalf("counts out of bounds: %d sockets of %d", len(s.Sockets), s.MaxSockets)
		}
		// Whatever decoded must encode to a file that decodes the same.
		enc, err := Encode(s)
		if err != nil {
			t.Fatalf("re-encoding a decoded file: %v", err)
		}
		s2, err := Parse(enc)
		if err != nil {
			t.Fatal(err)
		}
		s2.ReaderCounter = s.ReaderCounter
		if !reflect.DeepEqual(s, s2) {
			t.Fatalf("re-encoded file decodes differently")
		}
		if !bytes.Equal(enc[:4], []byte{0, 0, 0, 0}) {
			t.Fatal("encoder wrote the reader counter")
		}
	})
}

func BenchmarkParse(b *testing.B) {
	s := testStats(LayoutB)
	s.MaxSockets = 100
	for i := 0; i < 100; i += 2 {
		k := s.Sockets[0]
		k.Slot, k.FD = i, int32(100+i)
		s.Sockets = append(s.Sockets, k)
	}
	s.Sockets = s.Sockets[2:]
	data, err := Encode(s)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}
