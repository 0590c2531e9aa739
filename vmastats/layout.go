// Package vmastats reads the statistics that NVIDIA VMA (libvma) publishes
// for each accelerated process in a shared-memory file vmastat.<pid>. It
// decodes the two layouts libvma 8.7.7 through 9.8.84 write, finds the
// files in a directory, decides whether the process that wrote a file is
// alive and really its writer, and performs the reader handshake that makes
// libvma copy its counters into the file.
//
// Decoding (Parse) is separate from I/O (Load) so it can be tested and
// fuzzed on bytes alone. Package vmastatstest writes the same layouts, for
// tests and for the demo host.
//
// Parse, Identify and Discover work on any OS. Load and ProcLiveness need
// Linux, where libvma runs; elsewhere they fail with ErrNotSupported.
// ProcLiveness reads /proc through github.com/prometheus/procfs.
package vmastats

import (
	"errors"
	"fmt"
)

// Layout is a class of binary layouts of the statistics file.
type Layout uint8

const (
	// LayoutUnknown is no supported layout.
	LayoutUnknown Layout = iota
	// LayoutA is written by libvma 8.7.7 through 9.0.x: socket blocks of
	// 336 bytes with 32-bit ready-queue byte counts.
	LayoutA
	// LayoutB is written by libvma 9.1.0 through 9.8.84: socket blocks of
	// 344 bytes with 64-bit ready-queue byte counts.
	LayoutB
)

// String returns "A", "B" or "unknown".
func (l Layout) String() string {
	switch l {
	case LayoutA:
		return "A"
	case LayoutB:
		return "B"
	}
	return "unknown"
}

// SocketStride returns the size of one socket block of the layout.
func (l Layout) SocketStride() int {
	switch l {
	case LayoutA:
		return 336
	case LayoutB:
		return 344
	}
	return 0
}

// RingEnum is a numbering of ring types; libvma renumbered them in 9.3.0.
type RingEnum uint8

const (
	// RingEnumOld is ETH=0, ETH_CB=1, ETH_DIRECT=2, TAP=3, IB=4 (through 9.2.x).
	RingEnumOld RingEnum = iota + 1
	// RingEnumNew is ETH=0, ETH_DIRECT=1, TAP=2, IB=3 (from 9.3.0; IB was
	// removed in 9.8.81 without renumbering the others).
	RingEnumNew
)

// Version describes one known value of the stats_protocol_ver field.
type Version struct {
	// MD5 is the field's value: the md5 of libvma's vma_stats.h.
	MD5 string
	// Releases names the libvma tags that write this value.
	Releases string
	// Layout is the file layout of these releases.
	Layout Layout
	// Rings is the ring type numbering of these releases.
	Rings RingEnum
}

// knownVersions is the table of supported STATS_PROTOCOL_VER values, from
// the md5 of src/vma/util/vma_stats.h at every public libvma tag. Older
// values (pre-A layouts, 6.x to 8.7.6) are deliberately absent: their
// files are reported as unsupported rather than guessed at.
var knownVersions = []Version{
	{MD5: "16e3fe08d6201926fa5dae38c3199030", Releases: "8.7.7, 8.8.2-8.9.5", Layout: LayoutA, Rings: RingEnumOld},
	{MD5: "77ff5141b532cc094b319bbcf54c9180", Releases: "9.0.1-9.0.2", Layout: LayoutA, Rings: RingEnumOld},
	{MD5: "18787eed4bf3a47f1a8741b52f0ad0f8", Releases: "9.1.0-9.2.2", Layout: LayoutB, Rings: RingEnumOld},
	{MD5: "4bee44c88dee72f6c79887d29025359e", Releases: "9.3.0-9.5.2", Layout: LayoutB, Rings: RingEnumNew},
	{MD5: "210aeb9e3f049bab037aa209d5be59cc", Releases: "9.5.3-9.8.0", Layout: LayoutB, Rings: RingEnumNew},
	{MD5: "cebac2c54a667a74ebba9fad44cc8803", Releases: "9.8.1-9.8.50", Layout: LayoutB, Rings: RingEnumNew},
	{MD5: "d7fc5223ff555b43408cff6b8138507f", Releases: "9.8.51-9.8.60", Layout: LayoutB, Rings: RingEnumNew},
	{MD5: "420b6272e5828a4639106018d7e4742c", Releases: "9.8.70", Layout: LayoutB, Rings: RingEnumNew},
	{MD5: "a829ed9a7d9d4b9d825cc9ab0e983c25", Releases: "9.8.71-9.8.80", Layout: LayoutB, Rings: RingEnumNew},
	{MD5: "c2436dc784a369ffc352aa78545db031", Releases: "9.8.81-9.8.82", Layout: LayoutB, Rings: RingEnumNew},
	{MD5: "25ca1bbb55c2c5536b0b4bded2689e9a", Releases: "9.8.83-9.8.84", Layout: LayoutB, Rings: RingEnumNew},
}

// LookupVersion returns the known version with the given md5.
func LookupVersion(md5 string) (Version, bool) {
	for _, v := range knownVersions {
		if v.MD5 == md5 {
			return v, true
		}
	}
	return Version{}, false
}

// KnownVersions returns a copy of the table of supported versions.
func KnownVersions() []Version { return append([]Version(nil), knownVersions...) }

// The layout of the sh_mem_t header, identical in layouts A and B: the
// offset of each field and block array from the start of the file, and
// the count and size of the blocks of each array. Parse reads the file
// through them; they are exported for encoders such as vmastatstest, so
// that a writer of test files shares the reader's table instead of a
// copy. testdata/libvma/LAYOUT.md describes each block.
const (
	OffsetReaderCounter   = 0x0000 // int32 reader_counter
	OffsetVerInfo         = 0x0004 // 4 × u8 ver_info
	OffsetProtocolVer     = 0x0008 // ProtocolVerLen bytes of stats_protocol_ver
	OffsetLogLevel        = 0x0028 // int32 log_level
	OffsetLogDetailsLevel = 0x002C // u8 log_details_level
	OffsetFdDump          = 0x0030 // int32 fd_dump
	OffsetFdDumpLogLevel  = 0x0034 // int32 fd_dump_log_level
	OffsetCQs             = 0x0038 // NumCQs × CQSize cq_inst_arr
	OffsetRings           = 0x0238 // NumRings × RingSize ring_inst_arr
	OffsetBufferPools     = 0x09B8 // NumBufferPools × BufferPoolSize bpool_inst_arr
	OffsetMulticast       = 0x09D8 // u16 max_grp_num, then at +4 MaxMCGroups × MCEntrySize
	OffsetIomux           = 0x29DC // poll, select at +IomuxSize, NumEpolls × EpollSize at +2×IomuxSize
	OffsetMaxSockets      = 0x2F20 // u64 max_skt_inst_num
	OffsetSockets         = 0x2F28 // socket blocks of Layout.SocketStride bytes

	NumCQs         = 16
	CQSize         = 32
	NumRings       = 16
	RingSize       = 120
	NumBufferPools = 2
	BufferPoolSize = 16
	MaxMCGroups    = 1024
	MCEntrySize    = 8
	NumEpolls      = 32
	IomuxSize      = 32
	EpollSize      = 40
	// ProtocolVerLen is the length of the md5 text in stats_protocol_ver.
	ProtocolVerLen = 32

	// HeaderSize is the size of everything before the socket blocks; the
	// layout and the expected file size are known after reading it.
	HeaderSize = OffsetSockets
	// MaxSockets is the largest socket block count libvma allows
	// (VMA_STATS_FD_NUM is capped at 1024).
	MaxSockets = 1024
)

// SocketOffsets are the offsets of the fields of a socket block that
// differ between layouts, from the start of the block (its enabled flag;
// socket_stats_t follows at +8). The fields before them are at the same
// place in both layouts.
type SocketOffsets struct {
	// RxReadyBytes and TxReadyBytes are n_rx_ready_byte_count and
	// n_tx_ready_byte_count: 64-bit when WideReadyBytes, else 32-bit.
	RxReadyBytes, TxReadyBytes int
	WideReadyBytes             bool
	// RxReadyByteLimit and RxZcopyPkts are the u32 n_rx_ready_byte_limit
	// and n_rx_zcopy_pkt_count.
	RxReadyByteLimit, RxZcopyPkts int
	// Counters is the first of NumCounters u32 counters, in Counter order.
	Counters int
	// MCGroupMap is mc_grp_map, a std::bitset of MaxMCGroups bits stored
	// as little-endian 64-bit words.
	MCGroupMap int
	// RingAllocLogic is ring_alloc_logic_rx, followed by _tx (int32 each).
	RingAllocLogic int
	// RingUserID is ring_user_id_rx, followed by _tx (u64 each).
	RingUserID int
}

// SocketOffsets returns the socket block offsets of layout l; they are
// those of layout B for any layout but A.
func (l Layout) SocketOffsets() SocketOffsets {
	if l == LayoutA {
		return SocketOffsets{
			RxReadyBytes: 8 + 0x30, RxReadyByteLimit: 8 + 0x34, RxZcopyPkts: 8 + 0x38, TxReadyBytes: 8 + 0x3C,
			Counters: 8 + 0x40, MCGroupMap: 8 + 0xB0, RingAllocLogic: 8 + 0x130, RingUserID: 8 + 0x138,
		}
	}
	return SocketOffsets{
		RxReadyBytes: 8 + 0x30, RxReadyByteLimit: 8 + 0x38, RxZcopyPkts: 8 + 0x3C, TxReadyBytes: 8 + 0x40,
		WideReadyBytes: true,
		Counters:       8 + 0x48, MCGroupMap: 8 + 0xB8, RingAllocLogic: 8 + 0x138, RingUserID: 8 + 0x140,
	}
}

// FileSize returns the size of a statistics file of layout l with n
// socket blocks: libvma allocates one block more than max_skt_inst_num.
func FileSize(l Layout, n int) int64 {
	return int64(OffsetSockets) + int64(n+1)*int64(l.SocketStride())
}

// Errors that classify why a file cannot be decoded.
var (
	// ErrUnsupported says the file's version or size fits no known layout.
	ErrUnsupported = errors.New("unsupported libvma statistics layout")
	// ErrMalformed says the file is too short or inconsistent.
	ErrMalformed = errors.New("malformed libvma statistics file")
)

// Identify reads the header fields that determine the layout: the
// version, the md5 and max_skt_inst_num. It needs at least HeaderSize
// bytes. It returns the expected total size of the file; the caller must
// check the real size against it before trusting the rest.
func Identify(hdr []byte) (Version, Header, int64, error) {
	if len(hdr) < HeaderSize {
		return Version{}, Header{}, 0, fmt.Errorf("%w: %d bytes, the header alone is %d", ErrMalformed, len(hdr), HeaderSize)
	}
	h := decodeHeader(hdr)
	v, ok := LookupVersion(h.ProtocolVer)
	if !ok {
		return Version{}, h, 0, fmt.Errorf("%w: libvma %s with stats_protocol_ver %q is not a known layout (supported: libvma 8.7.7 to 9.8.84)", ErrUnsupported, h.Version(), printable(h.ProtocolVer))
	}
	if h.MaxSockets > MaxSockets {
		return v, h, 0, fmt.Errorf("%w: max_skt_inst_num %d exceeds %d", ErrMalformed, h.MaxSockets, MaxSockets)
	}
	h.Layout = v.Layout
	return v, h, FileSize(v.Layout, int(h.MaxSockets)), nil
}

// printable replaces bytes outside printable ASCII so a hostile md5 field
// cannot inject control characters into logs.
func printable(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			b[i] = '?'
		}
	}
	return string(b)
}
