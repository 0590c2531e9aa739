package vmastats

import (
	"fmt"
	"net/netip"
)

// Header is the sh_mem_t header of a statistics file.
type Header struct {
	// ReaderCounter is incremented by readers to ask for fresh counters.
	ReaderCounter int32
	// VerInfo is the libvma version: major, minor, revision, release.
	VerInfo [4]uint8
	// ProtocolVer is the md5 of libvma's vma_stats.h, 32 hex characters.
	ProtocolVer string
	// LogLevel, LogDetailsLevel, FdDump and FdDumpLogLevel are libvma's
	// run-time controls; they are decoded, never written.
	LogLevel        int32
	LogDetailsLevel uint8
	FdDump          int32
	FdDumpLogLevel  int32
	// MaxSockets is max_skt_inst_num, the number of socket blocks.
	MaxSockets uint64
	// Layout is the file layout, set from ProtocolVer.
	Layout Layout
}

// Version returns the libvma version as "major.minor.revision.release".
func (h Header) Version() string {
	return fmt.Sprintf("%d.%d.%d.%d", h.VerInfo[0], h.VerInfo[1], h.VerInfo[2], h.VerInfo[3])
}

// Stats is the decoded content of one statistics file. Slices hold only
// the blocks whose enabled flag is set; each block keeps its index.
type Stats struct {
	Header
	// RingEnum is the ring type numbering of this version.
	RingEnum    RingEnum
	CQs         []CQ
	Rings       []Ring
	BufferPools []BufferPool
	Multicast   Multicast
	Iomux       Iomux
	Sockets     []Socket
}

// CQ is one completion queue block (cq_instance_block_t).
type CQ struct {
	Index              int
	RxPktDrop          uint64
	RxSWQueueLen       uint32
	RxDrainedAtOnceMax uint32
	BufferPoolLen      uint32
}

// RingType is a ring type, independent of the version's numbering.
type RingType uint8

// Ring types.
const (
	RingUnknown RingType = iota
	RingETH
	RingETHCB
	RingETHDirect
	RingTAP
	RingIB
)

// String returns the name vma_stats prints, such as "RING_ETH".
func (t RingType) String() string {
	switch t {
	case RingETH:
		return "RING_ETH"
	case RingETHCB:
		return "RING_ETH_CB"
	case RingETHDirect:
		return "RING_ETH_DIRECT"
	case RingTAP:
		return "RING_TAP"
	case RingIB:
		return "RING_IB"
	}
	return "RING_UNKNOWN"
}

// ringType maps a raw n_type to a RingType under numbering e.
func ringType(e RingEnum, raw int32) RingType {
	var table []RingType
	switch e {
	case RingEnumOld:
		table = []RingType{RingETH, RingETHCB, RingETHDirect, RingTAP, RingIB}
	case RingEnumNew:
		table = []RingType{RingETH, RingETHDirect, RingTAP, RingIB}
	}
	if raw < 0 || int(raw) >= len(table) {
		return RingUnknown
	}
	return table[raw]
}

// Raw returns the n_type value that stands for t under numbering e, and
// false if t does not exist in it (RING_ETH_CB after 9.2.x, for
// example). It is the inverse of the decoding, for encoders.
func (e RingEnum) Raw(t RingType) (int32, bool) {
	for raw := int32(0); raw < 5; raw++ {
		if ringType(e, raw) == t {
			return raw, true
		}
	}
	return 0, false
}

// Ring is one ring block (ring_instance_block_t). Exactly one of Simple
// and Tap is set: Tap for tap rings, Simple for all others.
type Ring struct {
	Index         int
	RxPackets     uint64
	RxBytes       uint64
	TxPackets     uint64
	TxBytes       uint64
	TxRetransmits uint64
	// Master is the address of the master ring in the application.
	Master uint64
	// RawType is n_type as written; Type is its meaning in this version.
	RawType int32
	Type    RingType
	Simple  *RingSimple
	Tap     *RingTap
}

// RingSimple holds the counters of hardware (non-tap) rings.
type RingSimple struct {
	RxInterruptRequests  uint64
	RxInterruptReceived  uint64
	RxCQModerationCount  uint32
	RxCQModerationPeriod uint32
	TxDevMemPackets      uint64
	TxDevMemBytes        uint64
	TxDevMemOOB          uint64
	TxDevMemAllocated    uint32
}

// RingTap holds the counters of tap rings (failsafe/netvsc setups).
type RingTap struct {
	Name       string
	FD         uint32
	RxBuffers  uint32
	VFPlugouts uint32
}

// BufferPool is one buffer pool block (bpool_instance_block_t).
type BufferPool struct {
	Index     int
	IsRx      bool
	IsTx      bool
	Size      uint32
	NoBuffers uint32
}

// Multicast is the process's table of multicast groups.
type Multicast struct {
	// MaxGroups is max_grp_num, the number of entries in use.
	MaxGroups uint16
	// Groups are the entries below MaxGroups with at least one socket.
	Groups []MCGroup
}

// MCGroup is one multicast group entry.
type MCGroup struct {
	Index   int
	Sockets uint32
	Group   netip.Addr
}

// IomuxStats are the counters of one poll, select or epoll user.
type IomuxStats struct {
	ThreadIDLast int32
	PollHit      uint32
	PollMiss     uint32
	Timeouts     uint32
	Errors       uint32
	RxReady      uint32
	OSRxReady    uint32
	// PollingTime is the share of time spent polling, in percent.
	PollingTime uint32
}

// Epoll is one enabled epoll entry.
type Epoll struct {
	Index int
	FD    int32
	IomuxStats
}

// Iomux holds the poll, select and epoll statistics.
type Iomux struct {
	Poll   IomuxStats
	Select IomuxStats
	Epoll  []Epoll
}

// Counter indexes the 27 per-socket counters (socket_counters_t).
type Counter int

// The per-socket counters, in file order.
const (
	RxPackets Counter = iota
	RxBytes
	RxPollHit
	RxPollMiss
	RxReadyPktMax
	RxReadyByteDrop
	RxReadyPktDrop
	RxReadyByteMax
	RxErrors
	RxEagain
	RxOSPackets
	RxOSBytes
	RxPollOSHit
	RxOSErrors
	RxOSEagain
	RxMigrations
	TxPackets
	TxBytes
	TxErrors
	TxEagain // n_tx_drops in layout A
	TxRetransmits
	TxOSPackets
	TxOSBytes
	TxOSErrors
	TxOSEagain
	TxMigrations
	TxDummy
	NumCounters
)

var counterNames = [NumCounters]string{
	"n_rx_packets", "n_rx_bytes", "n_rx_poll_hit", "n_rx_poll_miss", "n_rx_ready_pkt_max",
	"n_rx_ready_byte_drop", "n_rx_ready_pkt_drop", "n_rx_ready_byte_max", "n_rx_errors", "n_rx_eagain",
	"n_rx_os_packets", "n_rx_os_bytes", "n_rx_poll_os_hit", "n_rx_os_errors", "n_rx_os_eagain",
	"n_rx_migrations", "n_tx_sent_pkt_count", "n_tx_sent_byte_count", "n_tx_errors", "n_tx_eagain",
	"n_tx_retransmits", "n_tx_os_packets", "n_tx_os_bytes", "n_tx_os_errors", "n_tx_os_eagain",
	"n_tx_migrations", "n_tx_dummy",
}

// String returns libvma's name of the counter (layout B naming).
func (c Counter) String() string {
	if c < 0 || c >= NumCounters {
		return fmt.Sprintf("counter(%d)", int(c))
	}
	return counterNames[c]
}

// Socket types as libvma records them (SOCK_STREAM, SOCK_DGRAM).
const (
	SockStream = 1
	SockDgram  = 2
)

// Socket is one enabled socket block.
type Socket struct {
	// Slot is the block's index; libvma reuses slots for new sockets.
	Slot  int
	FD    int32
	Inode uint32
	// TCPState is the lwip TCP state (4 is ESTABLISHED).
	TCPState uint32
	// Type is the socket type, SockStream or SockDgram.
	Type           uint8
	Offloaded      bool
	Blocking       bool
	MCLoop         bool
	BoundIf        netip.Addr
	ConnectedIP    netip.Addr
	MCTxIf         netip.Addr
	BoundPort      uint16
	ConnectedPort  uint16
	ThreadIDLastRx int32
	ThreadIDLastTx int32
	// Ready-queue gauges. In layout A the byte counts are 32-bit.
	RxReadyPkts      uint32
	RxReadyBytes     uint64
	RxReadyByteLimit uint32
	RxZcopyPkts      uint32
	TxReadyBytes     uint64
	// Counters are the 27 32-bit counters; they wrap at 2^32.
	Counters [NumCounters]uint32
	// MCGroups lists the set bits of mc_grp_map: indexes into the
	// multicast table. Bits at or above MaxGroups refer to no group.
	MCGroups         []int
	RingAllocLogicRx int32
	RingAllocLogicTx int32
	RingUserIDRx     uint64
	RingUserIDTx     uint64
}

// Protocol returns "tcp", "udp" or "other".
func (s *Socket) Protocol() string { return SocketProtocol(s.Type) }

// SocketProtocol returns the protocol of a socket type as libvma and
// libxlio record it: "tcp" for SockStream, "udp" for SockDgram, else
// "other".
func SocketProtocol(typ uint8) string {
	switch typ {
	case SockStream:
		return "tcp"
	case SockDgram:
		return "udp"
	}
	return "other"
}
