// Package errclass is the one classification of the errors that kernel
// sources return (sysfs attributes, ethtool ioctls and netlink, devlink,
// module memory reads): what an errno means for a collector, and the
// fixed, small set of reasons the self-metrics count errors under. Every
// source asks it instead of testing errno values itself, so "unsupported",
// "gone" and "not permitted" mean the same in every collector.
package errclass

import (
	"errors"
	"io/fs"
	"syscall"
)

// The reasons Reason returns. The set is fixed so that the reason label
// of the self-metrics cannot grow.
const (
	ReasonEINVAL     = "einval"
	ReasonNotExist   = "enoent"
	ReasonPermission = "eacces"
	ReasonIO         = "eio"
	ReasonEOPNOTSUPP = "eopnotsupp"
	ReasonBusy       = "busy"
	ReasonParse      = "parse"
	ReasonOther      = "other"
)

// Reasons lists every value Reason can return for a non-nil error, in
// the order of the constants.
var Reasons = []string{ReasonEINVAL, ReasonNotExist, ReasonPermission, ReasonIO, ReasonEOPNOTSUPP, ReasonBusy, ReasonParse, ReasonOther}

// ErrParse marks errors that come from content that could not be parsed
// (a counter that is not a number, a truncated record). Reason counts
// errors that wrap it as "parse".
var ErrParse = errors.New("unparsable value")

// Reason classifies err for the self-metrics: the errno it wraps, or
// ErrParse, else "other". It returns "" for a nil error.
func Reason(err error) string {
	var errno syscall.Errno
	switch {
	case err == nil:
		return ""
	case errors.As(err, &errno):
		switch errno {
		case syscall.EINVAL:
			return ReasonEINVAL
		case syscall.ENOENT, syscall.ENODEV, syscall.ENXIO:
			return ReasonNotExist
		case syscall.EACCES, syscall.EPERM:
			return ReasonPermission
		case syscall.EIO:
			return ReasonIO
		case syscall.EOPNOTSUPP:
			return ReasonEOPNOTSUPP
		case syscall.EAGAIN, syscall.EBUSY, syscall.ETIMEDOUT:
			return ReasonBusy
		}
		return ReasonOther
	case errors.Is(err, fs.ErrNotExist):
		return ReasonNotExist
	case errors.Is(err, fs.ErrPermission):
		return ReasonPermission
	case errors.Is(err, ErrParse):
		return ReasonParse
	}
	return ReasonOther
}

// IsUnsupported reports whether err says the kernel or the driver does
// not implement the operation: EOPNOTSUPP (ENOTSUP is the same value on
// Linux), or errors.ErrUnsupported. An ethtool ioctl or netlink request
// the driver has no callback for answers EOPNOTSUPP; so does a module
// read on an interface without module access (veth).
func IsUnsupported(err error) bool {
	return errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOTSUP) || errors.Is(err, errors.ErrUnsupported)
}

// IsUnsupportedAttr reports whether err says the driver will never answer
// a sysfs attribute: IsUnsupported, or EINVAL, which a show() callback
// returns for a value the device does not have (current_link_speed of a
// function without the capability, AER counters of a device without AER).
// Errors that say nothing about the attribute, such as EMFILE and ENFILE
// when file descriptors run out, EACCES, ENOMEM or EINTR, are not, so
// they never stop an attribute from being read at later polls.
func IsUnsupportedAttr(err error) bool {
	return errors.Is(err, syscall.EINVAL) || IsUnsupported(err)
}

// IsNotExist reports whether err says a file, interface or device is
// gone: ENOENT, ENODEV or ENXIO.
func IsNotExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENODEV) || errors.Is(err, syscall.ENXIO)
}

// IsNoDevice reports whether err says the interface is gone (ENODEV), as
// ethtool requests answer for a name that no longer exists.
func IsNoDevice(err error) bool { return errors.Is(err, syscall.ENODEV) }

// IsPermission reports whether err says the exporter lacks a privilege
// for the operation: EPERM or EACCES. Generic netlink checks
// GENL_UNS_ADMIN_PERM before a request reaches ethtool, and dev_ethtool
// checks CAP_NET_ADMIN before the driver's operations, so without the
// capability every interface answers alike.
func IsPermission(err error) bool {
	return errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) || errors.Is(err, fs.ErrPermission)
}

// IsIO reports whether err is EIO: for a module read, a module that did
// not answer on I2C; for a sysfs counter, a firmware command that failed.
// The next poll tries again.
func IsIO(err error) bool { return errors.Is(err, syscall.EIO) }

// IsInvalid reports whether err is EINVAL. A sysfs show() callback returns
// it for a value the device does not have right now, such as the rate of
// an InfiniBand port whose link is down: a state, not a failure.
func IsInvalid(err error) bool { return errors.Is(err, syscall.EINVAL) }
