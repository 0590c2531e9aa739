package scalehost

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nic-exporter/nic_exporter/vmastats"
	"github.com/nic-exporter/nic_exporter/vmastats/vmastatstest"
)

// VMA applications. The files are written with vmastatstest.Encode, the
// writer of the layout that the vmastats package checks against the
// golden files of libvma 9.8.84 (layout B). The processes are simulated:
// VMAPIDs names them and VMALiveness accepts exactly those pids, as the
// demo host does for its application, so the collector runs its real
// open, size, version and decode path on them.

// vmaFirstPID is the pid of the first simulated VMA process: below 32768,
// the smallest pid_max a host has by default, since the collector counts
// a file named for a pid above the host's pid_max stale without asking the
// liveness check.
const vmaFirstPID = 7100

// VMAPIDs returns the pids of the host's VMA processes.
func (c Config) VMAPIDs() []int {
	out := make([]int, c.VMAProcesses)
	for i := range out {
		out[i] = vmaFirstPID + i
	}
	return out
}

// VMAStats returns the statistics of VMA process i of c: sockets
// alternating between UDP multicast receivers and TCP connections, all
// offloaded, with counters, plus CQs, rings, buffer pools, multicast
// groups and an epoll set.
func (c Config) VMAStats(i int) *vmastats.Stats {
	n := c.VMASockets
	if n > vmastats.MaxSockets {
		n = vmastats.MaxSockets
	}
	pid := vmaFirstPID + i
	s := &vmastats.Stats{
		Header: vmastats.Header{VerInfo: [4]uint8{9, 8, 84, 0}, ProtocolVer: "25ca1bbb55c2c5536b0b4bded2689e9a",
			LogLevel: 3, FdDump: -1, FdDumpLogLevel: 3, MaxSockets: uint64(n), Layout: vmastats.LayoutB},
		RingEnum: vmastats.RingEnumNew,
		BufferPools: []vmastats.BufferPool{
			{Index: 0, IsRx: true, Size: 196608},
			{Index: 1, IsTx: true, Size: 65536},
		},
		Multicast: vmastats.Multicast{MaxGroups: 16},
	}
	for q := 0; q < 16; q++ {
		s.CQs = append(s.CQs, vmastats.CQ{Index: q, RxPktDrop: value(300+i, q, false), RxDrainedAtOnceMax: 64, BufferPoolLen: 256})
		s.Rings = append(s.Rings, vmastats.Ring{Index: q, Type: vmastats.RingETH, Master: 0x7f3a2c001000 + uint64(q)<<12,
			RxPackets: value(400+i, q, true), RxBytes: value(500+i, q, true), TxPackets: value(600+i, q, true), TxBytes: value(700+i, q, true),
			Simple: &vmastats.RingSimple{RxInterruptRequests: value(800+i, q, true), RxInterruptReceived: value(900+i, q, true),
				RxCQModerationCount: 48, RxCQModerationPeriod: 50}})
		s.Multicast.Groups = append(s.Multicast.Groups, vmastats.MCGroup{Index: q, Sockets: 1, Group: netip.AddrFrom4([4]byte{233, 54, 12, byte(1 + q)})})
	}
	for e := 0; e < 4; e++ {
		s.Iomux.Epoll = append(s.Iomux.Epoll, vmastats.Epoll{Index: e, FD: int32(7 + e), IomuxStats: vmastats.IomuxStats{
			ThreadIDLast: int32(pid + 1 + e), PollHit: uint32(value(1000+i, e, true)), PollMiss: uint32(value(1100+i, e, true)),
			RxReady: uint32(value(1200+i, e, true)), PollingTime: 97}})
	}
	any4 := netip.IPv4Unspecified()
	for k := 0; k < n; k++ {
		sk := vmastats.Socket{Slot: k, FD: int32(100 + k), Inode: uint32(3800000 + i*10000 + k), Offloaded: true,
			MCTxIf: any4, ConnectedIP: any4, ThreadIDLastRx: int32(pid + 1 + k%4), RxReadyByteLimit: 16 << 20}
		if k%2 == 0 {
			sk.Type = vmastats.SockDgram
			sk.BoundIf = netip.AddrFrom4([4]byte{233, 54, 12, byte(1 + k%16)})
			sk.BoundPort = uint16(26400 + k)
			sk.MCGroups = []int{k % 16}
		} else {
			sk.Type = vmastats.SockStream
			sk.TCPState = 4 // ESTABLISHED
			sk.BoundIf = netip.AddrFrom4([4]byte{10, 20, byte(i), 15})
			sk.BoundPort = uint16(40000 + k)
			sk.ConnectedIP = netip.AddrFrom4([4]byte{10, 20, 0, 200})
			sk.ConnectedPort = 9001
			sk.ThreadIDLastTx = sk.ThreadIDLastRx
		}
		// Traffic counters are busy (and wrap, as libvma's 32-bit counters
		// do); the kernel-path and error counters are mostly zero.
		for ctr := range sk.Counters {
			busy := false
			switch vmastats.Counter(ctr) {
			case vmastats.RxPackets, vmastats.RxBytes, vmastats.RxPollHit, vmastats.RxPollMiss, vmastats.RxEagain:
				busy = true
			case vmastats.TxPackets, vmastats.TxBytes:
				busy = sk.Type == vmastats.SockStream
			}
			sk.Counters[ctr] = uint32(value(2000+i*vmastats.MaxSockets+k, ctr, busy))
		}
		s.Sockets = append(s.Sockets, sk)
	}
	return s
}

// WriteVMA writes the statistics files of c's VMA processes into dir.
func WriteVMA(dir string, c Config) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i, pid := range c.VMAPIDs() {
		b, err := vmastatstest.Encode(c.VMAStats(i))
		if err != nil {
			return fmt.Errorf("encoding VMA process %d: %w", pid, err)
		}
		if err := os.WriteFile(filepath.Join(dir, vmastats.FilePrefix+strconv.Itoa(pid)), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// VMALiveness returns the liveness check for c's simulated VMA
// processes: their pids are alive and wrote their files if the files
// belong to the current user; any other pid is stale.
func (c Config) VMALiveness() vmastats.Liveness {
	pids := make(map[int]bool, c.VMAProcesses)
	for _, p := range c.VMAPIDs() {
		pids[p] = true
	}
	return vmaLiveness{pids: pids, uid: uint32(os.Getuid())}
}

type vmaLiveness struct {
	pids map[int]bool
	uid  uint32
}

// vmaStart is the simulated processes' start time, before any file.
var vmaStart = time.Date(2026, 1, 5, 6, 30, 0, 0, time.UTC)

func (l vmaLiveness) Verify(pid int, fi vmastats.FileInfo) (vmastats.Process, error) {
	if !l.pids[pid] {
		return vmastats.Process{}, fmt.Errorf("%w: process %d is not one of the scale host's", vmastats.ErrStale, pid)
	}
	if fi.UID != l.uid {
		return vmastats.Process{}, fmt.Errorf("%w: file owner uid %d is not uid %d", vmastats.ErrRefused, fi.UID, l.uid)
	}
	return vmastats.Process{PID: pid, Comm: fmt.Sprintf("trader%d", pid-vmaFirstPID), StartTicks: uint64(pid), Start: vmaStart}, nil
}
