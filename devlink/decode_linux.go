//go:build linux

package devlink

import (
	"errors"
	"fmt"
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
// index of a port reporter, and the DEVLINK_ATTR_HEALTH_REPORTER nest.
func parseReporter(b []byte) (HealthReporter, error) {
	var r HealthReporter
	found := false
	h, port, err := decodeHandle(b, func(ad *netlink.AttributeDecoder) {
		if ad.Type() != unix.DEVLINK_ATTR_HEALTH_REPORTER {
			return
		}
		found = true
		ad.Nested(func(nad *netlink.AttributeDecoder) error {
			decodeReporterAttrs(nad, &r)
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
		return HealthReporter{}, fmt.Errorf("decoding health reporter: %w", err)
	}
	r.Handle, r.Port = h, port
	return r, nil
}

func decodeReporterAttrs(ad *netlink.AttributeDecoder, r *HealthReporter) {
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
		case unix.DEVLINK_ATTR_HEALTH_REPORTER_DUMP_TS_NS:
			ns := ad.Uint64()
			if ns <= 1<<63-1 {
				t := time.Unix(0, int64(ns))
				r.LastDump = &t
			}
		}
	}
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
