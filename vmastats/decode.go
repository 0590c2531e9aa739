package vmastats

import (
	"encoding/binary"
	"fmt"
	"io"
	"net/netip"
)

var le = binary.LittleEndian

// sockOffsets are the offsets inside a socket block that differ between
// layouts, relative to the start of the block (socket_stats_t is at +8).
type sockOffsets struct {
	rxReadyBytes, rxReadyLimit, rxZcopy, txReadyBytes int
	wideReadyBytes                                    bool
	counters, mcMap, ringAlloc, ringUserID            int
}

func (l Layout) sockOffsets() sockOffsets {
	if l == LayoutA {
		return sockOffsets{
			rxReadyBytes: 8 + 0x30, rxReadyLimit: 8 + 0x34, rxZcopy: 8 + 0x38, txReadyBytes: 8 + 0x3C,
			counters: 8 + 0x40, mcMap: 8 + 0xB0, ringAlloc: 8 + 0x130, ringUserID: 8 + 0x138,
		}
	}
	return sockOffsets{
		rxReadyBytes: 8 + 0x30, rxReadyLimit: 8 + 0x38, rxZcopy: 8 + 0x3C, txReadyBytes: 8 + 0x40,
		wideReadyBytes: true,
		counters:       8 + 0x48, mcMap: 8 + 0xB8, ringAlloc: 8 + 0x138, ringUserID: 8 + 0x140,
	}
}

// Parse decodes a complete statistics file. The length of b must be
// exactly the size the header's version and socket count imply. Parse
// never panics and never allocates more than a bounded amount, whatever
// b holds.
func Parse(b []byte) (*Stats, error) {
	v, h, size, err := Identify(b)
	if err != nil {
		return nil, err
	}
	if int64(len(b)) != size {
		return nil, fmt.Errorf("%w: %d bytes, but libvma %s (layout %s) with %d sockets writes %d", ErrUnsupported, len(b), h.Version(), v.Layout, h.MaxSockets, size)
	}
	s := &Stats{Header: h, RingEnum: v.Rings}
	decodeBlocks(s, b)
	return s, nil
}

// ParseReaderAt reads size bytes from r into private memory and decodes
// them with Parse.
func ParseReaderAt(r io.ReaderAt, size int64) (*Stats, error) {
	if size < HeaderSize || size > FileSize(LayoutB, MaxSockets) {
		return nil, fmt.Errorf("%w: size %d is outside the range of any layout", ErrUnsupported, size)
	}
	b := make([]byte, size)
	if _, err := r.ReadAt(b, 0); err != nil {
		return nil, fmt.Errorf("reading libvma statistics: %w", err)
	}
	return Parse(b)
}

func decodeHeader(b []byte) Header {
	h := Header{
		ReaderCounter:   int32(le.Uint32(b[offReaderCounter:])),
		ProtocolVer:     string(b[offProtocolVer : offProtocolVer+protocolVerLen]),
		LogLevel:        int32(le.Uint32(b[offLogLevel:])),
		LogDetailsLevel: b[offLogDetails],
		FdDump:          int32(le.Uint32(b[offFdDump:])),
		FdDumpLogLevel:  int32(le.Uint32(b[offFdDumpLevel:])),
		MaxSockets:      le.Uint64(b[offMaxSockets:]),
	}
	copy(h.VerInfo[:], b[offVerInfo:offVerInfo+4])
	return h
}

func addr4(b []byte) netip.Addr { return netip.AddrFrom4([4]byte(b[:4])) }

func decodeBlocks(s *Stats, b []byte) {
	for i := 0; i < numCQ; i++ {
		c := b[offCQ+i*sizeCQ:]
		if c[0] == 0 {
			continue
		}
		s.CQs = append(s.CQs, CQ{
			Index:              i,
			RxPktDrop:          le.Uint64(c[8:]),
			RxSWQueueLen:       le.Uint32(c[0x10:]),
			RxDrainedAtOnceMax: le.Uint32(c[0x14:]),
			BufferPoolLen:      le.Uint32(c[0x18:]),
		})
	}
	for i := 0; i < numRing; i++ {
		r := b[offRing+i*sizeRing:]
		if r[0] == 0 {
			continue
		}
		ring := Ring{
			Index:         i,
			RxPackets:     le.Uint64(r[8:]),
			RxBytes:       le.Uint64(r[0x10:]),
			TxPackets:     le.Uint64(r[0x18:]),
			TxBytes:       le.Uint64(r[0x20:]),
			TxRetransmits: le.Uint64(r[0x28:]),
			Master:        le.Uint64(r[0x30:]),
			RawType:       int32(le.Uint32(r[0x38:])),
		}
		ring.Type = ringType(s.RingEnum, ring.RawType)
		u := r[0x40:]
		if ring.Type == RingTAP {
			ring.Tap = &RingTap{
				Name:       cString(u[:16]),
				FD:         le.Uint32(u[0x10:]),
				RxBuffers:  le.Uint32(u[0x14:]),
				VFPlugouts: le.Uint32(u[0x18:]),
			}
		} else {
			ring.Simple = &RingSimple{
				RxInterruptRequests:  le.Uint64(u[0:]),
				RxInterruptReceived:  le.Uint64(u[8:]),
				RxCQModerationCount:  le.Uint32(u[0x10:]),
				RxCQModerationPeriod: le.Uint32(u[0x14:]),
				TxDevMemPackets:      le.Uint64(u[0x18:]),
				TxDevMemBytes:        le.Uint64(u[0x20:]),
				TxDevMemOOB:          le.Uint64(u[0x28:]),
				TxDevMemAllocated:    le.Uint32(u[0x30:]),
			}
		}
		s.Rings = append(s.Rings, ring)
	}
	for i := 0; i < numBpool; i++ {
		p := b[offBpool+i*sizeBpool:]
		if p[0] == 0 {
			continue
		}
		s.BufferPools = append(s.BufferPools, BufferPool{
			Index: i, IsRx: p[4] != 0, IsTx: p[5] != 0,
			Size: le.Uint32(p[8:]), NoBuffers: le.Uint32(p[0xC:]),
		})
	}

	s.Multicast.MaxGroups = le.Uint16(b[offMC:])
	n := min(int(s.Multicast.MaxGroups), maxMCGroups)
	for i := 0; i < n; i++ {
		e := b[offMC+4+i*sizeMCEntry:]
		if num := le.Uint32(e); num > 0 {
			s.Multicast.Groups = append(s.Multicast.Groups, MCGroup{Index: i, Sockets: num, Group: addr4(e[4:])})
		}
	}

	s.Iomux.Poll = decodeIomux(b[offIomux:])
	s.Iomux.Select = decodeIomux(b[offIomux+0x20:])
	for i := 0; i < numEpoll; i++ {
		e := b[offIomux+0x40+i*sizeEpoll:]
		if e[0] == 0 {
			continue
		}
		s.Iomux.Epoll = append(s.Iomux.Epoll, Epoll{Index: i, FD: int32(le.Uint32(e[4:])), IomuxStats: decodeIomux(e[8:])})
	}

	stride := s.Layout.SocketStride()
	off := s.Layout.sockOffsets()
	// Parse checked the length, so every block of MaxSockets+1 fits; the
	// extra block libvma allocates is never used for a socket.
	for i := 0; i < int(s.MaxSockets); i++ {
		k := b[offSockets+i*stride : offSockets+(i+1)*stride]
		if k[0] == 0 {
			continue
		}
		s.Sockets = append(s.Sockets, decodeSocket(k, i, off))
	}
}

func decodeIomux(b []byte) IomuxStats {
	return IomuxStats{
		ThreadIDLast: int32(le.Uint32(b)),
		PollHit:      le.Uint32(b[4:]),
		PollMiss:     le.Uint32(b[8:]),
		Timeouts:     le.Uint32(b[0xC:]),
		Errors:       le.Uint32(b[0x10:]),
		RxReady:      le.Uint32(b[0x14:]),
		OSRxReady:    le.Uint32(b[0x18:]),
		PollingTime:  le.Uint32(b[0x1C:]),
	}
}

func decodeSocket(k []byte, slot int, off sockOffsets) Socket {
	st := k[8:]
	s := Socket{
		Slot:             slot,
		FD:               int32(le.Uint32(st[0:])),
		Inode:            le.Uint32(st[4:]),
		TCPState:         le.Uint32(st[8:]),
		Type:             st[0xC],
		Offloaded:        st[0x10] != 0,
		Blocking:         st[0x11] != 0,
		MCLoop:           st[0x12] != 0,
		BoundIf:          addr4(st[0x14:]),
		ConnectedIP:      addr4(st[0x18:]),
		MCTxIf:           addr4(st[0x1C:]),
		BoundPort:        binary.BigEndian.Uint16(st[0x20:]),
		ConnectedPort:    binary.BigEndian.Uint16(st[0x22:]),
		ThreadIDLastRx:   int32(le.Uint32(st[0x24:])),
		ThreadIDLastTx:   int32(le.Uint32(st[0x28:])),
		RxReadyPkts:      le.Uint32(st[0x2C:]),
		RxReadyByteLimit: le.Uint32(k[off.rxReadyLimit:]),
		RxZcopyPkts:      le.Uint32(k[off.rxZcopy:]),
		RingAllocLogicRx: int32(le.Uint32(k[off.ringAlloc:])),
		RingAllocLogicTx: int32(le.Uint32(k[off.ringAlloc+4:])),
		RingUserIDRx:     le.Uint64(k[off.ringUserID:]),
		RingUserIDTx:     le.Uint64(k[off.ringUserID+8:]),
	}
	if off.wideReadyBytes {
		s.RxReadyBytes = le.Uint64(k[off.rxReadyBytes:])
		s.TxReadyBytes = le.Uint64(k[off.txReadyBytes:])
	} else {
		s.RxReadyBytes = uint64(le.Uint32(k[off.rxReadyBytes:]))
		s.TxReadyBytes = uint64(le.Uint32(k[off.txReadyBytes:]))
	}
	for i := range s.Counters {
		s.Counters[i] = le.Uint32(k[off.counters+4*i:])
	}
	// std::bitset<1024> is 16 little-endian 64-bit words.
	for w := 0; w < maxMCGroups/64; w++ {
		word := le.Uint64(k[off.mcMap+8*w:])
		for bit := 0; word != 0 && bit < 64; bit++ {
			if word&(1<<bit) != 0 {
				s.MCGroups = append(s.MCGroups, w*64+bit)
				word &^= 1 << bit
			}
		}
	}
	return s
}

// cString returns the bytes of b up to the first NUL.
func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
