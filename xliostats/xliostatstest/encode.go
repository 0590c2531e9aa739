package xliostatstest

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"net/netip"

	"github.com/nic-exporter/nic_exporter/xliostats"
)

// File is a statistics file being written, through the offset table of
// its layout: the same table the decoder reads it with.
type File struct {
	Layout *xliostats.Layout
	// B is the file's content.
	B []byte
}

// NewFile returns the file libxlio's xlio_shmem_stats_open writes for a
// library of protocol md5 (built with or without UTLS), version ver
// (major, minor, revision, release) and the given socket slots: zeros,
// then ver_info, the protocol string, log_level and fd_dump_log_level
// (VLOG_DEFAULT, 3), max_skt_inst_num and the global block's b_enabled.
// A test checks it byte for byte against the files real libxlio builds
// wrote on a host without an RDMA device.
func NewFile(md5 string, utls bool, ver [4]uint16, sockets int) (*File, error) {
	l, _, ok := xliostats.LookupLayout(md5, utls)
	if !ok {
		return nil, fmt.Errorf("no layout for protocol %q", md5)
	}
	if sockets < 0 || sockets > xliostats.MaxSockets {
		return nil, fmt.Errorf("%d socket slots", sockets)
	}
	f := &File{Layout: l, B: make([]byte, l.FileSize(sockets))}
	for i, name := range []string{"ver_info.xlio_lib_maj", "ver_info.xlio_lib_min", "ver_info.xlio_lib_rev", "ver_info.xlio_lib_rel"} {
		if err := f.Set("", 0, name, uint64(ver[i])); err != nil {
			return nil, err
		}
	}
	off, _, _ := l.Member("", 0, "stats_protocol_ver")
	copy(f.B[off:], md5)
	for name, v := range map[string]uint64{"log_level": 3, "fd_dump_log_level": 3, "max_skt_inst_num": uint64(sockets)} {
		if err := f.Set("", 0, name, v); err != nil {
			return nil, err
		}
	}
	if err := f.Enable("global_inst_arr", 0); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *File) member(array string, index int, name string) (int, int, error) {
	off, size, ok := f.Layout.Member(array, index, name)
	if !ok || off+size > len(f.B) {
		return 0, 0, fmt.Errorf("layout %s has no %s[%d].%s", f.Layout.Name, array, index, name)
	}
	return off, size, nil
}

// Set writes v, little-endian, into a scalar member (see
// xliostats.Layout.Member for the names).
func (f *File) Set(array string, index int, name string, v uint64) error {
	off, size, err := f.member(array, index, name)
	if err != nil {
		return err
	}
	switch size {
	case 1:
		f.B[off] = byte(v)
	case 2:
		binary.LittleEndian.PutUint16(f.B[off:], uint16(v))
	case 4:
		binary.LittleEndian.PutUint32(f.B[off:], uint32(v))
	case 8:
		binary.LittleEndian.PutUint64(f.B[off:], v)
	default:
		return fmt.Errorf("%s.%s is not a scalar (%d bytes)", array, name, size)
	}
	return nil
}

// SetAll writes several scalar members of one element.
func (f *File) SetAll(array string, index int, values map[string]uint64) error {
	for name, v := range values {
		if err := f.Set(array, index, name, v); err != nil {
			return err
		}
	}
	return nil
}

// Enable sets an element's b_enabled (or an epoll entry's enabled) flag.
func (f *File) Enable(array string, index int) error {
	err := f.Set(array, index, "b_enabled", 1)
	if err != nil {
		err = f.Set(array, index, "enabled", 1)
	}
	return err
}

// SetPort writes a port in network byte order, as libxlio stores
// bound_port and connected_port.
func (f *File) SetPort(slot int, name string, port uint16) error {
	return f.Set("skt_inst_arr", slot, name, uint64(bits.ReverseBytes16(port)))
}

// SetAddr writes a 16-byte ip_address member (IPv4 in the first 4
// bytes).
func (f *File) SetAddr(array string, index int, name string, a netip.Addr) error {
	off, size, err := f.member(array, index, name)
	if err != nil {
		return err
	}
	if size < 16 {
		return fmt.Errorf("%s.%s is not an address", array, name)
	}
	clear(f.B[off : off+16])
	if a.Is4() {
		b := a.As4()
		copy(f.B[off:], b[:])
	} else {
		b := a.As16()
		copy(f.B[off:], b[:])
	}
	return nil
}

// AddGroup writes entry index of the multicast table (the way
// xlio_stats_mc_group_add does) and marks it in the socket's mc_grp_map.
func (f *File) AddGroup(index int, group netip.Addr, slot int) error {
	if err := f.SetAddr("mc_info.mc_grp_tbl", index, "mc_grp", group); err != nil {
		return err
	}
	off, _, err := f.member("mc_info.mc_grp_tbl", index, "mc_grp")
	if err != nil {
		return err
	}
	family := uint16(2) // AF_INET
	if !group.Is4() {
		family = 10
	}
	binary.LittleEndian.PutUint16(f.B[off+16:], family)
	n, _ := f.get("mc_info.mc_grp_tbl", index, "sock_num")
	if err := f.Set("mc_info.mc_grp_tbl", index, "sock_num", n+1); err != nil {
		return err
	}
	max, _ := f.get("", 0, "mc_info.max_grp_num")
	if uint64(index) >= max {
		if err := f.Set("", 0, "mc_info.max_grp_num", uint64(index+1)); err != nil {
			return err
		}
	}
	moff, _, err := f.member("skt_inst_arr", slot, "mc_grp_map")
	if err != nil {
		return err
	}
	f.B[moff+index/8] |= 1 << (index % 8)
	return nil
}

func (f *File) get(array string, index int, name string) (uint64, error) {
	off, size, err := f.member(array, index, name)
	if err != nil {
		return 0, err
	}
	var v uint64
	for i := size - 1; i >= 0; i-- {
		v = v<<8 | uint64(f.B[off+i])
	}
	return v, nil
}
