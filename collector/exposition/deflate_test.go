package exposition

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"testing"
)

func TestCRC32Combine(t *testing.T) {
	tests := []struct{ a, b string }{
		{"", ""}, {"a", ""}, {"", "b"}, {"hello ", "world"},
		{string(bytes.Repeat([]byte("x"), 1000)), string(bytes.Repeat([]byte("yz"), 4097))},
	}
	for _, tt := range tests {
		want := crc32.ChecksumIEEE([]byte(tt.a + tt.b))
		got := CRC32Combine(crc32.ChecksumIEEE([]byte(tt.a)), crc32.ChecksumIEEE([]byte(tt.b)), len(tt.b))
		if got != want {
			t.Errorf("CRC32Combine(%d+%d bytes) = %08x, want %08x", len(tt.a), len(tt.b), got, want)
		}
	}
}

func FuzzCRC32Combine(f *testing.F) {
	f.Add([]byte("abc"), []byte("def"))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		want := crc32.ChecksumIEEE(append(append([]byte{}, a...), b...))
		if got := CRC32Combine(crc32.ChecksumIEEE(a), crc32.ChecksumIEEE(b), len(b)); got != want {
			t.Fatalf("got %08x, want %08x", got, want)
		}
	})
}

// TestDeflatedSegmentsConcatenate builds a gzip member out of the cached
// segments of two snapshots plus a freshly compressed tail, as the scrape
// handler does, and checks that the standard reader accepts it.
func TestDeflatedSegmentsConcatenate(t *testing.T) {
	d := MustNewDesc("nic_test_bytes_total", "Bytes.", Counter, "device", "queue")
	var snaps []*Snapshot
	var want bytes.Buffer
	for i := 0; i < 2; i++ {
		b := NewBuilder()
		for q := 0; q < 500; q++ {
			b.Add(d, float64(q*q+i), fmt.Sprint("eth", i), fmt.Sprint(q))
		}
		s := b.Snapshot()
		snaps = append(snaps, s)
		want.WriteString(s.String())
	}
	tail := "# EOF-like tail written per scrape\n"
	want.WriteString(tail)

	var out bytes.Buffer
	out.Write([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff})
	crc, size := uint32(0), 0
	for _, s := range snaps {
		seg := s.Deflated(Text)
		if seg != s.Deflated(Text) {
			t.Fatalf("Deflated is not cached")
		}
		out.Write(seg.Data)
		crc = CRC32Combine(crc, seg.CRC, seg.Size)
		size += seg.Size
	}
	fw, _ := flate.NewWriter(&out, flate.BestSpeed)
	fw.Write([]byte(tail))
	fw.Close()
	crc = CRC32Combine(crc, crc32.ChecksumIEEE([]byte(tail)), len(tail))
	size += len(tail)
	var trailer [8]byte
	binary.LittleEndian.PutUint32(trailer[:4], crc)
	binary.LittleEndian.PutUint32(trailer[4:], uint32(size))
	out.Write(trailer[:])

	zr, err := gzip.NewReader(&out)
	if err != nil {
		t.Fatal(err)
	}
	zr.Multistream(false)
	got, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("reading the concatenated gzip member: %v", err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("decompressed %d bytes differ from the %d expected", len(got), want.Len())
	}
}

// BenchmarkDeflated measures the one-time compression of a fresh
// 100,000-series snapshot: the cost the first gzip scrape after each poll
// pays, instead of every scrape.
func BenchmarkDeflated(b *testing.B) {
	d := MustNewDesc("nic_bench_packets_total", "Packets.", Counter, "device", "queue")
	bld := NewBuilder()
	for i := 0; i < 100_000; i++ {
		bld.Add(d, float64(i)*1234567, fmt.Sprintf("mlx5_%d", i/1000), fmt.Sprint(i%1000))
	}
	b.ReportAllocs()
	for b.Loop() {
		s := bld.Snapshot()
		_ = s.Deflated(Text)
	}
}
