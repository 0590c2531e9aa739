package vmastats

import (
	"encoding/binary"
	"fmt"
	"io"
	"net/netip"
)

var le = binary.LittleEndian

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
		ReaderCounter:   int32(le.Uint32(b[OffsetReaderCounter:])),
		ProtocolVer:     string(b[OffsetProtocolVer : OffsetProtocolVer+ProtocolVerLen]),
		LogLevel:        int32(le.Uint32(b[OffsetLogLevel:])),
		LogDetailsLevel: b[OffsetLogDetailsLevel],
		FdDump:          int32(le.Uint32(b[OffsetFdDump:])),
		FdDumpLogLevel:  int32(le.Uint32(b[OffsetFdDumpLogLevel:])),
		MaxSockets:      le.Uint64(b[OffsetMaxSockets:]),
	}
	copy(h.VerInfo[:], b[OffsetVerInfo:OffsetVerInfo+4])
	return h
}

func addr4(b []byte) netip.Addr { return netip.AddrFrom4([4]byte(b[:4])) }

func decodeBlocks(s *Stats, b []byte) {
	for i := 0; i < NumCQs; i++ {
		c := b[OffsetCQs+i*CQSize:]
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
	for i := 0; i < NumRings; i++ {
		r := b[OffsetRings+i*RingSize:]
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
	for i := 0; i < NumBufferPools; i++ {
		p := b[OffsetBufferPools+i*BufferPoolSize:]
		if p[0] == 0 {
			continue
		}
		s.BufferPools = append(s.BufferPools, BufferPool{
			Index: i, IsRx: p[4] != 0, IsTx: p[5] != 0,
			Size: le.Uint32(p[8:]), NoBuffers: le.Uint32(p[0xC:]),
		})
	}

	s.Multicast.MaxGroups = le.Uint16(b[OffsetMulticast:])
	n := min(int(s.Multicast.MaxGroups), MaxMCGroups)
	for i := 0; i < n; i++ {
		e := b[OffsetMulticast+4+i*MCEntrySize:]
		if num := le.Uint32(e); num > 0 {
			s.Multicast.Groups = append(s.Multicast.Groups, MCGroup{Index: i, Sockets: num, Group: addr4(e[4:])})
		}
	}

	s.Iomux.Poll = decodeIomux(b[OffsetIomux:])
	s.Iomux.Select = decodeIomux(b[OffsetIomux+IomuxSize:])
	for i := 0; i < NumEpolls; i++ {
		e := b[OffsetIomux+2*IomuxSize+i*EpollSize:]
		if e[0] == 0 {
			continue
		}
		s.Iomux.Epoll = append(s.Iomux.Epoll, Epoll{Index: i, FD: int32(le.Uint32(e[4:])), IomuxStats: decodeIomux(e[8:])})
	}

	stride := s.Layout.SocketStride()
	off := s.Layout.SocketOffsets()
	// Parse checked the length, so every block of MaxSockets+1 fits; the
	// extra block libvma allocates is never used for a socket.
	for i := 0; i < int(s.MaxSockets); i++ {
		k := b[OffsetSockets+i*stride : OffsetSockets+(i+1)*stride]
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

func decodeSocket(k []byte, slot int, off SocketOffsets) Socket {
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
		RxReadyByteLimit: le.Uint32(k[off.RxReadyByteLimit:]),
		RxZcopyPkts:      le.Uint32(k[off.RxZcopyPkts:]),
		RingAllocLogicRx: int32(le.Uint32(k[off.RingAllocLogic:])),
		RingAllocLogicTx: int32(le.Uint32(k[off.RingAllocLogic+4:])),
		RingUserIDRx:     le.Uint64(k[off.RingUserID:]),
		RingUserIDTx:     le.Uint64(k[off.RingUserID+8:]),
	}
	if off.WideReadyBytes {
		s.RxReadyBytes = le.Uint64(k[off.RxReadyBytes:])
		s.TxReadyBytes = le.Uint64(k[off.TxReadyBytes:])
	} else {
		s.RxReadyBytes = uint64(le.Uint32(k[off.RxReadyBytes:]))
		s.TxReadyBytes = uint64(le.Uint32(k[off.TxReadyBytes:]))
	}
	for i := range s.Counters {
		s.Counters[i] = le.Uint32(k[off.Counters+4*i:])
	}
	// std::bitset<1024> is 16 little-endian 64-bit words.
	for w := 0; w < MaxMCGroups/64; w++ {
		word := le.Uint64(k[off.MCGroupMap+8*w:])
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
