package sff

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ParseTextDump reads module memory in the text form of this package's
// testdata/*.dump files: "# comment" and "expect key = value" lines are
// skipped, "page addr=0x50 bank=0 page=0x03" selects a page, and
// "XX: hex bytes" rows put bytes at offset XX of the 256-byte window
// (rows below 0x80 are lower memory). The demo host and the collectors'
// tests use it to load real module dumps.
func ParseTextDump(r io.Reader) (*Memory, error) {
	m := NewMemory()
	var addr, bank, page uint64
	inPage := false
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "expect "):
		case strings.HasPrefix(line, "page "):
			if _, err := fmt.Sscanf(line, "page addr=0x%x bank=%d page=0x%x", &addr, &bank, &page); err != nil {
				return nil, fmt.Errorf("sff: text dump line %d: %w", n, err)
			}
			if addr > 0xff || bank > 0xff || page > 0xff {
				return nil, fmt.Errorf("sff: text dump line %d: address, bank or page out of range", n)
			}
			inPage = true
		default:
			off, rest, ok := strings.Cut(line, ":")
			if !ok || !inPage {
				return nil, fmt.Errorf("sff: text dump line %d: unexpected %q", n, line)
			}
			o, err := strconv.ParseUint(off, 16, 8)
			if err != nil {
				return nil, fmt.Errorf("sff: text dump line %d: offset: %w", n, err)
			}
			var row []byte
			for _, f := range strings.Fields(rest) {
				b, err := strconv.ParseUint(f, 16, 8)
				if err != nil {
					return nil, fmt.Errorf("sff: text dump line %d: byte %q: %w", n, f, err)
				}
				row = append(row, byte(b))
			}
			if err := m.Put(uint8(addr), uint8(bank), uint8(page), int(o), row); err != nil {
				return nil, fmt.Errorf("sff: text dump line %d: %w", n, err)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("sff: text dump: %w", err)
	}
	return m, nil
}

// Clone returns a deep copy of m, which the caller may change.
func (m *Memory) Clone() *Memory {
	c := NewMemory()
	for a, b := range m.Lower {
		c.Lower[a] = append([]byte(nil), b...)
	}
	for k, b := range m.Upper {
		c.Upper[k] = append([]byte(nil), b...)
	}
	return c
}
