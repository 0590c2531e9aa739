package xliostats

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"net/netip"
	"strings"
)

var le = binary.LittleEndian

// mcGroupBits is the size of a socket's mc_grp_map, the entries of the
// multicast table.
const mcGroupBits = 1024

// AF_INET6 on Linux; sa_family and an mc entry's m_family use it.
const afInet6 = 10

// readField reads one scalar member at its offset in b.
func readField(b []byte, f field) uint64 {
	switch f.size {
	case 1:
		return uint64(b[f.off])
	case 2:
		return uint64(le.Uint16(b[f.off:]))
	case 4:
		return uint64(le.Uint32(b[f.off:]))
	}
	return le.Uint64(b[f.off:])
}

func (l *Layout) get(b []byte, name string) uint64 { return readField(b, l.header[name]) }

// MinSize and MaxSize bound the size of any file of a known layout; Load
// reads nothing of a file outside them.
var MinSize, MaxSize = func() (int64, int64) {
	lo, hi := int64(1)<<62, int64(0)
	for _, pair := range summaries {
		for _, l := range pair {
			lo = min(lo, int64(l.size))
			hi = max(hi, int64(l.size)+MaxSockets*int64(l.socketStride))
		}
	}
	return lo, hi
}()

// isMD5 reports whether s looks like a protocol string: 32 lowercase hex
// characters.
func isMD5(s string) bool {
	if len(s) != protocolLen {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Identify finds the layout of a whole file b. It looks for a known
// protocol string at every offset any layout keeps it at (8 before 3.60,
// 12 on the 3.94x DOCA line, 40200 and 41224 from 3.60), accepts an md5
// only at its own table's offset, then requires that exactly one of the
// table's two build variants (UTLS off and on) satisfy the size equation
// len(b) = sizeof(sh_mem_t) + max_skt_inst_num × sizeof(socket block),
// and that ver_info names a release of that protocol string. Anything else
// is an error wrapping ErrUnsupported or ErrMalformed, whose text says why.
func Identify(b []byte) (Header, error) {
	if int64(len(b)) < MinSize {
		return Header{}, fmt.Errorf("%w: %d bytes, less than any libxlio layout (%d)", ErrMalformed, len(b), MinSize)
	}
	if int64(len(b)) > MaxSize {
		return Header{}, fmt.Errorf("%w: %d bytes, more than any libxlio layout with %d sockets (%d)", ErrUnsupported, len(b), MaxSockets, MaxSize)
	}
	var seen []string
	offs := protocolOffsets()
	for _, off := range offs {
		if off+protocolLen > len(b) {
			continue
		}
		md5 := string(b[off : off+protocolLen])
		v, ok := LookupVersion(md5)
		if !ok {
			if isMD5(md5) {
				seen = append(seen, fmt.Sprintf("%s at %d", md5, off))
			}
			continue
		}
		if v.Layout == "" {
			return Header{}, fmt.Errorf("%w: protocol %s (libxlio %s) is known, but its layout was never extracted", ErrUnsupported, md5, v.Releases)
		}
		if summaries[v.Layout][0].protocolOff != off {
			continue // a known md5, but not where its own table keeps it
		}
		pair, err := layoutPair(v.Layout)
		if err != nil {
			return Header{}, fmt.Errorf("%w: %v", ErrUnsupported, err)
		}
		return identifyVariant(b, v, pair)
	}
	if len(seen) > 0 {
		return Header{}, fmt.Errorf("%w: unknown protocol %s (known: libxlio 2.0.6 to 3.70.2)", ErrUnsupported, strings.Join(seen, ", "))
	}
	return Header{}, fmt.Errorf("%w: no protocol string at any known offset %v (known: libxlio 2.0.6 to 3.70.2)", ErrUnsupported, offs)
}

// identifyVariant picks the build variant of pair that the size of b
// fits, and checks ver_info.
func identifyVariant(b []byte, v Version, pair [2]*Layout) (Header, error) {
	var match []*Layout
	var sizes []string
	for _, l := range pair {
		if l.MaxSocketsOffset()+8 > len(b) {
			continue
		}
		n := l.get(b, "max_skt_inst_num")
		ok := n <= MaxSockets && int64(len(b)) == l.FileSize(int(n))
		if ok {
			match = append(match, l)
		}
		sizes = append(sizes, fmt.Sprintf("%d+%d×%d", l.Size, n, l.SocketStride))
	}
	if len(match) != 1 {
		what := "neither"
		if len(match) > 1 {
			what = "both"
		}
		return Header{}, fmt.Errorf("%w: libxlio %s (protocol %s): %d bytes fit %s UTLS variant of layout %s (%s)",
			ErrUnsupported, v.Releases, v.MD5, len(b), what, v.Family, strings.Join(sizes, " or "))
	}
	l := match[0]
	h := Header{
		ReaderCounter: int32(l.get(b, "reader_counter")),
		Major:         uint16(l.get(b, "ver_info.xlio_lib_maj")),
		Minor:         uint16(l.get(b, "ver_info.xlio_lib_min")),
		Revision:      uint16(l.get(b, "ver_info.xlio_lib_rev")),
		Release:       uint16(l.get(b, "ver_info.xlio_lib_rel")),
		ProtocolVer:   v.MD5,
		MaxSockets:    l.get(b, "max_skt_inst_num"),
		Known:         v,
		Layout:        l,
	}
	if _, ok := l.header["log_level"]; ok {
		h.LogLevel = int32(l.get(b, "log_level"))
	}
	if _, ok := l.header["log_details_level"]; ok {
		h.LogDetailsLevel = uint8(l.get(b, "log_details_level"))
	}
	for _, m := range v.Minors {
		if m == [2]uint16{h.Major, h.Minor} {
			return h, nil
		}
	}
	return Header{}, fmt.Errorf("%w: ver_info says libxlio %s, but protocol %s is written by %s", ErrUnsupported, h.Version(), v.MD5, v.Releases)
}

// Parse decodes a complete statistics file. It never panics and allocates
// at most a bounded amount, whatever b holds.
func Parse(b []byte) (*Stats, error) {
	h, err := Identify(b)
	if err != nil {
		return nil, err
	}
	s := &Stats{Header: h}
	decodeBlocks(s, b)
	return s, nil
}

func enabled(k *blockKind, blk []byte) bool { return k.enabled < 0 || blk[k.enabled] != 0 }

func values(k *blockKind, blk []byte) Values {
	raw := make([]uint64, len(k.fields))
	for i, f := range k.fields {
		raw[i] = readField(blk, f)
	}
	return Values{kind: k, raw: raw}
}

// blocks returns the enabled blocks of k, at most n of them counted from
// the start.
func blocks(k *blockKind, b []byte, n int) []Block {
	if k.base < 0 {
		return nil
	}
	var out []Block
	for i := 0; i < min(n, k.count); i++ {
		blk := b[k.base+i*k.stride : k.base+(i+1)*k.stride]
		if enabled(k, blk) {
			out = append(out, Block{Index: i, Values: values(k, blk)})
		}
	}
	return out
}

// addr reads a 16-byte ip_address: IPv6 when family is AF_INET6, else
// IPv4 in the first 4 bytes.
func addr(b []byte, family uint64) netip.Addr {
	if family == afInet6 {
		return netip.AddrFrom16([16]byte(b[:16]))
	}
	return netip.AddrFrom4([4]byte(b[:4]))
}

// cString returns the bytes of b up to the first NUL, with bytes outside
// printable ASCII replaced.
func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			b = b[:i]
			break
		}
	}
	out := []byte(string(b))
	for i, c := range out {
		if c < 0x20 || c > 0x7e {
			out[i] = '?'
		}
	}
	return string(out)
}

func decodeBlocks(s *Stats, b []byte) {
	l := s.Layout
	s.CQs = blocks(&l.cq, b, l.cq.count)
	for _, r := range blocks(&l.ring, b, l.ring.count) {
		ring := Ring{Block: r, Type: "RING_ETH"}
		if l.ringTypes != nil {
			t, _ := r.Int("n_type")
			name, ok := l.ringTypes[t]
			if !ok {
				name = "RING_UNKNOWN"
			}
			ring.Type = name
			if name == "RING_TAP" && l.extra.tapName >= 0 {
				off := l.ring.base + r.Index*l.ring.stride + l.extra.tapName
				ring.TapName = cString(b[off : off+16])
			}
		}
		s.Rings = append(s.Rings, ring)
	}
	s.BufferPools = blocks(&l.bpool, b, l.bpool.count)
	s.EntityContexts = blocks(&l.entCtx, b, l.entCtx.count)
	if g := blocks(&l.global, b, 1); len(g) == 1 {
		s.Global = &g[0]
	}
	if l.poll.base >= 0 {
		s.Poll = values(&l.poll, b[l.poll.base:])
	}
	if l.sel.base >= 0 {
		s.Select = values(&l.sel, b[l.sel.base:])
	}
	for _, e := range blocks(&l.epoll, b, l.epoll.count) {
		fd, _ := e.Int("epfd")
		s.Epoll = append(s.Epoll, Epoll{Block: e, FD: int32(fd)})
	}

	s.MaxGroups = uint16(l.get(b, "mc_info.max_grp_num"))
	for i := 0; i < min(int(s.MaxGroups), l.mc.count); i++ {
		e := b[l.mc.base+i*l.mc.stride:]
		v := values(&l.mc, e[:l.mc.stride])
		num, _ := v.Get("sock_num")
		if num == 0 {
			continue
		}
		g := e[l.extra.mcGroup:]
		s.Groups = append(s.Groups, MCGroup{Index: i, Sockets: uint32(num), Group: addr(g, uint64(le.Uint16(g[16:])))})
	}

	k := &l.socket
	// Identify checked the size, so every one of the MaxSockets+1 blocks
	// fits; the last one libxlio allocates is never used for a socket.
	for i := 0; i < int(s.MaxSockets); i++ {
		blk := b[k.base+i*k.stride : k.base+(i+1)*k.stride]
		if blk[0] == 0 {
			continue
		}
		s.Sockets = append(s.Sockets, decodeSocket(l, blk, i))
	}
}

func decodeSocket(l *Layout, blk []byte, slot int) Socket {
	v := values(&l.socket, blk)
	u := func(name string) uint64 { x, _ := v.Get(name); return x }
	fd, _ := v.Int("fd")
	family := u("sa_family")
	s := Socket{
		Slot:          slot,
		FD:            int32(fd),
		Inode:         uint32(u("inode")),
		TCPState:      uint32(u("tcp_state")),
		Type:          uint8(u("socket_type")),
		Offloaded:     u("b_is_offloaded") != 0,
		Blocking:      u("b_blocking") != 0,
		MCLoop:        u("b_mc_loop") != 0,
		BoundIf:       addr(blk[l.extra.boundIf:], family),
		ConnectedIP:   addr(blk[l.extra.connectedIP:], family),
		BoundPort:     bits.ReverseBytes16(uint16(u("bound_port"))),
		ConnectedPort: bits.ReverseBytes16(uint16(u("connected_port"))),
		Values:        v,
	}
	if l.extra.mcTxIf >= 0 {
		s.MCTxIf = addr(blk[l.extra.mcTxIf:], family)
	}
	// std::bitset<1024> (one bit per multicast table entry) is 16
	// little-endian 64-bit words.
	for w := 0; w < mcGroupBits/64; w++ {
		word := le.Uint64(blk[l.extra.mcMap+8*w:])
		for word != 0 {
			bit := bits.TrailingZeros64(word)
			s.MCGroups = append(s.MCGroups, w*64+bit)
			word &^= 1 << bit
		}
	}
	return s
}
