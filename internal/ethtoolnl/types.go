// Package ethtoolnl is a small client of the kernel's ethtool generic
// netlink family for the messages the physical-layer collectors need and
// the ioctl interface lacks: LINKSTATE (link, extended down reason, link
// down count), FEC (active mode, FEC error statistics in total and per
// lane, and the FEC histogram of newer kernels), STATS (the IEEE 802.3
// and RMON standard counter groups, named by the kernel's string sets)
// and MODULE_EEPROM (one read of plug-in module memory by I2C address,
// bank, page and offset; internal/modread reads whole modules with it).
//
// github.com/mdlayher/ethtool (v0.7.0) was evaluated first: its LinkState
// carries only the link bit, and its FEC carries the modes but no
// statistics, no extended state and no down count, which are the whole
// point here. Rather than wrapping it and decoding the rest by hand next to
// it, this package speaks the messages directly over
// github.com/mdlayher/genetlink, already a dependency (devlink/), and adds
// no new module. Reply parsing is separated from I/O (parseLinkState,
// parseFEC, parseStats, parseStringSets, parseModuleEEPROM) so it is
// table-tested and fuzzed without a kernel.
package ethtoolnl

// Config configures a Client.
type Config struct {
	// Netns is the path of the network namespace to talk to (for example
	// /run/netns/x or /proc/1/ns/net); empty means the caller's.
	Netns string
}

// LinkState is the reply to ETHTOOL_MSG_LINKSTATE_GET. Optional fields
// are nil when the driver does not report them.
type LinkState struct {
	// Link is the link as the driver reports it (ethtool "Link detected").
	Link *bool
	// ExtState is the reason the link is down (enum ethtool_link_ext_state),
	// reported only by drivers that implement it and only while down.
	ExtState *ExtState
	// ExtSubstate refines ExtState; its meaning depends on ExtState.
	ExtSubstate *uint8
	// ExtDownCount counts link down events since the driver loaded.
	ExtDownCount *uint32
	// SQI and SQIMax are the signal quality index of a PHY and its maximum.
	SQI, SQIMax *uint32
}

// ExtState is enum ethtool_link_ext_state (include/uapi/linux/ethtool.h).
type ExtState uint8

// String returns the state's name as ethtool prints it, in snake case.
func (s ExtState) String() string {
	names := [...]string{
		"autoneg", "link_training_failure", "link_logical_mismatch",
		"bad_signal_integrity", "no_cable", "cable_issue", "eeprom_issue",
		"calibration_failure", "power_budget_exceeded", "overheat", "module",
	}
	if int(s) < len(names) {
		return names[s]
	}
	return "unknown"
}

// FEC is the reply to ETHTOOL_MSG_FEC_GET with statistics requested.
type FEC struct {
	// Active is the active FEC mode, nil when the driver does not say.
	Active *FECMode
	// Auto is true when the FEC mode follows autonegotiation.
	Auto *bool
	// Corrected, Uncorrectable and CorrectedBits are nil when the driver
	// does not count them.
	Corrected     *FECStat
	Uncorrectable *FECStat
	CorrectedBits *FECStat
	// Hist is the FEC histogram: codewords counted by the number of bit
	// errors the FEC corrected in them, one bin per range, in the
	// driver's order. Nil on kernels before the histogram was added
	// (ETHTOOL_A_FEC_STAT_HIST, 2025) and for drivers that do not keep one.
	Hist []FECHistBin
}

// FECHistBin is one bin of the FEC histogram.
type FECHistBin struct {
	// Low and High bound the number of corrected bit errors per codeword
	// (inclusive); Low == High for single-value bins.
	Low, High uint32
	// Value is the number of codewords in the bin.
	Value uint64
	// Lanes holds the count per lane when the driver reports it.
	Lanes []uint64
}

// FECStat is one FEC counter: the total and, when the driver reports
// them, one value per lane.
type FECStat struct {
	Total uint64
	Lanes []uint64
}

// FECMode is the link mode bit of the active FEC mode
// (ETHTOOL_LINK_MODE_FEC_*_BIT).
type FECMode uint32

// FEC link mode bits (include/uapi/linux/ethtool.h).
const (
	FECNone  FECMode = 49
	FECRS    FECMode = 50
	FECBaseR FECMode = 51
	FECLLRS  FECMode = 74
)

// String returns the mode as ethtool --show-fec prints it.
func (m FECMode) String() string {
	switch m {
	case FECNone:
		return "off"
	case FECRS:
		return "rs"
	case FECBaseR:
		return "baser"
	case FECLLRS:
		return "llrs"
	default:
		return "unknown"
	}
}
