package rtnl

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/mdlayher/netlink"
)

// StatNames names the fields of struct rtnl_link_stats64
// (include/uapi/linux/if_link.h) in the kernel's order: field i is the
// 64-bit value at byte offset 8*i of IFLA_STATS64. The first 23 are in
// every kernel that has IFLA_STATS64; rx_nohandler came with Linux 4.6
// and rx_otherhost_dropped with 5.19, so a message may hold fewer than
// NumStats values (Link.NStats says how many).
var StatNames = [NumStats]string{
	"rx_packets", "tx_packets", "rx_bytes", "tx_bytes",
	"rx_errors", "tx_errors", "rx_dropped", "tx_dropped",
	"multicast", "collisions",
	"rx_length_errors", "rx_over_errors", "rx_crc_errors",
	"rx_frame_errors", "rx_fifo_errors", "rx_missed_errors",
	"tx_aborted_errors", "tx_carrier_errors", "tx_fifo_errors",
	"tx_heartbeat_errors", "tx_window_errors",
	"rx_compressed", "tx_compressed",
	"rx_nohandler", "rx_otherhost_dropped",
}

// NumStats is the number of struct rtnl_link_stats64 fields this package
// knows; a newer kernel's extra trailing fields are ignored.
const NumStats = 25

// minStats is the number of fields of the oldest struct
// rtnl_link_stats64 (before rx_nohandler, Linux 4.6).
const minStats = 23

// OperUp is IF_OPER_UP, the RFC 2863 operational state "up"
// (include/uapi/linux/if.h); golang.org/x/sys/unix does not define it.
const OperUp = 6

// Link is one interface of an RTM_GETLINK dump. Attributes the kernel did
// not send have their Has flag false.
type Link struct {
	Index int
	Name  string
	// Flags are the IFF_* flags of struct ifinfomsg (IFF_UP is the
	// administrative state).
	Flags uint32

	HasOperState bool
	// OperState is the RFC 2863 state, IF_OPER_* (6 is up).
	OperState uint8

	HasMTU bool
	MTU    uint32

	HasCarrier bool
	Carrier    bool

	HasCarrierChanges bool
	CarrierChanges    uint32

	// HasCarrierUpDown is true if the kernel sent IFLA_CARRIER_UP_COUNT
	// and IFLA_CARRIER_DOWN_COUNT (Linux 4.16).
	HasCarrierUpDown bool
	CarrierUp        uint32
	CarrierDown      uint32

	// Address is the hardware address (IFLA_ADDRESS); nil when the
	// kernel sent none.
	Address []byte

	// ParentDev and ParentBus name the device the interface belongs to
	// and its bus, as /sys/bus/<ParentBus>/devices/<ParentDev>
	// (IFLA_PARENT_DEV_NAME and IFLA_PARENT_DEV_BUS_NAME, Linux 5.17):
	// "0000:08:00.1" and "pci" for a PCI function, "virtio2" and
	// "virtio" for virtio-net. Empty for virtual interfaces and on older
	// kernels.
	ParentDev, ParentBus string

	// NStats is how many leading fields of Stats the kernel sent in
	// IFLA_STATS64: 0 without that attribute, else minStats to NumStats.
	NStats int
	Stats  [NumStats]uint64
}

// ErrTruncated says a dump message or attribute is shorter than its
// kind requires.
var ErrTruncated = errors.New("truncated rtnetlink message")

// ParseLink decodes the payload of one RTM_NEWLINK message: struct
// ifinfomsg and its attributes.
//
// IFLA_STATS64 is decoded by hand rather than with a struct cast or a
// third-party rtnetlink library: its length grew twice (rx_nohandler,
// rx_otherhost_dropped), so each field is read only if the attribute is
// long enough to hold it, and fields are read at the offsets of
// include/uapi/linux/if_link.h (field i at byte 8*i, native byte order).
func ParseLink(b []byte) (Link, error) {
	var l Link
	if len(b) < sizeofIfInfomsg {
		return l, fmt.Errorf("ifinfomsg of %d bytes: %w", len(b), ErrTruncated)
	}
	// struct ifinfomsg: family u8, pad u8, type u16, index s32, flags u32, change u32.
	l.Index = int(int32(binary.NativeEndian.Uint32(b[4:8])))
	l.Flags = binary.NativeEndian.Uint32(b[8:12])
	ad, err := netlink.NewAttributeDecoder(b[sizeofIfInfomsg:])
	if err != nil {
		return l, fmt.Errorf("link %d attributes: %w", l.Index, err)
	}
	var up, down bool
	for ad.Next() {
		data := ad.Bytes()
		switch ad.Type() {
		case iflaIfname:
			l.Name = ad.String()
		case iflaAddress:
			if len(data) > 0 {
				l.Address = append([]byte(nil), data...)
			}
		case iflaParentDevName:
			l.ParentDev = ad.String()
		case iflaParentDevBusName:
			l.ParentBus = ad.String()
		case iflaOperstate:
			if len(data) >= 1 {
				l.HasOperState, l.OperState = true, data[0]
			}
		case iflaMTU:
			l.HasMTU, l.MTU = u32(data)
		case iflaCarrier:
			if len(data) >= 1 {
				l.HasCarrier, l.Carrier = true, data[0] != 0
			}
		case iflaCarrierChanges:
			l.HasCarrierChanges, l.CarrierChanges = u32(data)
		case iflaCarrierUpCount:
			up, l.CarrierUp = u32(data)
		case iflaCarrierDownCount:
			down, l.CarrierDown = u32(data)
		case iflaStats64:
			n := len(data) / 8
			if n < minStats {
				return l, fmt.Errorf("link %d IFLA_STATS64 of %d bytes: %w", l.Index, len(data), ErrTruncated)
			}
			n = min(n, NumStats)
			for i := range n {
				l.Stats[i] = binary.NativeEndian.Uint64(data[8*i:])
			}
			l.NStats = n
		}
	}
	if err := ad.Err(); err != nil {
		return l, fmt.Errorf("link %d attributes: %w", l.Index, err)
	}
	l.HasCarrierUpDown = up && down
	return l, nil
}

// u32 reads a native-endian 32-bit attribute; ok is false if it is too
// short.
func u32(b []byte) (bool, uint32) {
	if len(b) < 4 {
		return false, 0
	}
	return true, binary.NativeEndian.Uint32(b)
}
