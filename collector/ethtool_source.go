package collector

import "errors"

// EthtoolSource is what the ethtool collector reads: the kernel's ethtool
// ioctls in production (NewEthtoolIoctl), recorded dumps in tests and the
// demo host. Implementations are used by one poll at a time.
//
// Errors that say an interface is gone (ENODEV, ENXIO, fs.ErrNotExist)
// make the collector skip the interface with one debug line; EOPNOTSUPP
// means the driver lacks that part (the loopback device has no driver
// information, most virtual devices no link settings).
type EthtoolSource interface {
	// Interfaces lists the network interfaces with their indexes.
	Interfaces() ([]EthtoolInterface, error)
	// DriverInfo returns the driver information (ETHTOOL_GDRVINFO),
	// including the current number of statistics.
	DriverInfo(name string) (EthtoolDriverInfo, error)
	// Link returns the link settings (ETHTOOL_GSET) and the link state
	// (ETHTOOL_GLINK).
	Link(name string) (EthtoolLink, error)
	// StatNames returns the driver's n statistic names (ETHTOOL_GSTRINGS
	// of ETH_SS_STATS). It returns ErrStatCountChanged if the driver now
	// has another number of statistics.
	StatNames(name string, n int) ([]string, error)
	// Stats fills dst with the current statistic values (ETHTOOL_GSTATS),
	// in the order of StatNames. It returns ErrStatCountChanged if the
	// driver has another number of statistics than len(dst).
	Stats(name string, dst []uint64) error
}

// ErrStatCountChanged says a driver's statistic table changed size between
// two calls, for example because channels were added.
var ErrStatCountChanged = errors.New("the number of ethtool statistics changed")

// EthtoolInterface is one network interface.
type EthtoolInterface struct {
	Name  string
	Index int
}

// EthtoolDriverInfo is the driver information of one interface.
type EthtoolDriverInfo struct {
	Driver          string
	Version         string
	FirmwareVersion string
	BusInfo         string
	// NStats is the number of statistics the driver reports now.
	NStats int
}

// EthtoolLink is the link state and settings of one interface. Fields the
// driver does not report have their Has flag false.
type EthtoolLink struct {
	HasSettings bool
	// SpeedMbps is the link speed in Mb/s; 0 when unknown (link down).
	SpeedMbps uint32
	// Duplex is 0 half, 1 full, 0xff unknown.
	Duplex uint8
	// Autoneg is 1 if autonegotiation is on.
	Autoneg uint8

	HasDetected bool
	Detected    bool
}
