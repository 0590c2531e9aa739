package ethtoolioctl

import (
	"fmt"
)

// ModuleType is the standard a plug-in module's memory follows, as
// ETHTOOL_GMODULEINFO reports it (ETH_MODULE_SFF_* in
// include/uapi/linux/ethtool.h).
type ModuleType uint32

// The module types of the legacy interface and the length of memory
// each implies (ETH_MODULE_SFF_*_LEN; drivers report up to
// ETH_MODULE_SFF_8636_MAX_LEN, 640 bytes, for paged QSFP modules).
const (
	ModuleSFF8079 ModuleType = 0x1 // SFP without diagnostics: A0h, 256 bytes
	ModuleSFF8472 ModuleType = 0x2 // SFP with diagnostics: A0h then A2h, 512 bytes
	ModuleSFF8636 ModuleType = 0x3 // QSFP28: lower memory, page 00h, then pages 01h-03h
	ModuleSFF8436 ModuleType = 0x4 // QSFP+: as SFF-8636
)

// String names the type as the uapi header does.
func (t ModuleType) String() string {
	switch t {
	case ModuleSFF8079:
		return "SFF-8079"
	case ModuleSFF8472:
		return "SFF-8472"
	case ModuleSFF8636:
		return "SFF-8636"
	case ModuleSFF8436:
		return "SFF-8436"
	default:
		return fmt.Sprintf("module type 0x%x", uint32(t))
	}
}

// ModuleInfo is the reply to ETHTOOL_GMODULEINFO: the module's memory
// map and how many bytes ETHTOOL_GMODULEEEPROM returns for it.
type ModuleInfo struct {
	Type ModuleType
	// Length is the EEPROM length in bytes.
	Length int
}

// maxModuleLen bounds the legacy dump: no driver reports more than a few
// pages, and the guard-paged scratch memory is sized from it.
const maxModuleLen = 64 << 10
