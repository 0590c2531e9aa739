package ethtoolioctl

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"github.com/safchain/ethtool"
	"golang.org/x/sys/unix"

	"github.com/nic-exporter/nic_exporter/internal/errclass"
	"github.com/nic-exporter/nic_exporter/internal/netns"
	"github.com/nic-exporter/nic_exporter/internal/rtnl"
)

// Source is the kernel's ethtool interface as the ethtool collector reads
// it: the SIOCETHTOOL ioctl and an rtnetlink link dump, on sockets opened
// in one network namespace.
//
// Driver information and link settings come from github.com/safchain/ethtool.
// Statistic names and values are read here instead, because that library
// fetches the string table again on every call: this source lets the
// collector fetch the table once and read only ETHTOOL_GSTATS per poll.
// The kernel writes as many names or values as the driver has now, not as
// many as the caller asked for, so both are read into memory outside the
// Go heap that ends in a PROT_NONE guard page: if a table grew between the
// count and the read, the kernel's copy faults (EFAULT) instead of
// overwriting Go memory, and the call reports ErrStatCountChanged.
//
// It is safe for concurrent use; calls are serialised.
type Source struct {
	mu   sync.Mutex
	et   *ethtool.Ethtool
	fd   int           // AF_INET datagram socket for GSTRINGS and GSTATS
	nl   *rtnl.Watcher // the interfaces, dumped again only after a link changed
	mem  []byte        // scratch; the page after mem[:size] is the guard
	size int
}

// New opens the sockets of a Source. With nsPath empty
// they belong to the calling process's network namespace; otherwise nsPath
// names a namespace file (/run/netns/NAME, /proc/PID/ns/net) and the
// sockets are opened inside it, so every later call reads that namespace
// from any goroutine, whatever namespace its thread is in.
func New(nsPath string) (*Source, error) {
	s := &Source{fd: -1}
	err := netns.Do(nsPath, func() error {
		var err error
		if s.et, err = ethtool.NewEthtool(); err != nil {
			return fmt.Errorf("opening the ethtool socket: %w", err)
		}
		if s.fd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err != nil {
			return fmt.Errorf("opening the statistics socket: %w", err)
		}
		return nil
	})
	if err == nil {
		s.nl, err = rtnl.NewWatcher(nsPath)
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Close releases the sockets and the scratch memory.
func (s *Source) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.et != nil {
		s.et.Close()
		s.et = nil
	}
	if s.fd >= 0 {
		unix.Close(s.fd)
		s.fd = -1
	}
	if s.nl != nil {
		s.nl.Close()
		s.nl = nil
	}
	if s.mem != nil {
		err := unix.Munmap(s.mem)
		s.mem, s.size = nil, 0
		return err
	}
	return nil
}

// Interfaces lists the network interfaces with their indexes, from an
// RTM_GETLINK dump made again only after a link changed (rtnl.Watcher).
func (s *Source) Interfaces() ([]Interface, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ifs, err := s.nl.Interfaces()
	if err != nil {
		return nil, err
	}
	out := make([]Interface, 0, len(ifs))
	for _, i := range ifs {
		out = append(out, Interface{Name: i.Name, Index: i.Index})
	}
	return out, nil
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// DriverInfo returns the driver information (ETHTOOL_GDRVINFO),
// including the current number of statistics.
func (s *Source) DriverInfo(name string) (DriverInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, err := s.et.DriverInfo(name)
	if err != nil {
		return DriverInfo{}, err
	}
	return DriverInfo{
		Driver:          d.Driver,
		Version:         d.Version,
		FirmwareVersion: d.FwVersion,
		BusInfo:         d.BusInfo,
		NStats:          int(d.NStats),
	}, nil
}

// Link returns the link settings (ETHTOOL_GSET) and the link state
// (ETHTOOL_GLINK). It uses ETHTOOL_GSET, which every kernel
// answers for drivers with link settings, rather than the library's
// GLINKSETTINGS path, whose size handshake fails on kernels with more
// link modes than it knows and then prints to standard output.
func (s *Source) Link(name string) (Link, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var l Link
	var cmd ethtool.EthtoolCmd
	speed, err := s.et.CmdGet(&cmd, name)
	switch {
	case err == nil:
		l.HasSettings = true
		l.SpeedMbps = speed
		l.Duplex = cmd.Duplex
		l.Autoneg = cmd.Autoneg
	case errclass.IsUnsupported(err):
	default:
		return l, err
	}
	state, err := s.et.LinkState(name)
	switch {
	case err == nil:
		l.HasDetected, l.Detected = true, state != 0
	case errclass.IsUnsupported(err):
	default:
		return l, err
	}
	return l, nil
}

// ethtoolIfreq is struct ifreq with ifr_data; the union is 24 bytes on
// 64-bit platforms and smaller elsewhere, so this is never too short.
type ethtoolIfreq struct {
	name [unix.IFNAMSIZ]byte
	data uintptr
	_    [24 - unsafe.Sizeof(uintptr(0))]byte
}

// scratch returns at least n bytes of guarded scratch memory.
func (s *Source) scratch(n int) ([]byte, error) {
	if n <= s.size {
		return s.mem[:s.size], nil
	}
	page := os.Getpagesize()
	size := (n + page - 1) / page * page
	mem, err := unix.Mmap(-1, 0, size+page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("allocating %d bytes for ethtool: %w", size, err)
	}
	if err := unix.Mprotect(mem[size:], unix.PROT_NONE); err != nil {
		unix.Munmap(mem)
		return nil, fmt.Errorf("guarding ethtool scratch memory: %w", err)
	}
	if s.mem != nil {
		unix.Munmap(s.mem)
	}
	s.mem, s.size = mem, size
	return mem[:size], nil
}

// ioctl issues one SIOCETHTOOL with ifr_data pointing at buf.
func (s *Source) ioctl(name string, buf []byte) error {
	var ifr ethtoolIfreq
	if len(name) >= len(ifr.name) || indexByte(name, 0) >= 0 {
		return fmt.Errorf("interface name %q: %w", name, syscall.ENODEV)
	}
	copy(ifr.name[:], name)
	ifr.data = uintptr(unsafe.Pointer(&buf[0]))
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(s.fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	runtime.KeepAlive(buf)
	if errno != 0 {
		if errno == unix.EFAULT {
			return fmt.Errorf("%w (the kernel wrote past the expected size)", ErrStatCountChanged)
		}
		return errno
	}
	return nil
}

// StatNames returns the driver's n statistic names (ETHTOOL_GSTRINGS
// of ETH_SS_STATS). It returns ErrStatCountChanged if the driver now has
// another number of statistics.
func (s *Source) StatNames(name string, n int) ([]string, error) {
	if n <= 0 || n > ethtool.MAX_GSTRINGS {
		return nil, fmt.Errorf("%d statistics is out of range", n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	const head = 12 // cmd, string_set, len
	buf, err := s.scratch(head + n*ethtool.ETH_GSTRING_LEN)
	if err != nil {
		return nil, err
	}
	binary.NativeEndian.PutUint32(buf[0:], unix.ETHTOOL_GSTRINGS)
	binary.NativeEndian.PutUint32(buf[4:], ethtool.ETH_SS_STATS)
	binary.NativeEndian.PutUint32(buf[8:], uint32(n))
	if err := s.ioctl(name, buf); err != nil {
		return nil, err
	}
	if got := int(binary.NativeEndian.Uint32(buf[8:])); got != n {
		return nil, fmt.Errorf("%w: asked for %d names, the driver has %d", ErrStatCountChanged, n, got)
	}
	// The names share one string: a table of thousands of names (about
	// 5,000 on a ConnectX port with 64 channels) is then one object for
	// the garbage collector to mark while the collector keeps it, not
	// thousands.
	ends := make([]int, n)
	var all strings.Builder
	for i := range ends {
		b := buf[head+i*ethtool.ETH_GSTRING_LEN : head+(i+1)*ethtool.ETH_GSTRING_LEN]
		if j := bytes.IndexByte(b, 0); j >= 0 {
			b = b[:j]
		}
		all.Write(b)
		ends[i] = all.Len()
	}
	joined := all.String()
	names := make([]string, n)
	start := 0
	for i, end := range ends {
		names[i] = joined[start:end]
		start = end
	}
	return names, nil
}

// Stats fills dst with the current statistic values (ETHTOOL_GSTATS),
// in the order of StatNames. It returns ErrStatCountChanged if the driver
// has another number of statistics than len(dst).
func (s *Source) Stats(name string, dst []uint64) error {
	n := len(dst)
	if n <= 0 || n > ethtool.MAX_GSTRINGS {
		return fmt.Errorf("%d statistics is out of range", n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	const head = 8 // cmd, n_stats
	buf, err := s.scratch(head + n*8)
	if err != nil {
		return err
	}
	binary.NativeEndian.PutUint32(buf[0:], unix.ETHTOOL_GSTATS)
	binary.NativeEndian.PutUint32(buf[4:], uint32(n))
	if err := s.ioctl(name, buf); err != nil {
		return err
	}
	if got := int(binary.NativeEndian.Uint32(buf[4:])); got != n {
		return fmt.Errorf("%w: asked for %d values, the driver has %d", ErrStatCountChanged, n, got)
	}
	for i := range dst {
		dst[i] = binary.NativeEndian.Uint64(buf[head+i*8:])
	}
	return nil
}
