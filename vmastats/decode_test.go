package vmastats_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nic-exporter/nic_exporter/internal/testenv"
	"github.com/nic-exporter/nic_exporter/vmastats"
	"github.com/nic-exporter/nic_exporter/vmastats/vmastatstest"
)

func TestFileSizeKnownValues(t *testing.T) {
	// Sizes seen from the real library with VMA_STATS_FD_NUM=100.
	if got := vmastats.FileSize(vmastats.LayoutB, 100); got != 46816 {
		t.Errorf("layout B, 100 sockets: %d, want 46816", got)
	}
	if got := vmastats.FileSize(vmastats.LayoutA, 100); got != 46008 {
		t.Errorf("layout A, 100 sockets: %d, want 46008", got)
	}
}

func TestParseRejects(t *testing.T) {
	good, err := vmastatstest.Encode(vmastatstest.Sample(vmastats.LayoutB))
	if err != nil {
		t.Fatal(err)
	}
	// md5 and sockets return a copy of good with one header field changed.
	md5 := func(v string) []byte {
		b := append([]byte(nil), good...)
		copy(b[vmastats.OffsetProtocolVer:], v)
		return b
	}
	sockets := func(n uint64) []byte {
		b := append([]byte(nil), good...)
		binary.LittleEndian.PutUint64(b[vmastats.OffsetMaxSockets:], n)
		return b
	}
	for _, tc := range []struct {
		name string
		in   []byte
		want error
		msg  string
	}{
		{"empty", nil, vmastats.ErrMalformed, "header alone"},
		{"short header", good[:vmastats.HeaderSize-1], vmastats.ErrMalformed, "header alone"},
		{"truncated", good[:len(good)-1], vmastats.ErrUnsupported, "writes"},
		{"extended", append(append([]byte(nil), good...), 0), vmastats.ErrUnsupported, "writes"},
		{"unknown md5", md5("0123456789abcdef0123456789abcdef"), vmastats.ErrUnsupported, `libvma 9.8.84.0 with stats_protocol_ver "0123456789abcdef0123456789abcdef"`},
		{"pre-A md5", md5("1540a317441ac15aafa764c00ce01b8e"), vmastats.ErrUnsupported, "not a known layout"},
		{"control chars in md5", md5("\x1b[31m"), vmastats.ErrUnsupported, `"?[31m`},
		{"too many sockets", sockets(1 << 40), vmastats.ErrMalformed, "exceeds"},
		{"socket count mismatch", sockets(9), vmastats.ErrUnsupported, "9 sockets"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := vmastats.Parse(tc.in)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %v, want %v containing %q", err, tc.want, tc.msg)
			}
		})
	}
}

func TestDisabledBlocksAreSkipped(t *testing.T) {
	b, err := vmastatstest.Encode(vmastatstest.Sample(vmastats.LayoutB))
	if err != nil {
		t.Fatal(err)
	}
	stride := vmastats.LayoutB.SocketStride()
	b[vmastats.OffsetSockets+5*stride] = 0 // close the TCP socket; its data stays
	b[vmastats.OffsetRings] = 0
	b[vmastats.OffsetCQs+vmastats.CQSize] = 0
	s, err := vmastats.Parse(b)
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
	got, err := vmastats.Discover([]string{d1, filepath.Join(d1, "missing"), d2})
	if err != nil {
		t.Fatal(err)
	}
	want := []vmastats.Candidate{{filepath.Join(d1, "vmastat.3"), 3}, {filepath.Join(d1, "vmastat.12"), 12}, {filepath.Join(d2, "vmastat.7"), 7}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if _, err := vmastats.Discover([]string{filepath.Join(d1, "missing")}); !errors.Is(err, vmastats.ErrNoDir) {
		t.Errorf("missing directory: %v, want ErrNoDir", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, l := range []vmastats.Layout{vmastats.LayoutA, vmastats.LayoutB} {
		b, err := vmastatstest.Encode(vmastatstest.Sample(l))
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
		s, err := vmastats.Parse(b)
		if err != nil {
			if s != nil {
				t.Fatal("stats returned with an error")
			}
			return
		}
		if len(s.Sockets) > int(s.MaxSockets) || len(s.CQs) > vmastats.NumCQs || len(s.Rings) > vmastats.NumRings || len(s.Multicast.Groups) > vmastats.MaxMCGroups {
			t.Fatalf("counts out of bounds: %d sockets of %d", len(s.Sockets), s.MaxSockets)
		}
		// Whatever decoded must encode to a file that decodes the same.
		enc, err := vmastatstest.Encode(s)
		if err != nil {
			t.Fatalf("re-encoding a decoded file: %v", err)
		}
		s2, err := vmastats.Parse(enc)
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
	s := vmastatstest.Sample(vmastats.LayoutB)
	s.MaxSockets = 100
	for i := 0; i < 100; i += 2 {
		k := s.Sockets[0]
		k.Slot, k.FD = i, int32(100+i)
		s.Sockets = append(s.Sockets, k)
	}
	s.Sockets = s.Sockets[2:]
	data, err := vmastatstest.Encode(s)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := vmastats.Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDiscoverFIFODir gives Discover a FIFO with no writer in place of a
// statistics directory: the listing fails at once instead of blocking
// (as it did with os.ReadDir, which also opens with O_DIRECTORY).
func TestDiscoverFIFODir(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "stats")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := vmastats.Discover([]string{fifo})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, syscall.ENOTDIR) {
			t.Errorf("Discover(FIFO) = %v, want ENOTDIR", err)
		}
	case <-time.After(testenv.HangGuard):
		t.Fatal("Discover blocked on the FIFO")
	}
}
