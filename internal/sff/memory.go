// Package sff decodes pluggable-module EEPROM contents (SFF-8472 SFP,
// SFF-8636 QSFP and CMIS QSFP-DD/OSFP) into identity, live diagnostics,
// module-advertised thresholds and latched alarm/warning flags.
//
// The package does no I/O. Callers read module memory with whatever
// interface the driver offers (ethtool netlink MODULE_EEPROM, which reads
// by I2C address, bank, page and offset; or the legacy ETHTOOL_GMODULEEEPROM
// ioctl, which returns a flat dump) and place the bytes into a Memory.
// Decode then picks the standard from the SFF-8024 identifier byte.
//
// All values are reported in Prometheus base units: degrees Celsius,
// volts, amperes and watts. Optical power in dBm, which dashboards often
// prefer, is 10*log10(P/1mW), i.e. 10*log10(watts*1000); a power of 0 W
// (a dark receiver, shown by ethtool as the "-40 dBm floor" or -inf) is
// reported as 0 W and never as NaN or -Inf.
package sff

import "fmt"

// Standard I2C addresses (7-bit) of module memory. SFF-8472 uses 0x50 for
// the serial ID (A0h) and 0x51 for diagnostics (A2h); SFF-8636 and CMIS
// use 0x50 only.
const (
	AddrA0 uint8 = 0x50
	AddrA2 uint8 = 0x51
)

// PageSize is the size of the lower memory and of each upper page.
const PageSize = 128

// PageKey names one upper page (byte offsets 128-255) of module memory.
type PageKey struct {
	// Addr is the 7-bit I2C address, AddrA0 or AddrA2.
	Addr uint8
	// Bank is the CMIS bank number; 0 for SFF-8472 and SFF-8636.
	Bank uint8
	// Page is the page number selected in byte 127.
	Page uint8
}

// Memory holds the module memory a caller could read. Lower holds bytes
// 0-127 of each I2C address, Upper holds bytes 128-255 of each selected
// page. Slices may be shorter than PageSize when the reader returned
// less; the decoders report which bytes are missing.
type Memory struct {
	Lower map[uint8][]byte
	Upper map[PageKey][]byte
}

// NewMemory returns an empty Memory ready for Put.
func NewMemory() *Memory {
	return &Memory{Lower: map[uint8][]byte{}, Upper: map[PageKey][]byte{}}
}

// Put stores data read at the given I2C address, bank, page and byte
// offset, the way an ethtool netlink MODULE_EEPROM request addresses it.
// Bytes below offset 128 go to lower memory, bytes from 128 on go to the
// given upper page. Put returns an error when the range leaves the
// 256-byte window.
func (m *Memory) Put(addr, bank, page uint8, offset int, data []byte) error {
	if offset < 0 || offset+len(data) > 2*PageSize {
		return fmt.Errorf("sff: put %d bytes at offset %d of i2c 0x%02x page 0x%02x: outside the 256-byte window", len(data), offset, addr, page)
	}
	for i, b := range data {
		off := offset + i
		if off < PageSize {
			m.Lower[addr] = setByte(m.Lower[addr], off, b)
			continue
		}
		k := PageKey{Addr: addr, Bank: bank, Page: page}
		m.Upper[k] = setByte(m.Upper[k], off-PageSize, b)
	}
	return nil
}

func setByte(s []byte, i int, b byte) []byte {
	if len(s) <= i {
		s = append(s, make([]byte, i+1-len(s))...)
	}
	s[i] = b
	return s
}

// FromSFF8472Dump builds a Memory from a legacy ETHTOOL_GMODULEEEPROM dump
// of an SFP: 256 bytes of A0h optionally followed by 256 bytes of A2h
// (ETH_MODULE_SFF_8472_LEN = 512).
func FromSFF8472Dump(buf []byte) *Memory {
	m := NewMemory()
	a0 := buf[:min(len(buf), 2*PageSize)]
	_ = m.Put(AddrA0, 0, 0, 0, a0)
	if len(buf) > 2*PageSize {
		a2 := buf[2*PageSize : min(len(buf), 4*PageSize)]
		_ = m.Put(AddrA2, 0, 0, 0, a2)
	}
	return m
}

// FromPagedDump builds a Memory from a legacy ETHTOOL_GMODULEEEPROM dump
// of an SFF-8636 or CMIS module: lower memory, then upper page 00h, then
// the upper halves of pages 01h, 02h, 03h, ... in order, 128 bytes each
// (ETH_MODULE_SFF_8636_MAX_LEN = 640 holds pages 00h-03h).
func FromPagedDump(buf []byte) *Memory {
	m := NewMemory()
	_ = m.Put(AddrA0, 0, 0, 0, buf[:min(len(buf), 2*PageSize)])
	for page, off := 1, 2*PageSize; off < len(buf) && page < 256; page, off = page+1, off+PageSize {
		_ = m.Put(AddrA0, 0, uint8(page), PageSize, buf[off:min(len(buf), off+PageSize)])
	}
	return m
}

// view is a bounds-checked window onto 256 bytes of one address and page.
type view struct {
	name  string
	lower []byte
	upper []byte
}

// region reports whether bytes [off, off+n) are present.
func (v view) has(off, n int) bool {
	if off < PageSize {
		return off+n <= len(v.lower)
	}
	return off-PageSize+n <= len(v.upper)
}

func (v view) need(off, n int, what string) error {
	if !v.has(off, n) {
		return &ShortError{Region: v.name, Offset: off, Length: n, Field: what}
	}
	return nil
}

func (v view) b(off int) byte {
	if off < PageSize {
		return v.lower[off]
	}
	return v.upper[off-PageSize]
}

func (v view) u16(off int) uint16 { return uint16(v.b(off))<<8 | uint16(v.b(off+1)) }

func (v view) s16(off int) int16 { return int16(v.u16(off)) }

func (v view) bytes(off, n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = v.b(off + i)
	}
	return out
}

func (m *Memory) view(name string, addr, bank, page uint8) view {
	if m == nil {
		return view{name: name}
	}
	return view{name: name, lower: m.Lower[addr], upper: m.Upper[PageKey{Addr: addr, Bank: bank, Page: page}]}
}

func (m *Memory) hasUpper(addr, bank, page uint8) bool {
	return m != nil && len(m.Upper[PageKey{Addr: addr, Bank: bank, Page: page}]) > 0
}
