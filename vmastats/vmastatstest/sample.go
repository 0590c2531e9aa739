package vmastatstest

import (
	"net/netip"

	"github.com/nic-exporter/nic_exporter/vmastats"
)

// Sample returns a populated Stats of layout l (vmastats.LayoutA or
// LayoutB), as libvma 9.0.2 or 9.8.84 would write it with 8 socket slots:
// a completion queue, an Ethernet ring and a tap ring, an rx and a tx
// buffer pool, one multicast group, poll, select and one epoll set, a UDP
// socket in slot 0 that is a member of the group and an established TCP
// socket in slot 5. The counters of the socket in position i of Sockets
// are 1000×(i+1)+c for counter c, so every one is distinct. Each call
// returns a new Stats that the caller may change.
func Sample(l vmastats.Layout) *vmastats.Stats {
	md5, ver, rings := "25ca1bbb55c2c5536b0b4bded2689e9a", [4]uint8{9, 8, 84, 0}, vmastats.RingEnumNew
	if l == vmastats.LayoutA {
		md5, ver, rings = "77ff5141b532cc094b319bbcf54c9180", [4]uint8{9, 0, 2, 0}, vmastats.RingEnumOld
	}
	any4 := netip.MustParseAddr("0.0.0.0")
	s := &vmastats.Stats{
		Header:   vmastats.Header{VerInfo: ver, ProtocolVer: md5, LogLevel: 3, FdDump: -1, FdDumpLogLevel: 3, MaxSockets: 8, Layout: l},
		RingEnum: rings,
		CQs:      []vmastats.CQ{{Index: 1, RxPktDrop: 7, RxSWQueueLen: 12, RxDrainedAtOnceMax: 64, BufferPoolLen: 1024}},
		Rings: []vmastats.Ring{
			{Index: 0, RxPackets: 1000, RxBytes: 64000, TxPackets: 900, TxBytes: 57600, Type: vmastats.RingETH,
				Simple: &vmastats.RingSimple{RxInterruptRequests: 5, RxInterruptReceived: 4, RxCQModerationCount: 48, RxCQModerationPeriod: 50}},
			{Index: 3, RxPackets: 10, RxBytes: 640, Type: vmastats.RingTAP, Tap: &vmastats.RingTap{Name: "tap0", FD: 33, RxBuffers: 256, VFPlugouts: 1}},
		},
		BufferPools: []vmastats.BufferPool{{Index: 0, IsRx: true, Size: 200000, NoBuffers: 0}, {Index: 1, IsTx: true, Size: 100000, NoBuffers: 2}},
		Multicast:   vmastats.Multicast{MaxGroups: 1, Groups: []vmastats.MCGroup{{Index: 0, Sockets: 1, Group: netip.MustParseAddr("239.5.5.5")}}},
		Iomux: vmastats.Iomux{
			Poll:   vmastats.IomuxStats{ThreadIDLast: 100, PollHit: 1, PollMiss: 2},
			Select: vmastats.IomuxStats{ThreadIDLast: 101},
			Epoll: []vmastats.Epoll{{Index: 2, FD: 9,
				IomuxStats: vmastats.IomuxStats{ThreadIDLast: 102, PollHit: 500, PollMiss: 50, RxReady: 450, PollingTime: 80}}},
		},
		Sockets: []vmastats.Socket{
			{Slot: 0, FD: 20, Inode: 9000, Type: vmastats.SockDgram, Offloaded: true, BoundIf: any4, BoundPort: 5000,
				ConnectedIP: any4, MCTxIf: any4, MCGroups: []int{0}, RxReadyPkts: 2, RxReadyBytes: 128},
			{Slot: 5, FD: 21, Inode: 9001, Type: vmastats.SockStream, TCPState: 4, Offloaded: true,
				BoundIf: netip.MustParseAddr("10.1.1.1"), BoundPort: 40000, ConnectedIP: netip.MustParseAddr("10.1.1.2"), ConnectedPort: 6000,
				MCTxIf: any4, TxReadyBytes: 4096},
		},
	}
	for i := range s.Rings {
		s.Rings[i].RawType, _ = rings.Raw(s.Rings[i].Type)
	}
	for i := range s.Sockets {
		for c := range s.Sockets[i].Counters {
			s.Sockets[i].Counters[c] = uint32(1000*(i+1) + c)
		}
	}
	return s
}
