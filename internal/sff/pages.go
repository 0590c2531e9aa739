package sff

import "fmt"

// Region is one 128-byte half of module memory, addressed the way one
// ethtool netlink MODULE_EEPROM request addresses it: the lower memory
// (bytes 0-127) of an I2C address, or the upper half (bytes 128-255) of
// one bank and page.
type Region struct {
	// Addr is the 7-bit I2C address, AddrA0 or AddrA2.
	Addr uint8
	// Bank is the CMIS bank; 0 otherwise and for lower memory.
	Bank uint8
	// Page is the page selected in byte 127; 0 for lower memory.
	Page uint8
	// Upper is true for bytes 128-255 of Page, false for lower memory.
	Upper bool
}

// Offset returns the region's first byte in the 256-byte window: 0 for
// lower memory, 128 for an upper page.
func (r Region) Offset() int {
	if r.Upper {
		return PageSize
	}
	return 0
}

// String names the region for error messages.
func (r Region) String() string {
	if !r.Upper {
		return fmt.Sprintf("i2c 0x%02x lower memory", r.Addr)
	}
	return fmt.Sprintf("i2c 0x%02x bank %d page 0x%02x", r.Addr, r.Bank, r.Page)
}

// LowerA0 is the region every module read starts with: lower memory of
// I2C address 0x50, which holds the SFF-8024 identifier.
var LowerA0 = Region{Addr: AddrA0}

// Offsets of the advertising bits NextRegions reads.
const (
	sfpAddrChange  = 0x04 // A0h byte 92 bit 2: address change sequence required
	sfpDDM         = 0x40 // A0h byte 92 bit 6: digital diagnostics implemented
	qsfpStatus2    = 2    // SFF-8636 byte 2, bit 2: flat memory
	qsfpFlat       = 0x04 //
	cmisFlat       = 0x80 // CMIS byte 2 bit 7: flat memory
	cmisPagesAdver = 142  // CMIS page 01h byte 142 bits 1-0: banks supported
)

// NextRegions returns the regions the module in m advertises and m does
// not hold yet, in reading order. It is the pure half of reading a
// module: a reader starts with an empty Memory, reads what NextRegions
// returns, stores it with Put and asks again until the answer is empty.
// That takes at most three rounds: lower memory, then the pages lower
// memory implies, then, for a CMIS module whose page 01h advertises more
// than one bank (more than 8 lanes), page 11h of the other banks.
//
// The regions are exactly those Decode uses:
//   - SFF-8472 (SFP): A0h lower memory; A2h lower memory only if A0h byte
//     92 says diagnostics are implemented (bit 6) and no address change
//     sequence is needed (bit 2, which no Linux driver performs). The upper
//     halves (vendor and user EEPROM) carry nothing Decode reads.
//   - SFF-8636 (QSFP): lower memory and page 00h; page 03h (thresholds)
//     unless byte 2 bit 2 says flat memory.
//   - CMIS (QSFP-DD, OSFP): lower memory and page 00h; unless byte 2 bit 7
//     says flat memory, pages 01h (advertising), 02h (thresholds) and 11h of
//     bank 0 (lane monitors), and page 11h of banks 1-3 as far as page 01h
//     byte 142 advertises them (01b: banks 0-1, 10b: banks 0-3).
//
// NextRegions returns ErrNoModule when the identifier is 0x00, an
// *UnsupportedError for an identifier Decode does not decode, and a
// *ShortError when lower memory was read but is too short to decide.
func NextRegions(m *Memory) ([]Region, error) {
	if m == nil || len(m.Lower[AddrA0]) == 0 {
		return []Region{LowerA0}, nil
	}
	lower := m.view("lower memory", AddrA0, 0, 0)
	id := lower.b(0)
	var want []Region
	switch {
	case id == 0x00:
		return nil, ErrNoModule
	case id == 0x03:
		if err := lower.need(0, sfpA0End, "SFF-8472 diagnostic monitoring type (A0h byte 92)"); err != nil {
			return nil, err
		}
		diag := lower.b(sfpDiagType)
		if diag&sfpDDM != 0 && diag&sfpAddrChange == 0 {
			want = append(want, Region{Addr: AddrA2})
		}
	case id == 0x0c || id == 0x0d || id == 0x11:
		if err := lower.need(0, qsfpStatus2+1, "SFF-8636 status (byte 2)"); err != nil {
			return nil, err
		}
		want = append(want, upper(0, 0))
		if lower.b(qsfpStatus2)&qsfpFlat == 0 {
			want = append(want, upper(0, 3))
		}
	case id == 0x18 || id == 0x19 || id == 0x1e:
		if err := lower.need(0, cmisMemModel+1, "CMIS memory model (byte 2)"); err != nil {
			return nil, err
		}
		want = append(want, upper(0, 0))
		if lower.b(cmisMemModel)&cmisFlat == 0 {
			want = append(want, upper(0, 1), upper(0, 2), upper(0, 0x11))
			if m.hasUpper(AddrA0, 0, 1) {
				p1 := m.view("CMIS page 01h", AddrA0, 0, 1)
				if err := p1.need(cmisPagesAdver, 1, "supported banks (page 01h byte 142)"); err != nil {
					return nil, err
				}
				for bank := 1; bank < cmisBanks(p1.b(cmisPagesAdver)); bank++ {
					want = append(want, upper(uint8(bank), 0x11))
				}
			}
		}
	default:
		return nil, &UnsupportedError{Identifier: id}
	}
	var missing []Region
	for _, r := range want {
		if !m.has(r) {
			missing = append(missing, r)
		}
	}
	return missing, nil
}

func upper(bank, page uint8) Region {
	return Region{Addr: AddrA0, Bank: bank, Page: page, Upper: true}
}

// cmisBanks decodes the supported banks of CMIS page 01h byte 142 bits
// 1-0 (ethtool's cmis.h: CMIS_PAGES_ADVER_OFFSET, CMIS_BANKS_SUPPORTED_MASK): 00b bank 0, 01b banks 0-1, 10b banks 0-3; 11b is reserved
// and read as bank 0 only.
func cmisBanks(b byte) int {
	switch b & 0x03 {
	case 0x01:
		return 2
	case 0x02:
		return 4
	default:
		return 1
	}
}

// has reports whether m holds any bytes of region r.
func (m *Memory) has(r Region) bool {
	if r.Upper {
		return m.hasUpper(r.Addr, r.Bank, r.Page)
	}
	return len(m.Lower[r.Addr]) > 0
}
