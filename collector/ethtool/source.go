package ethtool

import (
	"github.com/nic-exporter/nic_exporter/internal/ethtoolioctl"
)

// Source is what the collector reads: the kernel's ethtool ioctls in
// production (ethtoolioctl.New), recorded dumps in tests and the demo host
// (internal/ethtooldump). Implementations are used by one poll at a time.
//
// Errors that say an interface is gone (ENODEV, ENXIO, fs.ErrNotExist)
// make the collector skip the interface with one debug line; EOPNOTSUPP
// (errclass.IsUnsupported) means the driver lacks that part (the
// loopback device has no driver information, most virtual devices no link
// settings).
type Source interface {
	// Interfaces lists the network interfaces with their indexes.
	Interfaces() ([]ethtoolioctl.Interface, error)
	// DriverInfo returns the driver information (ETHTOOL_GDRVINFO),
	// including the current number of statistics.
	DriverInfo(name string) (ethtoolioctl.DriverInfo, error)
	// Link returns the link settings (ETHTOOL_GSET) and the link state
	// (ETHTOOL_GLINK).
	Link(name string) (ethtoolioctl.Link, error)
	// StatNames returns the driver's n statistic names (ETHTOOL_GSTRINGS
	// of ETH_SS_STATS). It returns ethtoolioctl.ErrStatCountChanged if
	// the driver now has another number of statistics.
	StatNames(name string, n int) ([]string, error)
	// Stats fills dst with the current statistic values (ETHTOOL_GSTATS),
	// in the order of StatNames. It returns
	// ethtoolioctl.ErrStatCountChanged if the driver has another number of
	// statistics than len(dst).
	Stats(name string, dst []uint64) error
}

var _ Source = (*ethtoolioctl.Source)(nil)
