package exposition

import (
	"bytes"
	"compress/flate"
	"hash/crc32"
	"io"
)

// Segment is a snapshot compressed once as a raw DEFLATE stream that ends
// with a sync flush, so segments of several snapshots can be concatenated
// into one gzip member without compressing them again on every scrape.
// Each segment only refers back to its own bytes.
type Segment struct {
	Data []byte // DEFLATE blocks, byte-aligned, no final block
	CRC  uint32 // CRC-32 (IEEE) of the uncompressed bytes
	Size int    // length of the uncompressed bytes
}

// Deflated returns the snapshot in format f as a compressed Segment. The
// first call per format compresses; later calls return the same segment.
// Concurrent first calls may both compress; one result wins.
func (s *Snapshot) Deflated(f Format) *Segment {
	if seg := s.deflated[f].Load(); seg != nil {
		return seg
	}
	var buf bytes.Buffer
	buf.Grow(s.Size(f)/6 + 64)
	w, _ := flate.NewWriter(&buf, flate.BestSpeed) // level is valid: no error
	sum := crc32.NewIEEE()
	// Writes to a bytes.Buffer and a hash do not fail.
	_, _ = s.WriteTo(io.MultiWriter(w, sum), f)
	_ = w.Flush()
	seg := &Segment{Data: buf.Bytes(), CRC: sum.Sum32(), Size: s.Size(f)}
	if s.deflated[f].CompareAndSwap(nil, seg) {
		return seg
	}
	return s.deflated[f].Load()
}

// CRC32Combine returns the CRC-32 (IEEE) of the concatenation of A and B
// given crcA, crcB and the length of B. It multiplies crcA by x^(8·lenB)
// modulo the CRC polynomial in GF(2), which appends lenB zero bytes to A,
// then adds crcB.
func CRC32Combine(crcA, crcB uint32, lenB int) uint32 {
	if lenB <= 0 {
		return crcA
	}
	return gf2MulMod(xPow8n(uint64(lenB)), crcA) ^ crcB
}

// crcPoly is the reflected CRC-32 (IEEE) polynomial.
const crcPoly = 0xedb88320

// gf2MulMod multiplies a and b modulo crcPoly, both in the reflected bit
// order where the most significant bit is the coefficient of x^0.
func gf2MulMod(a, b uint32) uint32 {
	var p uint32
	for m := uint32(1) << 31; m != 0; m >>= 1 {
		if a&m != 0 {
			p ^= b
		}
		if b&1 != 0 {
			b = b>>1 ^ crcPoly
		} else {
			b >>= 1
		}
	}
	return p
}

// xPow8n returns x^(8n) modulo crcPoly by square-and-multiply.
func xPow8n(n uint64) uint32 {
	result := uint32(1) << 31 // x^0
	sq := uint32(1) << 23     // x^8
	for ; n != 0; n >>= 1 {
		if n&1 != 0 {
			result = gf2MulMod(sq, result)
		}
		sq = gf2MulMod(sq, sq)
	}
	return result
}
