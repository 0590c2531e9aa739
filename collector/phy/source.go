package phy

import (
	"github.com/nic-exporter/nic_exporter/internal/sff"
)

// Source is what the collector polls: the kernel's ethtool netlink family
// on a host (NewHostSource), a fake in tests and the demo host. Each
// method reads one interface; implementations are used by one poll at a
// time.
//
// Errors that say the interface is gone (ENODEV, ENXIO, fs.ErrNotExist)
// make the collector skip the interface for that poll; errors for which
// errclass.IsUnsupported is true mean the driver lacks the operation, and the
// collector remembers that instead of asking again on every poll.
//
// A Source may also implement StatsSource and ModuleSource; the collector
// uses them when it does.
type Source interface {
	// Interfaces lists the network interfaces.
	Interfaces() ([]Interface, error)
	// LinkState returns the link state (ETHTOOL_MSG_LINKSTATE_GET).
	LinkState(ifname string) (LinkState, error)
	// FEC returns the active FEC mode and the FEC statistics
	// (ETHTOOL_MSG_FEC_GET with statistics).
	FEC(ifname string) (FEC, error)
}

// StatsSource is implemented by a Source that reads the IEEE 802.3 and
// RFC 2819 standard counters (ETHTOOL_MSG_STATS_GET).
type StatsSource interface {
	Stats(ifname string) (Stats, error)
}

// ModuleSource is implemented by a Source that reads pluggable module
// memory (ETHTOOL_MSG_MODULE_EEPROM_GET, or the legacy ioctl). It
// returns the pages the module advertises, ready for sff.Decode.
type ModuleSource interface {
	Module(ifname string) (*sff.Memory, error)
}

// Interface is one network interface as the collector sees it. Name,
// Index and Driver together identify it: when any changes, what the
// collector remembered about the interface (unsupported operations, the
// last module read) is forgotten.
type Interface struct {
	Name  string
	Index int
	// Driver is the kernel driver bound to the interface's device, empty
	// for virtual interfaces without one.
	Driver string
}

// LinkState is the link state as the driver reports it. Fields are zero
// or nil when the driver does not report them.
type LinkState struct {
	// Up is the link bit; nil when not reported.
	Up *bool
	// DownReason is the driver's reason the link is down (enum
	// ethtool_link_ext_state), as ethtool prints it in snake case, for
	// example "bad_signal_integrity"; empty when none is given.
	DownReason string
	// DownSubstate refines DownReason, e.g. "serdes_alos"; empty when
	// none is given.
	DownSubstate string
	// DownEvents counts link down events since the driver loaded
	// (ext_down_cnt); nil when the driver does not count them.
	DownEvents *uint64
}

// FEC is the forward error correction mode and counters of a link.
type FEC struct {
	// Mode is the active mode as ethtool --show-fec prints it ("off",
	// "rs", "baser", "llrs"); empty when the driver does not say.
	Mode string
	// The counters are nil when the driver does not count them.
	CorrectedBlocks     *FECCounter
	UncorrectableBlocks *FECCounter
	CorrectedBits       *FECCounter
	// Hist is the FEC histogram (ETHTOOL_A_FEC_STAT_HIST, where reported):
	// codewords counted by how many errors the FEC corrected in each.
	Hist []FECHistBin
}

// FECHistBin is one bin of the FEC histogram: the codewords received
// with Low to High (inclusive) corrected errors each.
type FECHistBin struct {
	Low, High uint32
	Codewords uint64
}

// FECCounter is one FEC counter: the total and, when the driver reports
// them, the value of each lane (index = lane number, from 0).
type FECCounter struct {
	Total uint64
	Lanes []uint64
}

// Stats are the standard counter groups of ETHTOOL_MSG_STATS_GET.
type Stats struct {
	Counters []StatCounter
}

// StatCounter is one standard counter.
type StatCounter struct {
	// Group is the ethtool group name: "eth-phy", "eth-mac", "eth-ctrl"
	// or "rmon".
	Group string
	// Name is the counter's name as ethtool --json -S --groups prints it,
	// e.g. "SymbolErrorDuringCarrier" or "FrameCheckSequenceErrors".
	Name  string
	Value uint64
}
