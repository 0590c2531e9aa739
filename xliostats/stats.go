// Package xliostats reads the statistics that NVIDIA XLIO (libxlio, the
// successor of VMA) publishes for each accelerated process in a
// shared-memory file xliostat.<pid>, as xlio_stats shows them.
//
// libxlio changed the file's layout in almost every minor release, and
// from 3.60 moved the header behind the block arrays; a build switch
// (UTLS) changes the block sizes under the same protocol string. The
// decoder therefore reads every field through the offset tables computed
// from each release's own header (embedded from layouts/), selects the
// table by the protocol string found at that table's offset, and accepts
// it only if the file's size is exactly what the table and the file's
// socket count imply. Anything else is refused with a reason, never
// guessed at.
//
// The decoder is written here because there is nothing to reuse: the only
// reader is libxlio's own xlio_stats, C++ compiled against one release's
// header, which maps the file as its own struct and refuses every other
// release. No Go (or other) library reads these files.
//
// Opening, verifying the writer, the reader handshake and torn-read
// tolerance are shared with libvma's reader (package vmastats); this
// package adds the layouts and the decoding. Parse and Identify work on
// any OS; Load needs Linux.
package xliostats

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/nic-exporter/nic_exporter/vmastats"
)

// FilePrefix is the name prefix of libxlio statistics files.
const FilePrefix = "xliostat."

// DefaultDir is libxlio's default statistics directory
// (XLIO_STATS_SHMEM_DIR).
const DefaultDir = "/tmp/xlio"

// MaxSockets is the largest socket slot count libxlio allows
// (XLIO_STATS_FD_NUM is clamped to 1024).
const MaxSockets = 1024

// Errors that classify why a file cannot be decoded.
var (
	// ErrUnsupported says the file's protocol string, version or size
	// fits no known layout.
	ErrUnsupported = errors.New("unsupported libxlio statistics layout")
	// ErrMalformed says the file is too short or inconsistent.
	ErrMalformed = errors.New("malformed libxlio statistics file")
)

// Header is the sh_mem_t header of a statistics file.
type Header struct {
	// ReaderCounter is incremented by readers to ask for fresh counters.
	ReaderCounter int32
	// Major, Minor, Revision and Release are ver_info.
	Major, Minor, Revision, Release uint16
	// ProtocolVer is the md5 of libxlio's xlio_stats.h.
	ProtocolVer string
	// LogLevel and LogDetailsLevel are libxlio's run-time controls;
	// decoded, never written.
	LogLevel        int32
	LogDetailsLevel uint8
	// MaxSockets is max_skt_inst_num, the number of socket slots.
	MaxSockets uint64
	// Known is the protocol string's entry in the table of versions.
	Known Version
	// Layout is the offset table the file was decoded with.
	Layout *Layout
}

// Version returns the library version as "major.minor.revision.release".
func (h Header) Version() string {
	return fmt.Sprintf("%d.%d.%d.%d", h.Major, h.Minor, h.Revision, h.Release)
}

// LayoutName returns the family and build variant, such as "F4" or
// "G2+utls".
func (h Header) LayoutName() string {
	if h.Layout != nil && h.Layout.UTLS {
		return h.Known.Family + "+utls"
	}
	return h.Known.Family
}

// Values are the scalar members of one block, by the name they have in
// xlio_stats.h without the struct path (see FieldName). Which names exist
// depends on the layout: a counter that a release does not have is
// absent, never zero.
type Values struct {
	kind *blockKind
	raw  []uint64
}

// Get returns the member's value as stored (zero-extended), and whether
// the layout has it.
func (v Values) Get(name string) (uint64, bool) {
	if v.kind == nil {
		return 0, false
	}
	i, ok := v.kind.index[name]
	if !ok {
		return 0, false
	}
	return v.raw[i], true
}

// Int returns the member's value sign-extended if its C type is signed.
func (v Values) Int(name string) (int64, bool) {
	if v.kind == nil {
		return 0, false
	}
	i, ok := v.kind.index[name]
	if !ok {
		return 0, false
	}
	f, x := v.kind.fields[i], v.raw[i]
	if f.signed && f.size < 8 {
		shift := 64 - 8*f.size
		return int64(x<<shift) >> shift, true
	}
	return int64(x), true
}

// Float returns the member's value as a float64, signed where its C type
// is.
func (v Values) Float(name string) (float64, bool) {
	if v.kind == nil {
		return 0, false
	}
	i, ok := v.kind.index[name]
	if !ok {
		return 0, false
	}
	if v.kind.fields[i].signed {
		n, _ := v.Int(name)
		return float64(n), true
	}
	return float64(v.raw[i]), true
}

// Size returns the member's size in bytes (1, 2, 4 or 8), 0 if the
// layout does not have it. A counter of 4 bytes wraps at 2^32.
func (v Values) Size(name string) int {
	if v.kind == nil {
		return 0
	}
	i, ok := v.kind.index[name]
	if !ok {
		return 0
	}
	return v.kind.fields[i].size
}

// Names returns the member names in file order.
func (v Values) Names() []string {
	if v.kind == nil {
		return nil
	}
	out := make([]string, len(v.kind.fields))
	for i, f := range v.kind.fields {
		out[i] = f.name
	}
	return out
}

// Block is one enabled block of an array, at its index.
type Block struct {
	Index int
	Values
}

// Ring is one enabled ring block.
type Ring struct {
	Block
	// Type is the ring type as xlio_stats names it ("RING_ETH",
	// "RING_TAP"); from 3.60, where rings have no type, "RING_ETH".
	Type string
	// TapName is the tap device of a RING_TAP ring.
	TapName string
}

// Epoll is one enabled epoll entry.
type Epoll struct {
	Block
	FD int32
}

// MCGroup is one entry of the multicast group table.
type MCGroup struct {
	Index   int
	Sockets uint32
	Group   netip.Addr
}

// Socket types as libxlio records them (SOCK_STREAM, SOCK_DGRAM), as
// libvma does.
const (
	SockStream = vmastats.SockStream
	SockDgram  = vmastats.SockDgram
)

// Socket is one enabled socket block.
type Socket struct {
	// Slot is the block's index; libxlio reuses slots for new sockets.
	Slot  int
	FD    int32
	Inode uint32
	// TCPState is the lwip TCP state (1 LISTEN, 4 ESTABLISHED).
	TCPState uint32
	// Type is SockStream or SockDgram.
	Type          uint8
	Offloaded     bool
	Blocking      bool
	MCLoop        bool
	BoundIf       netip.Addr
	ConnectedIP   netip.Addr
	MCTxIf        netip.Addr
	BoundPort     uint16
	ConnectedPort uint16
	// MCGroups lists the set bits of mc_grp_map: indexes into the
	// multicast table.
	MCGroups []int
	// Values holds every scalar member: the counters, the ready-queue
	// gauges, the strq, listen and TLS sub-structs.
	Values
}

// Protocol returns "tcp", "udp" or "other".
func (s *Socket) Protocol() string { return vmastats.SocketProtocol(s.Type) }

// Stats is the decoded content of one statistics file. Slices hold only
// enabled blocks.
type Stats struct {
	Header
	CQs            []Block
	Rings          []Ring
	BufferPools    []Block
	EntityContexts []Block
	// Global is the global block (TCP segment pool, destructed sockets),
	// nil when not enabled.
	Global *Block
	Poll   Values
	Select Values
	Epoll  []Epoll
	// MaxGroups is max_grp_num, the multicast table entries in use.
	MaxGroups uint16
	Groups    []MCGroup
	Sockets   []Socket
}

// Loaded is one verified and decoded statistics file.
type Loaded struct {
	Stats   *Stats
	Process vmastats.Process
	Info    vmastats.FileInfo
	// Handshake reports whether reader_counter was incremented. Without
	// it libxlio copies no counters into the file (or stopped copying
	// them 10 s after the last reader asked), so the values are frozen or
	// zero; it is false when the exporter may not write the file.
	Handshake bool
	// Raw is the file's content that Stats was decoded from (see
	// vmastats.Loaded.Raw).
	Raw []byte
}
