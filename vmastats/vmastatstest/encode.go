// Package vmastatstest writes libvma statistics files for tests, as
// net/http/httptest serves HTTP for them. Encode renders a vmastats.Stats
// in the byte layout libvma writes, and Publisher keeps such a file
// mapped and rewrites it in place the way a running libvma application
// does. The exporter never writes a statistics file beyond its reader
// counter; outside tests, only the demo host and the scale benchmark's
// simulated host use this package.
package vmastatstest

import (
	"encoding/binary"
	"fmt"

	"github.com/nic-exporter/nic_exporter/vmastats"
)

var le = binary.LittleEndian

// Encode writes s in its Layout as libvma would: a file of exactly
// vmastats.FileSize(s.Layout, s.MaxSockets) bytes with the enabled flag
// set on every block s holds and the reader counter zero. For any s that
// vmastats.Parse returned, parsing the result gives s back apart from
// the reader counter.
func Encode(s *vmastats.Stats) ([]byte, error) {
	stride := s.Layout.SocketStride()
	if stride == 0 {
		return nil, fmt.Errorf("encode: unknown layout %v", s.Layout)
	}
	if len(s.ProtocolVer) != vmastats.ProtocolVerLen {
		return nil, fmt.Errorf("encode: stats_protocol_ver %q is not 32 characters", s.ProtocolVer)
	}
	if s.MaxSockets > vmastats.MaxSockets {
		return nil, fmt.Errorf("encode: %d sockets exceed %d", s.MaxSockets, vmastats.MaxSockets)
	}
	b := make([]byte, vmastats.FileSize(s.Layout, int(s.MaxSockets)))
	if err := EncodeInto(b, s); err != nil {
		return nil, err
	}
	return b, nil
}

// EncodeInto is Encode into an existing buffer of the right size, such as
// a shared mapping; it leaves the reader counter untouched.
func EncodeInto(b []byte, s *vmastats.Stats) error {
	if want := vmastats.FileSize(s.Layout, int(s.MaxSockets)); int64(len(b)) != want || s.Layout.SocketStride() == 0 {
		return fmt.Errorf("encode: buffer of %d bytes, layout %v needs %d", len(b), s.Layout, want)
	}
	clear(b[vmastats.OffsetVerInfo:])
	copy(b[vmastats.OffsetVerInfo:], s.VerInfo[:])
	copy(b[vmastats.OffsetProtocolVer:vmastats.OffsetProtocolVer+vmastats.ProtocolVerLen], s.ProtocolVer)
	le.PutUint32(b[vmastats.OffsetLogLevel:], uint32(s.LogLevel))
	b[vmastats.OffsetLogDetailsLevel] = s.LogDetailsLevel
	le.PutUint32(b[vmastats.OffsetFdDump:], uint32(s.FdDump))
	le.PutUint32(b[vmastats.OffsetFdDumpLogLevel:], uint32(s.FdDumpLogLevel))
	le.PutUint64(b[vmastats.OffsetMaxSockets:], s.MaxSockets)

	for _, c := range s.CQs {
		if c.Index < 0 || c.Index >= vmastats.NumCQs {
			return fmt.Errorf("encode: CQ index %d out of range", c.Index)
		}
		p := b[vmastats.OffsetCQs+c.Index*vmastats.CQSize:]
		p[0] = 1
		le.PutUint64(p[8:], c.RxPktDrop)
		le.PutUint32(p[0x10:], c.RxSWQueueLen)
		le.PutUint32(p[0x14:], c.RxDrainedAtOnceMax)
		le.PutUint32(p[0x18:], c.BufferPoolLen)
	}
	for _, r := range s.Rings {
		if r.Index < 0 || r.Index >= vmastats.NumRings {
			return fmt.Errorf("encode: ring index %d out of range", r.Index)
		}
		p := b[vmastats.OffsetRings+r.Index*vmastats.RingSize:]
		p[0] = 1
		le.PutUint64(p[8:], r.RxPackets)
		le.PutUint64(p[0x10:], r.RxBytes)
		le.PutUint64(p[0x18:], r.TxPackets)
		le.PutUint64(p[0x20:], r.TxBytes)
		le.PutUint64(p[0x28:], r.TxRetransmits)
		le.PutUint64(p[0x30:], r.Master)
		raw := r.RawType
		if r.Type != vmastats.RingUnknown {
			var ok bool
			if raw, ok = s.RingEnum.Raw(r.Type); !ok {
				return fmt.Errorf("encode: ring type %v does not exist in this version", r.Type)
			}
		}
		le.PutUint32(p[0x38:], uint32(raw))
		u := p[0x40:]
		switch {
		case r.Tap != nil:
			copy(u[:15], r.Tap.Name)
			le.PutUint32(u[0x10:], r.Tap.FD)
			le.PutUint32(u[0x14:], r.Tap.RxBuffers)
			le.PutUint32(u[0x18:], r.Tap.VFPlugouts)
		case r.Simple != nil:
			le.PutUint64(u[0:], r.Simple.RxInterruptRequests)
			le.PutUint64(u[8:], r.Simple.RxInterruptReceived)
			le.PutUint32(u[0x10:], r.Simple.RxCQModerationCount)
			le.PutUint32(u[0x14:], r.Simple.RxCQModerationPeriod)
			le.PutUint64(u[0x18:], r.Simple.TxDevMemPackets)
			le.PutUint64(u[0x20:], r.Simple.TxDevMemBytes)
			le.PutUint64(u[0x28:], r.Simple.TxDevMemOOB)
			le.PutUint32(u[0x30:], r.Simple.TxDevMemAllocated)
		}
	}
	for _, bp := range s.BufferPools {
		if bp.Index < 0 || bp.Index >= vmastats.NumBufferPools {
			return fmt.Errorf("encode: buffer pool index %d out of range", bp.Index)
		}
		p := b[vmastats.OffsetBufferPools+bp.Index*vmastats.BufferPoolSize:]
		p[0] = 1
		p[4], p[5] = boolByte(bp.IsRx), boolByte(bp.IsTx)
		le.PutUint32(p[8:], bp.Size)
		le.PutUint32(p[0xC:], bp.NoBuffers)
	}
	le.PutUint16(b[vmastats.OffsetMulticast:], s.Multicast.MaxGroups)
	for _, g := range s.Multicast.Groups {
		if g.Index < 0 || g.Index >= vmastats.MaxMCGroups || !g.Group.Is4() {
			return fmt.Errorf("encode: multicast entry %d (%v) invalid", g.Index, g.Group)
		}
		p := b[vmastats.OffsetMulticast+4+g.Index*vmastats.MCEntrySize:]
		le.PutUint32(p, g.Sockets)
		a := g.Group.As4()
		copy(p[4:], a[:])
	}
	encodeIomux(b[vmastats.OffsetIomux:], s.Iomux.Poll)
	encodeIomux(b[vmastats.OffsetIomux+vmastats.IomuxSize:], s.Iomux.Select)
	for _, e := range s.Iomux.Epoll {
		if e.Index < 0 || e.Index >= vmastats.NumEpolls {
			return fmt.Errorf("encode: epoll index %d out of range", e.Index)
		}
		p := b[vmastats.OffsetIomux+2*vmastats.IomuxSize+e.Index*vmastats.EpollSize:]
		p[0] = 1
		le.PutUint32(p[4:], uint32(e.FD))
		encodeIomux(p[8:], e.IomuxStats)
	}
	stride := s.Layout.SocketStride()
	off := s.Layout.SocketOffsets()
	for i := range s.Sockets {
		k := &s.Sockets[i]
		if k.Slot < 0 || uint64(k.Slot) >= s.MaxSockets {
			return fmt.Errorf("encode: socket slot %d out of range", k.Slot)
		}
		encodeSocket(b[vmastats.OffsetSockets+k.Slot*stride:vmastats.OffsetSockets+(k.Slot+1)*stride], k, off)
	}
	return nil
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

func encodeIomux(p []byte, s vmastats.IomuxStats) {
	le.PutUint32(p, uint32(s.ThreadIDLast))
	for i, v := range []uint32{s.PollHit, s.PollMiss, s.Timeouts, s.Errors, s.RxReady, s.OSRxReady, s.PollingTime} {
		le.PutUint32(p[4+4*i:], v)
	}
}

func put4(p []byte, a interface{ As4() [4]byte }) {
	v := a.As4()
	copy(p, v[:])
}

func encodeSocket(k []byte, s *vmastats.Socket, off vmastats.SocketOffsets) {
	k[0] = 1
	st := k[8:]
	le.PutUint32(st[0:], uint32(s.FD))
	le.PutUint32(st[4:], s.Inode)
	le.PutUint32(st[8:], s.TCPState)
	st[0xC] = s.Type
	st[0x10], st[0x11], st[0x12] = boolByte(s.Offloaded), boolByte(s.Blocking), boolByte(s.MCLoop)
	for _, f := range []struct {
		at int
		a  interface{ As4() [4]byte }
		ok bool
	}{{0x14, s.BoundIf, s.BoundIf.Is4()}, {0x18, s.ConnectedIP, s.ConnectedIP.Is4()}, {0x1C, s.MCTxIf, s.MCTxIf.Is4()}} {
		if f.ok {
			put4(st[f.at:], f.a)
		}
	}
	binary.BigEndian.PutUint16(st[0x20:], s.BoundPort)
	binary.BigEndian.PutUint16(st[0x22:], s.ConnectedPort)
	le.PutUint32(st[0x24:], uint32(s.ThreadIDLastRx))
	le.PutUint32(st[0x28:], uint32(s.ThreadIDLastTx))
	le.PutUint32(st[0x2C:], s.RxReadyPkts)
	if off.WideReadyBytes {
		le.PutUint64(k[off.RxReadyBytes:], s.RxReadyBytes)
		le.PutUint64(k[off.TxReadyBytes:], s.TxReadyBytes)
	} else {
		le.PutUint32(k[off.RxReadyBytes:], uint32(s.RxReadyBytes))
		le.PutUint32(k[off.TxReadyBytes:], uint32(s.TxReadyBytes))
	}
	le.PutUint32(k[off.RxReadyByteLimit:], s.RxReadyByteLimit)
	le.PutUint32(k[off.RxZcopyPkts:], s.RxZcopyPkts)
	for i, v := range s.Counters {
		le.PutUint32(k[off.Counters+4*i:], v)
	}
	for _, g := range s.MCGroups {
		if g >= 0 && g < vmastats.MaxMCGroups {
			w := k[off.MCGroupMap+8*(g/64):]
			le.PutUint64(w, le.Uint64(w)|1<<(g%64))
		}
	}
	le.PutUint32(k[off.RingAllocLogic:], uint32(s.RingAllocLogicRx))
	le.PutUint32(k[off.RingAllocLogic+4:], uint32(s.RingAllocLogicTx))
	le.PutUint64(k[off.RingUserID:], s.RingUserIDRx)
	le.PutUint64(k[off.RingUserID+8:], s.RingUserIDTx)
}
