// Package devlink is a small client for the Linux kernel's devlink generic
// netlink family, limited to what a health exporter needs: devices, ports
// with their netdevs, device information (driver, serial number, firmware
// versions), health reporters with their diagnose and dump output, and the
// notifications devlink multicasts when a reporter changes state or a
// device or port comes or goes.
//
// Every attribute the kernel may leave out is optional in the types here
// (a pointer or an empty string); malformed replies give an error, never a
// panic. A kernel without devlink gives an error that satisfies
// errors.Is(err, os.ErrNotExist); missing privileges, os.ErrPermission.
package devlink

import (
	"context"
	"strconv"
	"time"

	"github.com/mdlayher/genetlink"
)

// Handle names a devlink instance by bus and device, such as
// pci/0000:08:00.0 or netdevsim/netdevsim10.
type Handle struct {
	Bus    string
	Device string
}

// String returns the handle as devlink(8) prints it: bus/device.
func (h Handle) String() string { return h.Bus + "/" + h.Device }

// A Device is a devlink instance.
type Device struct {
	Handle
}

// PortType is what kind of netdev a port has: Ethernet or InfiniBand.
type PortType uint16

// Port types as in enum devlink_port_type.
const (
	PortTypeNotSet PortType = 0
	PortTypeAuto   PortType = 1
	PortTypeEth    PortType = 2
	PortTypeIB     PortType = 3
)

// String returns the name devlink(8) uses.
func (t PortType) String() string {
	switch t {
	case PortTypeNotSet:
		return "notset"
	case PortTypeAuto:
		return "auto"
	case PortTypeEth:
		return "eth"
	case PortTypeIB:
		return "ib"
	}
	return strconv.Itoa(int(t))
}

// A Port is a port of a devlink instance.
type Port struct {
	Handle
	Index uint32
	// Type is the port's netdev type, when reported.
	Type *PortType
	// Flavour is the port's enum devlink_port_flavour, when reported.
	Flavour *uint16
	// Number is the physical port number, when reported.
	Number *uint32
	// Netdev and Ifindex name the port's network interface, when it has
	// one (Ifindex 0 otherwise).
	Netdev  string
	Ifindex uint32
	// IBDev names the port's InfiniBand device, when it has one.
	IBDev string
}

// Version is one named version of a device, such as fw.version.
type Version struct {
	Name  string
	Value string
}

// Info is what a driver reports about a device (devlink dev info).
type Info struct {
	Handle
	Driver            string
	SerialNumber      string
	BoardSerialNumber string
	// Fixed versions describe the hardware (board.id, fw.psid); running
	// versions what runs now; stored versions what runs after a reset.
	Fixed, Running, Stored []Version
}

// Lookup returns the value of the named version in vs, or "".
func Lookup(vs []Version, name string) string {
	for _, v := range vs {
		if v.Name == name {
			return v.Value
		}
	}
	return ""
}

// HealthState is a health reporter's state.
type HealthState uint8

// Health reporter states as in the kernel's enum
// devlink_health_reporter_state (include/net/devlink.h; it has no uapi
// definition, so golang.org/x/sys/unix has no constant for it).
const (
	HealthStateHealthy HealthState = 0
	HealthStateError   HealthState = 1
)

// String returns "healthy", "error" or the number.
func (s HealthState) String() string {
	switch s {
	case HealthStateHealthy:
		return "healthy"
	case HealthStateError:
		return "error"
	}
	return strconv.Itoa(int(s))
}

// ReporterID identifies a health reporter: a device's, or, when Port is
// set, a port's.
type ReporterID struct {
	Handle
	Port *uint32
	Name string
}

// String returns the reporter as devlink(8) names it, such as
// pci/0000:08:00.1/65535 tx.
func (id ReporterID) String() string {
	s := id.Handle.String()
	if id.Port != nil {
		s += "/" + strconv.FormatUint(uint64(*id.Port), 10)
	}
	return s + " " + id.Name
}

// A HealthReporter is a devlink health reporter and its counters. Every
// field but the identity is optional: drivers and kernel versions differ
// in what they send.
type HealthReporter struct {
	ReporterID
	State        *HealthState
	ErrorCount   *uint64
	RecoverCount *uint64
	// GracefulPeriod is the minimum time between automatic recoveries.
	GracefulPeriod *time.Duration
	AutoRecover    *bool
	AutoDump       *bool
	// LastDump is the wall-clock time of the stored dump, if any. Linux
	// 5.1, 5.2 and 5.3 before 5.3.12 send it only on the kernel's
	// 32-bit jiffies clock; it is then placed on the wall clock to within
	// about a second, for kernels built with HZ 100, 250 or 1000 and
	// dumps less than 49 days old.
	LastDump *time.Time
}

// HealthReporterSettings are the settable parameters of a reporter; nil
// fields are left unchanged.
type HealthReporterSettings struct {
	GracefulPeriod *time.Duration
	AutoRecover    *bool
	AutoDump       *bool
}

// EventKind says what a devlink notification is about.
type EventKind int

// Event kinds.
const (
	// EventHealth is a health reporter state change; Reporter is set.
	EventHealth EventKind = iota + 1
	// EventDeviceNew and EventDeviceDel announce devices; Device is set.
	EventDeviceNew
	EventDeviceDel
	// EventPortNew and EventPortDel announce ports; Port is set.
	EventPortNew
	EventPortDel
	// EventOverrun says notifications were lost because the socket's
	// buffer overflowed; the receiver should read the state afresh.
	EventOverrun
)

// String names the kind.
func (k EventKind) String() string {
	switch k {
	case EventHealth:
		return "health"
	case EventDeviceNew:
		return "device_new"
	case EventDeviceDel:
		return "device_del"
	case EventPortNew:
		return "port_new"
	case EventPortDel:
		return "port_del"
	case EventOverrun:
		return "overrun"
	}
	return strconv.Itoa(int(k))
}

// An Event is one devlink notification.
type Event struct {
	Kind     EventKind
	Reporter *HealthReporter
	Device   *Device
	Port     *Port
}

// Client is a devlink client. Its methods may be called concurrently.
// Diagnose and Dump, which can make a driver collect megabytes from
// firmware, are sent one at a time on a netlink socket of their own;
// every other request is sent one at a time on the main socket, so that it
// never waits behind a dump.
type Client struct {
	c *client
}

// New returns a Client. It fails with an error satisfying
// errors.Is(err, os.ErrNotExist) when the kernel has no devlink family.
func New() (*Client, error) {
	return NewWithDial(func() (*genetlink.Conn, error) { return genetlink.Dial(nil) })
}

// NewWithDial returns a Client whose generic netlink connections come
// from dial: the main one at once, the one for Diagnose and Dump at the
// first of them, a fresh one after a request was abandoned at its
// deadline, and the one Watch listens on. New dials the kernel; tests
// can dial a fake kernel such as devlinktest's.
func NewWithDial(dial func() (*genetlink.Conn, error)) (*Client, error) {
	c, err := newClient(dial)
	if err != nil {
		return nil, err
	}
	return &Client{c: c}, nil
}

// Close releases the client's netlink sockets. It waits for requests in
// flight; later requests fail with an error satisfying
// errors.Is(err, net.ErrClosed).
func (c *Client) Close() error { return c.c.Close() }

// Devices returns every devlink instance.
func (c *Client) Devices(ctx context.Context) ([]Device, error) { return c.c.Devices(ctx) }

// Ports returns every port of every devlink instance. Devlink keeps ports
// in the kernel; the request does not reach drivers.
func (c *Client) Ports(ctx context.Context) ([]Port, error) { return c.c.Ports(ctx) }

// Info returns the driver's information about one device. This calls
// into the driver, which may query firmware.
func (c *Client) Info(ctx context.Context, h Handle) (Info, error) { return c.c.Info(ctx, h) }

// HealthReporters returns the health reporters of every device and port.
// Devlink keeps their state in the kernel; the request does not reach
// drivers.
func (c *Client) HealthReporters(ctx context.Context) ([]HealthReporter, error) {
	return c.c.HealthReporters(ctx)
}

// HealthReporter returns one health reporter.
func (c *Client) HealthReporter(ctx context.Context, id ReporterID) (HealthReporter, error) {
	return c.c.HealthReporter(ctx, id)
}

// Diagnose returns a reporter's diagnose output: the driver's current
// view of what the reporter watches.
func (c *Client) Diagnose(ctx context.Context, id ReporterID) (Object, error) {
	return c.c.Diagnose(ctx, id)
}

// Dump returns a reporter's stored dump, taking one first if none is
// stored (which sets the reporter's last dump time).
func (c *Client) Dump(ctx context.Context, id ReporterID) (Object, error) {
	return c.c.Dump(ctx, id)
}

// SetHealthReporter changes a reporter's settings.
func (c *Client) SetHealthReporter(ctx context.Context, id ReporterID, s HealthReporterSettings) error {
	return c.c.SetHealthReporter(ctx, id, s)
}

// Recover asks the driver to recover a reporter now.
func (c *Client) Recover(ctx context.Context, id ReporterID) error { return c.c.Recover(ctx, id) }

// Watch joins devlink's "config" multicast group on a second socket and
// calls fn with each notification about health reporters, devices and
// ports until ctx is done (it then returns ctx.Err()) or receiving fails.
func (c *Client) Watch(ctx context.Context, fn func(Event)) error { return c.c.Watch(ctx, fn) }
