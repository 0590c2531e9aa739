package ethtoolnl

import (
	"fmt"

	"github.com/mdlayher/netlink"
)

// Attribute numbers of MODULE_EEPROM_GET (include/uapi/linux/ethtool_netlink.h).
const (
	eepromHeader  = 1
	eepromOffset  = 2
	eepromLength  = 3
	eepromPage    = 4
	eepromBank    = 5
	eepromI2CAddr = 6
	eepromData    = 7

	// halfPage is the kernel's ETH_MODULE_EEPROM_PAGE_LEN: one request
	// reads at most one half of the 256-byte window.
	halfPage = 128
)

// ModuleEEPROMRequest addresses one read of module memory with
// ETHTOOL_MSG_MODULE_EEPROM_GET, within the limits net/ethtool/eeprom.c
// (eeprom_parse_request) enforces: Length 1-128 bytes; Offset 0-255;
// a read does not cross offset 128; pages other than 0 are read only
// from Offset 128 on (their lower half is the shared lower memory).
type ModuleEEPROMRequest struct {
	// Addr is the 7-bit I2C address: 0x50 (A0h) or, for SFP
	// diagnostics, 0x51 (A2h).
	Addr uint8
	// Bank is the CMIS bank (0 for anything else).
	Bank uint8
	// Page is the page selected in byte 127.
	Page uint8
	// Offset is the first byte in the 256-byte window.
	Offset int
	// Length is the number of bytes to read.
	Length int
}

// validate checks r against the kernel's limits, so a bad request fails
// here with a clear message instead of as EINVAL.
func (r ModuleEEPROMRequest) validate() error {
	switch {
	case r.Length < 1 || r.Length > halfPage:
		return fmt.Errorf("length %d, want 1-%d", r.Length, halfPage)
	case r.Offset < 0 || r.Offset >= 2*halfPage:
		return fmt.Errorf("offset %d, want 0-%d", r.Offset, 2*halfPage-1)
	case r.Offset < halfPage && r.Offset+r.Length > halfPage:
		return fmt.Errorf("offset %d length %d crosses the half-page boundary at 128", r.Offset, r.Length)
	case r.Offset+r.Length > 2*halfPage:
		return fmt.Errorf("offset %d length %d leaves the 256-byte window", r.Offset, r.Length)
	case r.Page != 0 && r.Offset < halfPage:
		return fmt.Errorf("page 0x%02x read at offset %d: only page 0 has a lower half", r.Page, r.Offset)
	case r.Addr > 0x7f:
		return fmt.Errorf("i2c address 0x%02x is not a 7-bit address", r.Addr)
	}
	return nil
}

// String names the request for error messages.
func (r ModuleEEPROMRequest) String() string {
	return fmt.Sprintf("i2c 0x%02x bank %d page 0x%02x offset %d length %d", r.Addr, r.Bank, r.Page, r.Offset, r.Length)
}

// encode adds the request attributes after the header.
func (r ModuleEEPROMRequest) encode(ae *netlink.AttributeEncoder) {
	ae.Uint32(eepromOffset, uint32(r.Offset))
	ae.Uint32(eepromLength, uint32(r.Length))
	ae.Uint8(eepromPage, r.Page)
	ae.Uint8(eepromBank, r.Bank)
	ae.Uint8(eepromI2CAddr, r.Addr)
}

// parseModuleEEPROM decodes a MODULE_EEPROM_GET reply: the data
// attribute, which must hold exactly the requested length.
func parseModuleEEPROM(b []byte, want int) ([]byte, error) {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return nil, fmt.Errorf("decoding module eeprom attributes: %w", err)
	}
	var data []byte
	found := false
	for ad.Next() {
		if ad.Type() == eepromData {
			data, found = ad.Bytes(), true
		}
	}
	if err := ad.Err(); err != nil {
		return nil, fmt.Errorf("decoding module eeprom attributes: %w", err)
	}
	if !found {
		return nil, fmt.Errorf("module eeprom reply without data")
	}
	if len(data) != want {
		return nil, fmt.Errorf("module eeprom reply of %d bytes, asked for %d", len(data), want)
	}
	return data, nil
}
