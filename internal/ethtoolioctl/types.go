// Package ethtoolioctl reads a network namespace's interfaces, driver
// information, link settings and driver statistics from the kernel: the
// SIOCETHTOOL ioctl with a guard page behind its scratch memory, and an
// rtnetlink RTM_GETLINK dump (internal/rtnl) for the interface list, on
// sockets opened in one network namespace. It also defines the values that the ethtool
// collector and its test and demo sources (internal/ethtooldump) exchange.
package ethtoolioctl

import (
	"errors"
)

// ErrStatCountChanged says a driver's statistic table changed size between
// two calls, for example because channels were added.
var ErrStatCountChanged = errors.New("the number of ethtool statistics changed")

// Interface is one network interface.
type Interface struct {
	Name  string
	Index int
}

// DriverInfo is the driver information of one interface.
type DriverInfo struct {
	Driver          string
	Version         string
	FirmwareVersion string
	BusInfo         string
	// NStats is the number of statistics the driver reports now.
	NStats int
}

// Link is the link state and settings of one interface. Fields the
// driver does not report have their Has flag false.
type Link struct {
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
