package demo

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

// The reference host's VMA application: a market-data feed handler
// accelerated by libvma 9.8.84 (layout B, the md5 of that release's
// vma_stats.h) with a UDP multicast receiver and a TCP order-entry
// socket. The file is written by vmastats' encoder from the layout facts
// of libvma's src/vma/util/vma_stats.h; the shapes (ring and CQ counts,
// buffer pool sizes, one epoll fd) follow what vma_stats prints for such
// an application.
const (
	vmaDemoPID  = 4242
	vmaDemoComm = "md_feed"
	vmaDemoDir  = "tmp"
)

var vmaPart = part{
	faults: map[string]string{
		"vma_no_buffers":  "the VMA application's receive buffer pool runs dry: \"no buffers\" errors, CQ and ready-queue drops climb (memlock too low)",
		"vma_os_fallback": "the VMA application's TCP socket falls back to the kernel (OS) path: it is no longer offloaded and its traffic moves to the os counters",
	},
	update: (*Host).updateVMA,
}

// VMADir returns the demo host's libvma statistics directory.
func (h *Host) VMADir() string { return filepath.Join(h.dir, vmaDemoDir) }

// VMALiveness returns the liveness check for the demo's VMA application.
// The application is simulated, so there is no process to find in
// procfs: this check accepts the demo pid for files owned by the
// exporter's own user and rejects every other pid as stale. Everything
// else in the collector (open, size and version checks, the handshake,
// decoding) runs as on a real host.
func (h *Host) VMALiveness() vmastats.Liveness {
	// A fixed start time keeps the demo's output reproducible.
	return demoLiveness{start: time.Date(2026, 1, 5, 6, 30, 0, 0, time.UTC), uid: uint32(os.Getuid()), pid: vmaDemoPID, comm: vmaDemoComm, ticks: 424242}
}

// demoLiveness accepts one simulated process, pid, for files owned by
// uid.
type demoLiveness struct {
	start time.Time
	uid   uint32
	pid   int
	comm  string
	ticks uint64
}

func (d demoLiveness) Verify(pid int, fi vmastats.FileInfo) (vmastats.Process, error) {
	if pid != d.pid {
		return vmastats.Process{}, fmt.Errorf("%w: process %d does not exist on the demo host", vmastats.ErrStale, pid)
	}
	if fi.UID != d.uid {
		return vmastats.Process{}, fmt.Errorf("%w: file owner uid %d is not the demo application's uid %d", vmastats.ErrRefused, fi.UID, d.uid)
	}
	return vmastats.Process{PID: d.pid, Comm: d.comm, StartTicks: d.ticks, Start: d.start}, nil
}

// rate returns a 32-bit counter that advanced at perSec for t, wrapping
// like libvma's socket counters.
func rate32(perSec float64, t time.Duration) uint32 {
	return uint32(uint64(perSec * t.Seconds()))
}

func (h *Host) updateVMA() error {
	if err := os.MkdirAll(h.VMADir(), 0o755); err != nil {
		return err
	}
	t := h.Elapsed() + 2*time.Hour // the application has been up for a while
	fallback := h.ActiveFor("vma_os_fallback")
	noBufs := h.ActiveFor("vma_no_buffers")
	s := &vmastats.Stats{
		Header: vmastats.Header{VerInfo: [4]uint8{9, 8, 84, 0}, ProtocolVer: "25ca1bbb55c2c5536b0b4bded2689e9a",
			LogLevel: 3, FdDump: -1, FdDumpLogLevel: 3, MaxSockets: 100, Layout: vmastats.LayoutB},
		RingEnum: vmastats.RingEnumNew,
		CQs: []vmastats.CQ{
			{Index: 0, RxPktDrop: uint64(9000 * noBufs.Seconds()), RxSWQueueLen: 0, RxDrainedAtOnceMax: 64, BufferPoolLen: 256},
			{Index: 1, RxDrainedAtOnceMax: 16, BufferPoolLen: 256},
		},
		Rings: []vmastats.Ring{
			{Index: 0, Type: vmastats.RingETH, Master: 0x7f3a2c001000,
				RxPackets: uint64(250000 * t.Seconds()), RxBytes: uint64(250000 * 1100 * t.Seconds()),
				TxPackets: uint64(4000 * (t - fallback).Seconds()), TxBytes: uint64(4000 * 180 * (t - fallback).Seconds()),
				Simple: &vmastats.RingSimple{RxInterruptRequests: uint64(50 * t.Seconds()), RxInterruptReceived: uint64(48 * t.Seconds()),
					RxCQModerationCount: 48, RxCQModerationPeriod: 50}},
		},
		BufferPools: []vmastats.BufferPool{
			{Index: 0, IsRx: true, Size: 196608, NoBuffers: uint32(1500 * noBufs.Seconds())},
			{Index: 1, IsTx: true, Size: 65536},
		},
		Multicast: vmastats.Multicast{MaxGroups: 2, Groups: []vmastats.MCGroup{
			{Index: 0, Sockets: 1, Group: netip.MustParseAddr("233.54.12.1")},
			{Index: 1, Sockets: 1, Group: netip.MustParseAddr("233.54.12.2")},
		}},
		Iomux: vmastats.Iomux{
			Epoll: []vmastats.Epoll{{Index: 0, FD: 7, IomuxStats: vmastats.IomuxStats{ThreadIDLast: vmaDemoPID + 1,
				PollHit: rate32(254000, t), PollMiss: rate32(1.9e6, t), Timeouts: rate32(2, t), RxReady: rate32(254000, t),
				OSRxReady: rate32(12, t), PollingTime: 97}}},
		},
	}
	if noBufs > 0 {
		s.BufferPools[0].Size = 0
		s.CQs[0].RxSWQueueLen = 4096
	}
	any4 := netip.IPv4Unspecified()
	udp := vmastats.Socket{Slot: 0, FD: 12, Inode: 3812345, Type: vmastats.SockDgram, Offloaded: true, Blocking: false,
		BoundIf: netip.MustParseAddr("233.54.12.1"), BoundPort: 26400, ConnectedIP: any4, MCTxIf: any4,
		ThreadIDLastRx: vmaDemoPID + 1, MCGroups: []int{0, 1}, RxReadyByteLimit: 16 << 20, RxReadyPkts: 3, RxReadyBytes: 3300}
	rx := 250000 * t.Seconds()
	udp.Counters[vmastats.RxPackets] = uint32(uint64(rx))
	udp.Counters[vmastats.RxBytes] = uint32(uint64(rx * 1100))
	udp.Counters[vmastats.RxPollHit] = rate32(249000, t)
	udp.Counters[vmastats.RxPollMiss] = rate32(1.8e6, t)
	udp.Counters[vmastats.RxEagain] = rate32(1.8e6, t)
	udp.Counters[vmastats.RxReadyPktDrop] = rate32(8000, noBufs)
	udp.Counters[vmastats.RxReadyByteDrop] = rate32(8000*1100, noBufs)
	udp.Counters[vmastats.RxReadyPktMax] = 512

	tcp := vmastats.Socket{Slot: 1, FD: 13, Inode: 3812399, Type: vmastats.SockStream, TCPState: 4, Offloaded: fallback == 0 || !h.Active("vma_os_fallback"),
		Blocking: false, BoundIf: netip.MustParseAddr("10.20.0.15"), BoundPort: 40712,
		ConnectedIP: netip.MustParseAddr("10.20.0.200"), ConnectedPort: 9001, MCTxIf: any4,
		ThreadIDLastRx: vmaDemoPID + 2, ThreadIDLastTx: vmaDemoPID + 2, TxReadyBytes: 0}
	off := t - fallback
	tcp.Counters[vmastats.TxPackets] = rate32(4000, off)
	tcp.Counters[vmastats.TxBytes] = rate32(4000*180, off)
	tcp.Counters[vmastats.RxPackets] = rate32(3900, off)
	tcp.Counters[vmastats.RxBytes] = rate32(3900*90, off)
	tcp.Counters[vmastats.TxOSPackets] = rate32(4000, fallback)
	tcp.Counters[vmastats.TxOSBytes] = rate32(4000*180, fallback)
	tcp.Counters[vmastats.RxOSPackets] = rate32(3900, fallback)
	tcp.Counters[vmastats.RxOSBytes] = rate32(3900*90, fallback)
	tcp.Counters[vmastats.TxRetransmits] = rate32(0.05, t)
	s.Sockets = []vmastats.Socket{udp, tcp}

	b, err := vmastatstest.Encode(s)
	if err != nil {
		return err
	}
	return writeInPlace(filepath.Join(h.VMADir(), vmastats.FilePrefix+strconv.Itoa(vmaDemoPID)), b, vmastats.OffsetReaderCounter)
}

// writeInPlace rewrites a statistics file in place, as libvma and
// libxlio do, all but its reader counter (4 bytes at rc): the collector
// increments that counter at every poll and takes a lower value for a
// library that started over, so replacing the file (or writing the
// counter back) between two polls would reset the process's totals.
func writeInPlace(path string, b []byte, rc int) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err == nil && st.Size() == int64(len(b)) {
		if _, err = f.WriteAt(b[:rc], 0); err == nil {
			_, err = f.WriteAt(b[rc+4:], int64(rc+4))
		}
	} else if err == nil {
		if err = f.Truncate(0); err == nil {
			_, err = f.WriteAt(b, 0)
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
