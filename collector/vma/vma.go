// Package vma holds the vma and xlio collectors: per-process statistics
// of applications accelerated by NVIDIA VMA and by its successor XLIO,
// read safely from libvma's vmastat.<pid> and libxlio's xliostat.<pid>
// shared-memory files. The two collectors share the file loop (files.go),
// the rendering helpers (render.go) and the metric model: the families
// whose meaning is the same in both libraries are defined once
// (families.go) and built under each prefix.
package vma

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/vmastats"
)

// Config configures the vma collector.
type Config struct {
	// Dirs are the directories searched for vmastat.<pid> files
	// (libvma's VMA_STATS_SHMEM_DIR, default /tmp).
	Dirs []string
	// ProcPath is the procfs mount point, normally /proc.
	ProcPath string
	// PerSocket puts the per-socket series (nic_vma_fd_*) in the default
	// part of the snapshot, served at /metrics. Off by default: file
	// descriptors churn and each one makes new series, so they are
	// detail series (exposition.Desc.AsDetail), served at /metrics/detail
	// from the same poll.
	PerSocket bool
	// Filter selects processes by comm; it is applied after the writer
	// is verified in procfs and before the file is opened for reading.
	Filter collector.NameFilter
	// Liveness verifies writers. Nil means procfs at ProcPath; the demo
	// host injects its own because its application is simulated.
	Liveness vmastats.Liveness
	// Settle is how long to wait after the first handshake with a new
	// process before reading its file; default 20 ms.
	Settle time.Duration
	// MaxFiles is the most files opened per poll; default DefaultMaxFiles.
	// The statistics directory is often world-writable (/tmp), so anyone
	// can fill it with vmastat.<pid> files; files of pids that do not
	// exist are counted stale without being opened, the files of
	// processes exported at the last poll are opened first, and the rest
	// take turns over the polls. Files left over are counted as skipped.
	MaxFiles int
	// MaxNames is the most directory entries read per poll; default
	// vmastats.DefaultMaxNames. The files of live processes are looked
	// up by name (see vmastats.Scanner), so they are found at every poll
	// however many names the directories hold; the entries read serve to
	// count the files of dead pids, over as many polls as that takes.
	MaxNames int
	// Loaded, when set, replaces Dirs, ProcPath and Liveness: each poll
	// exports the files it returns, keyed by a name for the log and the
	// source errors, as if loaded from a directory, with the process
	// and handshake each Loaded gives; nothing on the host is read.
	// nic_exporter diagnose runs the collector over the statistics files
	// of a support bundle this way, decoded with vmastats.Parse.
	Loaded func() map[string]*vmastats.Loaded
}

// DefaultMaxFiles is the default of Config.MaxFiles: far more accelerated
// processes than a host runs, few enough that a poll stays short.
const DefaultMaxFiles = 512

// Collector exports the statistics that NVIDIA VMA (libvma) publishes per
// accelerated process, as vma_stats shows them. It performs libvma's
// reader handshake on every poll: without it libvma stops copying its
// counters into the file about 10 s after the last reader.
type Collector struct {
	cfg Config
	fd  *fdFamilies // the per-socket families, in the part cfg.PerSocket says

	mu  sync.Mutex
	gen uint64
	fileLoop[*vmastats.Loaded, vmaProc]
}

// New returns a vma collector.
func New(cfg Config, log *zap.Logger) *Collector {
	if len(cfg.Dirs) == 0 {
		cfg.Dirs = []string{"/tmp"}
	}
	if cfg.ProcPath == "" {
		cfg.ProcPath = "/proc"
	}
	if cfg.Liveness == nil {
		cfg.Liveness = vmastats.NewProcLiveness(cfg.ProcPath)
	}
	if cfg.Settle == 0 {
		cfg.Settle = 20 * time.Millisecond
	}
	if cfg.MaxFiles <= 0 {
		cfg.MaxFiles = DefaultMaxFiles
	}
	fd := fdInDetail
	if cfg.PerSocket {
		fd = fdInDefault
	}
	v := &Collector{cfg: cfg, fd: fd}
	v.fileLoop = fileLoop[*vmastats.Loaded, vmaProc]{
		log: log, what: "libvma", maxFiles: cfg.MaxFiles, settle: cfg.Settle, liveness: cfg.Liveness, filter: cfg.Filter,
		load: vmastats.Load,
		meta: func(l *vmastats.Loaded) fileMeta {
			return fileMeta{proc: l.Process, info: l.Info, readerCounter: l.Stats.ReaderCounter}
		},
		unsupported: func(err error) bool {
			return errors.Is(err, vmastats.ErrUnsupported) || errors.Is(err, vmastats.ErrMalformed)
		},
		fresh: newVMAProc,
		use: func(p *collector.Poll, l *vmastats.Loaded, st *vmaProc) {
			st.observe(l.Stats, v.gen)
			renderVMA(p, l, st, v.fd)
		},
		scan:  vmastats.NewScanner(vmastats.ScannerConfig{Dirs: cfg.Dirs, ProcPath: cfg.ProcPath, Liveness: cfg.Liveness, MaxNames: cfg.MaxNames}).Scan,
		procs: make(map[string]*tracked[vmaProc]),
	}
	if cfg.Loaded != nil {
		src := &loadedSource[*vmastats.Loaded]{files: cfg.Loaded, proc: func(l *vmastats.Loaded) vmastats.Process { return l.Process }}
		v.scan, v.load = src.scan, src.load
	}
	return v
}

// Name implements collector.Collector.
func (*Collector) Name() string { return "vma" }

var _ collector.Collector = (*Collector)(nil)

// wrapCounter follows one 32-bit counter of one source and accumulates
// it into a 64-bit total that survives wraps at 2^32.
type wrapCounter struct {
	last  uint32
	total uint64
	init  bool
}

// observe accounts for a new reading. An increase adds the difference. A
// decrease is a wrap at 2^32 only when the last reading was in the upper
// half of the 32-bit range and the new one is in the lower half; then the
// counter advanced by the modular difference, which is right through one
// wrap per poll. Any other decrease is a reset (the counter started again
// from zero, as libvma's do when a socket's slot is reinitialised), so
// the new reading is added whole: taking it for a wrap would add nearly
// 2^32. A 32-bit counter that advances by 2^31 or more between two polls
// is miscounted; at 10 Gb/s a byte counter wraps every 3.4 s, so such
// applications need a short poll interval. Torn reads, the other source
// of a lower reading, are kept out by vmastats.Load, which decodes only
// two identical consecutive reads.
func (w *wrapCounter) observe(v uint32) {
	if !w.init {
		w.last, w.total, w.init = v, uint64(v), true
		return
	}
	switch {
	case v >= w.last:
		w.total += uint64(v - w.last)
	case w.last >= 1<<31 && v < 1<<31: // wrapped
		w.total += uint64(v - w.last)
	default: // reset
		w.total += uint64(v)
	}
	w.last = v
}

// vmaSockKey identifies one socket: libvma reuses slots for new sockets.
type vmaSockKey struct {
	slot  int
	fd    int32
	inode uint32
}

type vmaSock struct {
	counters [vmastats.NumCounters]wrapCounter
	gen      uint64
}

type vmaIomuxKey struct {
	kind string
	idx  int
	fd   int32
}

type vmaIomux struct {
	c   [6]wrapCounter // hit, miss, timeouts, errors, rx ready, os rx ready
	gen uint64
}

// vmaProc is the aggregation state of one process. It is reset when the
// process (pid and start time) changes, or when libvma re-creates the
// file within the same process.
type vmaProc struct {
	gen    uint64
	closed [vmastats.NumCounters]uint64 // totals of closed sockets
	socks  map[vmaSockKey]*vmaSock
	iomux  map[vmaIomuxKey]*vmaIomux
}

func newVMAProc(vmastats.Process) *vmaProc {
	return &vmaProc{socks: make(map[vmaSockKey]*vmaSock), iomux: make(map[vmaIomuxKey]*vmaIomux)}
}

// observe folds one decoded file into the state.
func (st *vmaProc) observe(s *vmastats.Stats, gen uint64) {
	st.gen = gen
	for i := range s.Sockets {
		k := &s.Sockets[i]
		key := vmaSockKey{slot: k.Slot, fd: k.FD, inode: k.Inode}
		ss := st.socks[key]
		if ss == nil {
			ss = &vmaSock{}
			st.socks[key] = ss
		}
		ss.gen = gen
		for c, v := range k.Counters {
			ss.counters[c].observe(v)
		}
	}
	for key, ss := range st.socks {
		if ss.gen != gen { // closed, or its slot was reused
			for c := range ss.counters {
				st.closed[c] += ss.counters[c].total
			}
			delete(st.socks, key)
		}
	}
	obs := func(key vmaIomuxKey, x vmastats.IomuxStats) {
		m := st.iomux[key]
		if m == nil {
			m = &vmaIomux{}
			st.iomux[key] = m
		}
		m.gen = gen
		for i, v := range []uint32{x.PollHit, x.PollMiss, x.Timeouts, x.Errors, x.RxReady, x.OSRxReady} {
			m.c[i].observe(v)
		}
	}
	obs(vmaIomuxKey{kind: "poll"}, s.Iomux.Poll)
	obs(vmaIomuxKey{kind: "select"}, s.Iomux.Select)
	for _, e := range s.Iomux.Epoll {
		obs(vmaIomuxKey{kind: "epoll", idx: e.Index, fd: e.FD}, e.IomuxStats)
	}
	for key, m := range st.iomux {
		if m.gen != gen {
			delete(st.iomux, key)
		}
	}
}

// total returns the process-wide monotonic total of counter c.
func (st *vmaProc) total(c vmastats.Counter) uint64 {
	t := st.closed[c]
	for _, ss := range st.socks {
		t += ss.counters[c].total
	}
	return t
}

// Update implements collector.Collector.
func (v *Collector) Update(ctx context.Context, p *collector.Poll) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.gen++
	counts, err := v.poll(ctx, p)
	if err != nil {
		return err
	}
	for _, s := range vmaStates {
		p.Add(vmaFiles, float64(counts[s]), s)
	}
	p.SetDevices(counts[vmaLive])
	return nil
}

// The families of libvma whose meaning, help or labels differ from
// libxlio's; those it shares are in families.go.
var (
	vmaFiles = exposition.MustNewDesc("nic_vma_files",
		"libvma statistics files found, by state: live (read), stale (process gone or pid reused; ignored, never deleted), unsupported (unknown version or size), refused (symbolic link, not a regular file, wrong owner, not mapped by the process), error (could not be read), skipped (not opened this poll: over the limit of files opened per poll).",
		exposition.Gauge, "state")
	vmaInfo = exposition.MustNewDesc("nic_vma_process_info",
		"A process accelerated by libvma, value 1: its libvma version and statistics layout.", exposition.Gauge, "pid", "comm", "version", "layout")
	vmaHandshake = exposition.MustNewDesc("nic_vma_reader_handshake",
		"1 if the exporter could increment the file's reader_counter so libvma keeps copying fresh counters; 0 if it may only read (counters then stay as libvma last copied them).",
		exposition.Gauge, "pid", "comm", "version")
	vmaSockets = exposition.MustNewDesc("nic_vma_sockets",
		"Open sockets known to libvma, by protocol and whether libvma offloads them; offloaded=\"false\" means the traffic takes the kernel (OS) path.",
		exposition.Gauge, "pid", "comm", "version", "protocol", "offloaded")

	vmaCQDrops = exposition.MustNewDesc("nic_vma_cq_rx_dropped_packets_total",
		"Packets a completion queue dropped on receive.", exposition.Counter, "pid", "comm", "version", "cq")

	vmaRingTapBuffers = exposition.MustNewDesc("nic_vma_ring_tap_rx_buffers",
		"Receive buffers of a tap ring.", exposition.Gauge, "pid", "comm", "version", "ring", "tap")
	vmaRingTapPlugouts = exposition.MustNewDesc("nic_vma_ring_tap_vf_plugouts_total",
		"Times the virtual function behind a tap ring was unplugged.", exposition.Counter, "pid", "comm", "version", "ring", "tap")

	vmaPoolSize = exposition.MustNewDesc("nic_vma_buffer_pool_size_buffers",
		"Buffers in a libvma buffer pool.", exposition.Gauge, "pid", "comm", "version", "pool")
	vmaPoolNoBufs = exposition.MustNewDesc("nic_vma_buffer_pool_no_buffers_total",
		"Times a buffer pool had no buffer to give (the \"Failed to allocate buffer pool\" / memlock limit situation).", exposition.Counter, "pid", "comm", "version", "pool")

	vmaIomuxCPU = exposition.MustNewDesc("nic_vma_iomux_polling_cpu_percent",
		"Share of time poll/select/epoll spent busy-polling, in percent.", exposition.Gauge, "pid", "comm", "version", "iomux", "epfd")
)

// The families libvma shares with libxlio (families.go).
var (
	vmaShared               = libVMA.families()
	vmaSockCounters         = libVMA.sockCounters()
	fdInDefault, fdInDetail = libVMA.fdFamilies(vmaSockCounters)
)

// tcpStates are lwip's TCP state names.
var tcpStates = []string{"CLOSED", "LISTEN", "SYN_SENT", "SYN_RCVD", "ESTABLISHED", "FIN_WAIT_1", "FIN_WAIT_2", "CLOSE_WAIT", "CLOSING", "LAST_ACK", "TIME_WAIT"}

// renderVMA adds the series of one libvma process.
func renderVMA(p *collector.Poll, l *vmastats.Loaded, st *vmaProc, fd *fdFamilies) {
	s := l.Stats
	b := newProcLabels(l.Process.PID, l.Process.Comm, s.Version())
	p.Add(vmaInfo, 1, b.with(s.Layout.String())...)
	p.Add(vmaHandshake, collector.Bool(l.Handshake), b...)
	if !l.Process.Start.IsZero() {
		p.Add(vmaShared.startTime, float64(l.Process.Start.Unix()), b...)
	}
	renderVMASockets(p, s, st, b)
	renderVMAQueues(p, s, b)
	renderVMAIomux(p, s, st, b)
	groups := make([]mcGroup, len(s.Multicast.Groups))
	for i, g := range s.Multicast.Groups {
		groups[i] = mcGroup(g)
	}
	renderVMAFDs(p, s, st, fd, b, emitGroups(p, vmaShared.mcGroup, b, groups))
}

// renderVMASockets adds the socket counts and the process's totals of the
// socket counters.
func renderVMASockets(p *collector.Poll, s *vmastats.Stats, st *vmaProc, b procLabels) {
	classes := map[sockClass]int{}
	var rxPkts, rxBytes, txBytes uint64
	for i := range s.Sockets {
		k := &s.Sockets[i]
		classes[sockClass{k.Protocol(), strconv.FormatBool(k.Offloaded)}]++
		rxPkts += uint64(k.RxReadyPkts)
		rxBytes += k.RxReadyBytes
		txBytes += k.TxReadyBytes
	}
	emitSocketClasses(p, vmaSockets, b, classes)
	p.Add(vmaShared.rxReadyPackets, float64(rxPkts), b...)
	p.Add(vmaShared.rxReadyBytes, float64(rxBytes), b...)
	p.Add(vmaShared.txReadyBytes, float64(txBytes), b...)
	for _, sc := range vmaSockCounters {
		p.Add(sc.agg, float64(st.total(sc.vma)), b.with(sc.extra...)...)
	}
}

// renderVMAQueues adds the completion queues, rings and buffer pools.
func renderVMAQueues(p *collector.Poll, s *vmastats.Stats, b procLabels) {
	for _, c := range s.CQs {
		l := b.with(strconv.Itoa(c.Index))
		p.Add(vmaCQDrops, float64(c.RxPktDrop), l...)
		p.Add(vmaShared.cqQueue, float64(c.RxSWQueueLen), l...)
		p.Add(vmaShared.cqDrained, float64(c.RxDrainedAtOnceMax), l...)
		p.Add(vmaShared.cqPool, float64(c.BufferPoolLen), l...)
	}
	for _, r := range s.Rings {
		idx, typ := strconv.Itoa(r.Index), r.Type.String()
		p.Add(vmaShared.ringPackets, float64(r.RxPackets), b.with(idx, typ, "rx")...)
		p.Add(vmaShared.ringPackets, float64(r.TxPackets), b.with(idx, typ, "tx")...)
		p.Add(vmaShared.ringBytes, float64(r.RxBytes), b.with(idx, typ, "rx")...)
		p.Add(vmaShared.ringBytes, float64(r.TxBytes), b.with(idx, typ, "tx")...)
		p.Add(vmaShared.ringRetrans, float64(r.TxRetransmits), b.with(idx, typ)...)
		if x := r.Simple; x != nil {
			p.Add(vmaShared.ringIntr, float64(x.RxInterruptRequests), b.with(idx, typ, "requested")...)
			p.Add(vmaShared.ringIntr, float64(x.RxInterruptReceived), b.with(idx, typ, "received")...)
			p.Add(vmaShared.ringModCount, float64(x.RxCQModerationCount), b.with(idx, typ)...)
			p.Add(vmaShared.ringModPeriod, float64(x.RxCQModerationPeriod)/1e6, b.with(idx, typ)...)
		}
		if t := r.Tap; t != nil {
			p.Add(vmaRingTapBuffers, float64(t.RxBuffers), b.with(idx, t.Name)...)
			p.Add(vmaRingTapPlugouts, float64(t.VFPlugouts), b.with(idx, t.Name)...)
		}
	}
	for _, bp := range s.BufferPools {
		name := strconv.Itoa(bp.Index)
		switch {
		case bp.IsRx && !bp.IsTx:
			name = "rx"
		case bp.IsTx && !bp.IsRx:
			name = "tx"
		}
		p.Add(vmaPoolSize, float64(bp.Size), b.with(name)...)
		p.Add(vmaPoolNoBufs, float64(bp.NoBuffers), b.with(name)...)
	}
}

// renderVMAIomux adds the poll, select and epoll users.
func renderVMAIomux(p *collector.Poll, s *vmastats.Stats, st *vmaProc, b procLabels) {
	user := func(kind string, idx int, fd int32, x vmastats.IomuxStats) {
		m := st.iomux[vmaIomuxKey{kind: kind, idx: idx, fd: fd}]
		if m == nil {
			return
		}
		var c [6]uint64
		for i := range c {
			c[i] = m.c[i].total
		}
		epfd := epfdLabel(kind, fd)
		emitIomux(p, vmaShared.iomux, b, kind, epfd, c)
		p.Add(vmaIomuxCPU, float64(x.PollingTime), b.with(kind, epfd)...)
	}
	user("poll", 0, 0, s.Iomux.Poll)
	user("select", 0, 0, s.Iomux.Select)
	fds := make([]int32, len(s.Iomux.Epoll))
	for i, e := range s.Iomux.Epoll {
		fds[i] = e.FD
	}
	for _, i := range firstPerEpfd(fds) {
		e := s.Iomux.Epoll[i]
		user("epoll", e.Index, e.FD, e.IomuxStats)
	}
}

// renderVMAFDs adds the per-socket series (the families of fd: the
// default or the detail part), one set per socket label set; groups names
// the multicast group of each entry index.
func renderVMAFDs(p *collector.Poll, s *vmastats.Stats, st *vmaProc, fd *fdFamilies, b procLabels, groups map[int]string) {
	seen := make(map[fdID]bool, len(s.Sockets))
	for i := range s.Sockets {
		k := &s.Sockets[i]
		ss := st.socks[vmaSockKey{slot: k.Slot, fd: k.FD, inode: k.Inode}]
		if ss == nil {
			continue
		}
		local := fmt.Sprintf("%s:%d", k.BoundIf, k.BoundPort)
		remote := ""
		if k.ConnectedPort != 0 || !k.ConnectedIP.IsUnspecified() {
			remote = fmt.Sprintf("%s:%d", k.ConnectedIP, k.ConnectedPort)
		}
		fdl, ok := fdLabels(seen, b, fdID{strconv.Itoa(int(k.FD)), k.Protocol(), local, remote})
		if !ok {
			continue
		}
		state := ""
		if k.Type == vmastats.SockStream && int(k.TCPState) < len(tcpStates) {
			state = tcpStates[k.TCPState]
		}
		p.Add(fd.info, 1, withLast(fdl, strconv.FormatBool(k.Offloaded), state)...)
		p.Add(fd.rxReadyPackets, float64(k.RxReadyPkts), fdl...)
		p.Add(fd.rxReadyBytes, float64(k.RxReadyBytes), fdl...)
		for i, sc := range vmaSockCounters {
			p.Add(fd.counters[i], float64(ss.counters[sc.vma].total), withLast(fdl, sc.extra...)...)
		}
		member := make(map[string]bool, len(k.MCGroups))
		for _, g := range k.MCGroups {
			if name, ok := groups[g]; ok && !member[name] {
				member[name] = true
				p.Add(fd.member, 1, withLast(fdl, name)...)
			}
		}
	}
}
