//go:build linux

package devlink

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// errNoHandle says a message lacks the bus or device name.
var errNoHandle = errors.New("message without a device handle")

// decodeHandle reads the handle attributes from a message's attributes;
// other attributes are left to fn. Unknown attributes are skipped.
func decodeHandle(b []byte, fn func(ad *netlink.AttributeDecoder)) (Handle, *uint32, error) {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return Handle{}, nil, err
	}
	var h Handle
	var port *uint32
	for ad.Next() {
		switch ad.Type() {
		case unix.DEVLINK_ATTR_BUS_NAME:
			h.Bus = ad.String()
		case unix.DEVLINK_ATTR_DEV_NAME:
			h.Device = ad.String()
		case unix.DEVLINK_ATTR_PORT_INDEX:
			v := ad.Uint32()
			port = &v
		default:
			if fn != nil {
				fn(ad)
			}
		}
	}
	if err := ad.Err(); err != nil {
		return Handle{}, nil, err
	}
	if h.Bus == "" || h.Device == "" {
		return Handle{}, nil, errNoHandle
	}
	return h, port, nil
}

func parseDevice(b []byte) (Device, error) {
	h, _, err := decodeHandle(b, nil)
	if err != nil {
		return Device{}, fmt.Errorf("decoding device: %w", err)
	}
	return Device{Handle: h}, nil
}

func parsePort(b []byte) (Port, error) {
	var p Port
	h, idx, err := decodeHandle(b, func(ad *netlink.AttributeDecoder) {
		switch ad.Type() {
		case unix.DEVLINK_ATTR_PORT_TYPE:
			t := PortType(ad.Uint16())
			p.Type = &t
		case unix.DEVLINK_ATTR_PORT_FLAVOUR:
			f := ad.Uint16()
			p.Flavour = &f
		case unix.DEVLINK_ATTR_PORT_NUMBER:
			n := ad.Uint32()
			p.Number = &n
		case unix.DEVLINK_ATTR_PORT_NETDEV_NAME:
			p.Netdev = ad.String()
		case unix.DEVLINK_ATTR_PORT_NETDEV_IFINDEX:
			p.Ifindex = ad.Uint32()
		case unix.DEVLINK_ATTR_PORT_IBDEV_NAME:
			p.IBDev = ad.String()
		}
	})
	if err == nil && idx == nil {
		err = errors.New("port without an index")
	}
	if err != nil {
		return Port{}, fmt.Errorf("decoding port: %w", err)
	}
	p.Handle, p.Index = h, *idx
	return p, nil
}

func parseInfo(b []byte) (Info, error) {
	var info Info
	h, _, err := decodeHandle(b, func(ad *netlink.AttributeDecoder) {
		var list *[]Version
		switch ad.Type() {
		case unix.DEVLINK_ATTR_INFO_DRIVER_NAME:
			info.Driver = ad.String()
		case unix.DEVLINK_ATTR_INFO_SERIAL_NUMBER:
			info.SerialNumber = ad.String()
		case unix.DEVLINK_ATTR_INFO_BOARD_SERIAL_NUMBER:
			info.BoardSerialNumber = ad.String()
		case unix.DEVLINK_ATTR_INFO_VERSION_FIXED:
			list = &info.Fixed
		case unix.DEVLINK_ATTR_INFO_VERSION_RUNNING:
			list = &info.Running
		case unix.DEVLINK_ATTR_INFO_VERSION_STORED:
			list = &info.Stored
		}
		if list == nil {
			return
		}
		ad.Nested(func(nad *netlink.AttributeDecoder) error {
			var v Version
			for nad.Next() {
				switch nad.Type() {
				case unix.DEVLINK_ATTR_INFO_VERSION_NAME:
					v.Name = nad.String()
				case unix.DEVLINK_ATTR_INFO_VERSION_VALUE:
					v.Value = nad.String()
				}
			}
			if v.Name != "" {
				*list = append(*list, v)
			}
			return nil
		})
	})
	if err != nil {
		return Info{}, fmt.Errorf("decoding device info: %w", err)
	}
	info.Handle = h
	return info, nil
}

// parseReporter decodes a health reporter message: the handle, the port
// index of a port reporter, and the DEVLINK_ATTR_HEALTH_REPORTER nest. now
// is a reading of the clocks taken after the kernel sent the message; it
// places the dump timestamp of kernels that send only the older one.
func parseReporter(b []byte, now kernelClock) (HealthReporter, error) {
	r, ts, err := decodeReporter(b)
	if err != nil {
		return HealthReporter{}, err
	}
	r.LastDump = ts.wallClock(now)
	return r, nil
}

// decodeReporter decodes a health reporter message but leaves LastDump
// to the caller, with the dump timestamps as sent.
func decodeReporter(b []byte) (HealthReporter, dumpTimestamps, error) {
	var r HealthReporter
	var ts dumpTimestamps
	found := false
	h, port, err := decodeHandle(b, func(ad *netlink.AttributeDecoder) {
		if ad.Type() != unix.DEVLINK_ATTR_HEALTH_REPORTER {
			return
		}
		found = true
		ad.Nested(func(nad *netlink.AttributeDecoder) error {
			decodeReporterAttrs(nad, &r, &ts)
			return nil
		})
	})
	switch {
	case err != nil:
	case !found:
		err = errors.New("no health reporter attribute")
	case r.Name == "":
		err = errors.New("health reporter without a name")
	}
	if err != nil {
		return HealthReporter{}, dumpTimestamps{}, fmt.Errorf("decoding health reporter: %w", err)
	}
	r.Handle, r.Port = h, port
	return r, ts, nil
}

func decodeReporterAttrs(ad *netlink.AttributeDecoder, r *HealthReporter, ts *dumpTimestamps) {
	for ad.Next() {
		switch ad.Type() {
		case unix.DEVLINK_ATTR_HEALTH_REPORTER_NAME:
			r.Name = ad.String()
		case unix.DEVLINK_ATTR_HEALTH_REPORTER_STATE:
			s := HealthState(ad.Uint8())
			r.State = &s
		case unix.DEVLINK_ATTR_HEALTH_REPORTER_ERR_COUNT:
			v := ad.Uint64()
			r.ErrorCount = &v
		case unix.DEVLINK_ATTR_HEALTH_REPORTER_RECOVER_COUNT:
			v := ad.Uint64()
			r.RecoverCount = &v
		case unix.DEVLINK_ATTR_HEALTH_REPORTER_GRACEFUL_PERIOD:
			ms := ad.Uint64()
			if ms > uint64(1<<63-1)/uint64(time.Millisecond) {
				ms = uint64(1<<63-1) / uint64(time.Millisecond)
			}
			d := time.Duration(ms) * time.Millisecond
			r.GracefulPeriod = &d
		case unix.DEVLINK_ATTR_HEALTH_REPORTER_AUTO_RECOVER:
			v := ad.Uint8() != 0
			r.AutoRecover = &v
		case unix.DEVLINK_ATTR_HEALTH_REPORTER_AUTO_DUMP:
			v := ad.Uint8() != 0
			r.AutoDump = &v
		case unix.DEVLINK_ATTR_HEALTH_REPORTER_DUMP_TS:
			v := ad.Uint64()
			ts.msecs = &v
		case unix.DEVLINK_ATTR_HEALTH_REPORTER_DUMP_TS_NS:
			v := ad.Uint64()
			ts.realNs = &v
		}
	}
}

// dumpTimestamps are the times of a reporter's stored dump as the kernel
// sends them; both are present only while a dump is stored.
type dumpTimestamps struct {
	// realNs is DEVLINK_ATTR_HEALTH_REPORTER_DUMP_TS_NS: the wall clock
	// at the dump in ns since the epoch (ktime_get_real_ns). Linux 5.4
	// added it and 5.3.12 took it over; 5.1, 5.2 and earlier 5.3
	// releases send only msecs.
	realNs *uint64
	// msecs is DEVLINK_ATTR_HEALTH_REPORTER_DUMP_TS, sent since Linux
	// 5.1: jiffies_to_msecs(jiffies) at the dump, which is the kernel's
	// uptime in ms, less the 300 s by which jiffies start before their
	// 32-bit wrap, modulo 2^32 (jiffies_to_msecs returns an unsigned
	// int).
	msecs *uint64
}

// wallClock returns the time of the dump: realNs when the kernel sent
// it, else msecs placed on the wall clock with now, else nil.
func (ts dumpTimestamps) wallClock(now kernelClock) *time.Time {
	switch {
	case ts.realNs != nil:
		if *ts.realNs > 1<<63-1 {
			return nil
		}
		t := time.Unix(0, int64(*ts.realNs))
		return &t
	case ts.msecs != nil && now.ok:
		t := now.wall.Add(-msecsAge(now.msecs, uint32(*ts.msecs)))
		return &t
	}
	return nil
}

// maxMsecsAhead is how far a dump timestamp on the jiffies clock may lie
// ahead of now.msecs and still count as taken just now: jiffies and the
// monotonic clock that now.msecs comes from differ by some milliseconds.
const maxMsecsAhead = 60_000

// msecsAge returns how long before now a dump at msecs on the jiffies
// clock was taken. The 32-bit clock wraps every 49.7 days: a dump older
// than that is taken for a younger one.
func msecsAge(now, msecs uint32) time.Duration {
	age := now - msecs // modulo 2^32, right across a wrap
	if age > math.MaxUint32-maxMsecsAhead {
		return 0 // a few ms ahead of our reading of the clock
	}
	return time.Duration(age) * time.Millisecond
}

// encodeReporterID writes the attributes that select a reporter.
func encodeReporterID(ae *netlink.AttributeEncoder, id ReporterID) {
	encodeHandle(ae, id.Handle)
	if id.Port != nil {
		ae.Uint32(unix.DEVLINK_ATTR_PORT_INDEX, *id.Port)
	}
	ae.String(unix.DEVLINK_ATTR_HEALTH_REPORTER_NAME, id.Name)
}

func encodeHandle(ae *netlink.AttributeEncoder, h Handle) {
	ae.String(unix.DEVLINK_ATTR_BUS_NAME, h.Bus)
	ae.String(unix.DEVLINK_ATTR_DEV_NAME, h.Device)
}
