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
	"github.com/nic-exporter/nic_exporter/xliostats"
)

// XLIOConfig configures the xlio collector.
type XLIOConfig struct {
	// Dirs are the directories searched for xliostat.<pid> files
	// (libxlio's XLIO_STATS_SHMEM_DIR, default /tmp/xlio).
	Dirs []string
	// ProcPath is the procfs mount point, normally /proc.
	ProcPath string
	// PerSocket puts the per-socket series (nic_xlio_fd_*) in the default
	// part of the snapshot; by default they are detail series, served at
	// /metrics/detail only, as for VMA.
	PerSocket bool
	// NoHandshake reads the files without incrementing reader_counter:
	// the exporter then writes nothing, and libxlio copies no counters
	// for it (they stay as the last reader left them, or zero).
	NoHandshake bool
	// Filter selects processes by comm.
	Filter collector.NameFilter
	// Liveness verifies writers. Nil means procfs at ProcPath.
	Liveness vmastats.Liveness
	// Settle is how long to wait after the first handshake with a new
	// process before reading its file; default 20 ms (libxlio's timer
	// runs every 10 ms; xlio_stats waits 15 ms).
	Settle time.Duration
	// MaxFiles and MaxNames bound the work per poll as for VMA
	// (Config.MaxFiles, Config.MaxNames).
	MaxFiles int
	MaxNames int
	// Loaded, when set, replaces Dirs, ProcPath and Liveness, as for VMA
	// (Config.Loaded); the files are decoded with xliostats.Parse.
	Loaded func() map[string]*xliostats.Loaded
}

// XLIO exports the statistics that NVIDIA XLIO (libxlio, VMA's successor)
// publishes per accelerated process, as xlio_stats shows them, with the
// metric model of the vma collector under the prefix nic_xlio_. It
// shares the vma collector's file loop: bounded scan, verified writers,
// reader handshake, per-process totals across socket churn.
type XLIO struct {
	cfg XLIOConfig
	fd  *fdFamilies

	mu  sync.Mutex
	gen uint64
	fileLoop[*xliostats.Loaded, xlioProc]
}

// NewXLIO returns an xlio collector.
func NewXLIO(cfg XLIOConfig, log *zap.Logger) *XLIO {
	if len(cfg.Dirs) == 0 {
		cfg.Dirs = []string{xliostats.DefaultDir}
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
	fd := xlioFDInDetail
	if cfg.PerSocket {
		fd = xlioFDInDefault
	}
	x := &XLIO{cfg: cfg, fd: fd}
	x.fileLoop = fileLoop[*xliostats.Loaded, xlioProc]{
		log: log, what: "libxlio", maxFiles: cfg.MaxFiles, settle: cfg.Settle, liveness: cfg.Liveness, filter: cfg.Filter,
		noHandshake: cfg.NoHandshake,
		load:        xliostats.Load,
		meta: func(l *xliostats.Loaded) fileMeta {
			return fileMeta{proc: l.Process, info: l.Info, readerCounter: l.Stats.ReaderCounter}
		},
		unsupported: func(err error) bool {
			return errors.Is(err, xliostats.ErrUnsupported) || errors.Is(err, xliostats.ErrMalformed)
		},
		fresh: func(vmastats.Process) *xlioProc { return newXLIOProc() },
		use: func(p *collector.Poll, l *xliostats.Loaded, st *xlioProc) {
			st.observe(l.Stats, x.gen)
			renderXLIO(p, l, st, x.fd)
		},
		scan:  vmastats.NewScanner(vmastats.ScannerConfig{Dirs: cfg.Dirs, Prefix: xliostats.FilePrefix, ProcPath: cfg.ProcPath, Liveness: cfg.Liveness, MaxNames: cfg.MaxNames}).Scan,
		procs: make(map[string]*tracked[xlioProc]),
	}
	if cfg.Loaded != nil {
		src := &loadedSource[*xliostats.Loaded]{files: cfg.Loaded, proc: func(l *xliostats.Loaded) vmastats.Process { return l.Process }}
		x.scan, x.load = src.scan, src.load
	}
	return x
}

// Name implements collector.Collector.
func (*XLIO) Name() string { return "xlio" }

var _ collector.Collector = (*XLIO)(nil)

// Update implements collector.Collector.
func (x *XLIO) Update(ctx context.Context, p *collector.Poll) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.gen++
	counts, err := x.poll(ctx, p)
	if err != nil {
		return err
	}
	for _, s := range vmaStates {
		p.Add(xlioFiles, float64(counts[s]), s)
	}
	p.SetDevices(counts[vmaLive])
	return nil
}

// monoCounter follows one counter of libxlio, 32 or 64 bits wide, and
// accumulates a total that survives wraps (32-bit counters, see
// wrapCounter) and resets (a slot reused, xlio_stats -z): a 64-bit
// counter that decreases started again from zero.
type monoCounter struct {
	w32   wrapCounter
	last  uint64
	total uint64
	init  bool
}

func (m *monoCounter) observe(v uint64, size int) {
	if size == 4 {
		m.w32.observe(uint32(v))
		m.total = m.w32.total
		return
	}
	switch {
	case !m.init:
		m.total, m.init = v, true
	case v >= m.last:
		m.total += v - m.last
	default: // reset
		m.total += v
	}
	m.last = v
}

type xlioSock struct {
	counters []monoCounter // by xlioSockCounters index
	gen      uint64
}

type xlioIomux struct {
	c   [len(xlioIomuxCounters)]monoCounter
	gen uint64
}

// xlioProc is the aggregation state of one process.
type xlioProc struct {
	gen    uint64
	closed []uint64 // totals of closed sockets, by xlioSockCounters index
	socks  map[vmaSockKey]*xlioSock
	iomux  map[vmaIomuxKey]*xlioIomux
}

func newXLIOProc() *xlioProc {
	return &xlioProc{closed: make([]uint64, len(xlioSockCounters)), socks: make(map[vmaSockKey]*xlioSock), iomux: make(map[vmaIomuxKey]*xlioIomux)}
}

// xlioIomuxCounters are the iomux counters, in the order of xlioIomux.c.
var xlioIomuxCounters = [...]string{"n_iomux_poll_hit", "n_iomux_poll_miss", "n_iomux_timeouts", "n_iomux_errors", "n_iomux_rx_ready", "n_iomux_os_rx_ready"}

// observe folds one decoded file into the state.
func (st *xlioProc) observe(s *xliostats.Stats, gen uint64) {
	st.gen = gen
	for i := range s.Sockets {
		k := &s.Sockets[i]
		key := vmaSockKey{slot: k.Slot, fd: k.FD, inode: k.Inode}
		ss := st.socks[key]
		if ss == nil {
			ss = &xlioSock{counters: make([]monoCounter, len(xlioSockCounters))}
			st.socks[key] = ss
		}
		ss.gen = gen
		for c, sc := range xlioSockCounters {
			if v, ok := k.Get(sc.xlio); ok {
				ss.counters[c].observe(v, k.Size(sc.xlio))
			}
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
	obs := func(key vmaIomuxKey, v xliostats.Values) {
		m := st.iomux[key]
		if m == nil {
			m = &xlioIomux{}
			st.iomux[key] = m
		}
		m.gen = gen
		for i, name := range xlioIomuxCounters {
			if x, ok := v.Get(name); ok {
				m.c[i].observe(x, v.Size(name))
			}
		}
	}
	obs(vmaIomuxKey{kind: "poll"}, s.Poll)
	obs(vmaIomuxKey{kind: "select"}, s.Select)
	for _, e := range s.Epoll {
		obs(vmaIomuxKey{kind: "epoll", idx: e.Index, fd: e.FD}, e.Values)
	}
	for key, m := range st.iomux {
		if m.gen != gen {
			delete(st.iomux, key)
		}
	}
}

// total returns the process-wide monotonic total of socket counter c.
func (st *xlioProc) total(c int) uint64 {
	t := st.closed[c]
	for _, ss := range st.socks {
		t += ss.counters[c].total
	}
	return t
}

// The families of libxlio whose meaning, help or labels differ from
// libvma's; those it shares are in families.go.
var (
	xlioFiles = exposition.MustNewDesc("nic_xlio_files",
		"libxlio statistics files found, by state: live (read), stale (process gone or pid reused; ignored, never deleted), unsupported (unknown protocol string, or a size that fits no build of its layout; the log line says which), refused (symbolic link, not a regular file, wrong owner, not mapped by the process), error (could not be read), skipped (over the limit of files opened per poll).",
		exposition.Gauge, "state")
	xlioInfo = exposition.MustNewDesc("nic_xlio_process_info",
		"A process accelerated by libxlio, value 1: its libxlio version and statistics layout family (F1-F9 before 3.60, G1-G2 from 3.60; +utls for builds with TLS offload).", exposition.Gauge, "pid", "comm", "version", "layout")
	xlioHandshake = exposition.MustNewDesc("nic_xlio_reader_handshake",
		"1 if the exporter incremented the file's reader_counter so libxlio copies fresh counters into it; 0 if it only read it (counters then stay as libxlio last copied them, or zero).",
		exposition.Gauge, "pid", "comm", "version")
	xlioSocketSlots = exposition.MustNewDesc("nic_xlio_socket_slots",
		"Socket slots of the statistics file (XLIO_STATS_FD_NUM, 0 by default from libxlio 3.30): with 0 libxlio publishes no per-socket statistics, and every nic_xlio_socket_* and nic_xlio_fd_* series is absent or 0.", exposition.Gauge, "pid", "comm", "version")
	xlioSockets = exposition.MustNewDesc("nic_xlio_sockets",
		"Open sockets known to libxlio (those in a socket slot), by protocol and whether libxlio offloads them; offloaded=\"false\" means the traffic takes the kernel (OS) path.",
		exposition.Gauge, "pid", "comm", "version", "protocol", "offloaded")

	xlioCQDrops = exposition.MustNewDesc("nic_xlio_cq_rx_dropped_packets_total",
		"Packets a completion queue dropped in software on receive (n_rx_pkt_drop; n_rx_sw_pkt_drops from libxlio 3.60).", exposition.Counter, "pid", "comm", "version", "cq")
	xlioCQHWDrops = exposition.MustNewDesc("nic_xlio_cq_rx_hw_dropped_packets_total",
		"Packets the hardware dropped for a completion queue on receive (libxlio 3.60 and later).", exposition.Counter, "pid", "comm", "version", "cq")
	xlioCQPackets = exposition.MustNewDesc("nic_xlio_cq_rx_packets_total",
		"Packets received through a completion queue.", exposition.Counter, "pid", "comm", "version", "cq")
	xlioCQErrors = exposition.MustNewDesc("nic_xlio_cq_rx_cqe_errors_total",
		"Completions with an error status on a receive completion queue.", exposition.Counter, "pid", "comm", "version", "cq")

	xlioRingDroppedWQEs = exposition.MustNewDesc("nic_xlio_ring_tx_dropped_send_requests_total",
		"Send requests a ring dropped (n_tx_dropped_wqes, \"TX Dropped Send Reqs\" in xlio_stats).", exposition.Counter, "pid", "comm", "version", "ring", "type")
	xlioRingTapBuffers = exposition.MustNewDesc("nic_xlio_ring_tap_rx_buffers",
		"Receive buffers of a tap ring (before libxlio 3.60).", exposition.Gauge, "pid", "comm", "version", "ring", "tap")
	xlioRingTapPlugouts = exposition.MustNewDesc("nic_xlio_ring_tap_vf_plugouts_total",
		"Times the virtual function behind a tap ring was unplugged (before libxlio 3.60).", exposition.Counter, "pid", "comm", "version", "ring", "tap")

	xlioPoolSize = exposition.MustNewDesc("nic_xlio_buffer_pool_size_buffers",
		"Buffers in a libxlio buffer pool; pool is the pool's index, kind rx or tx.", exposition.Gauge, "pid", "comm", "version", "pool", "kind")
	xlioPoolNoBufs = exposition.MustNewDesc("nic_xlio_buffer_pool_no_buffers_total",
		"Times a buffer pool had no buffer to give (the locked-memory limit situation).", exposition.Counter, "pid", "comm", "version", "pool", "kind")
	xlioPoolExpands = exposition.MustNewDesc("nic_xlio_buffer_pool_expands_total",
		"Times a buffer pool grew.", exposition.Counter, "pid", "comm", "version", "pool", "kind")

	xlioSegPoolSize = exposition.MustNewDesc("nic_xlio_tcp_segment_pool_size_segments",
		"TCP segments in libxlio's segment pool.", exposition.Gauge, "pid", "comm", "version")
	xlioSegPoolNoSegs = exposition.MustNewDesc("nic_xlio_tcp_segment_pool_no_segments_total",
		"Times the TCP segment pool had no segment to give.", exposition.Counter, "pid", "comm", "version")
	xlioPendingSockets = exposition.MustNewDesc("nic_xlio_pending_sockets",
		"Sockets closed by the application that libxlio has not finished closing.", exposition.Gauge, "pid", "comm", "version")
	xlioDestructed = exposition.MustNewDesc("nic_xlio_destructed_sockets_total",
		"Sockets libxlio destroyed, by protocol.", exposition.Counter, "pid", "comm", "version", "protocol")

	xlioIomuxCPU = exposition.MustNewDesc("nic_xlio_iomux_polling_cpu_percent",
		"Share of time poll/select/epoll spent busy-polling, in percent (filled with XLIO_CPU_USAGE_STATS).", exposition.Gauge, "pid", "comm", "version", "iomux", "epfd")
)

// The families libxlio shares with libvma (families.go).
var (
	xlioShared                      = libXLIO.families()
	xlioSockCounters                = libXLIO.sockCounters()
	xlioFDInDefault, xlioFDInDetail = libXLIO.fdFamilies(xlioSockCounters)
)

// addValue adds the series of field name of v if the layout has it.
func addValue(p *collector.Poll, d *exposition.Desc, v xliostats.Values, name string, scale float64, labels ...string) {
	if x, ok := v.Float(name); ok {
		p.Add(d, x*scale, labels...)
	}
}

// renderXLIO adds the series of one libxlio process.
func renderXLIO(p *collector.Poll, l *xliostats.Loaded, st *xlioProc, fd *fdFamilies) {
	s := l.Stats
	b := newProcLabels(l.Process.PID, l.Process.Comm, s.Version())
	p.Add(xlioInfo, 1, b.with(s.LayoutName())...)
	p.Add(xlioHandshake, collector.Bool(l.Handshake), b...)
	if !l.Process.Start.IsZero() {
		p.Add(xlioShared.startTime, float64(l.Process.Start.Unix()), b...)
	}
	p.Add(xlioSocketSlots, float64(s.MaxSockets), b...)
	renderXLIOSockets(p, s, st, b)
	renderXLIOQueues(p, s, b)
	renderXLIOIomux(p, s, st, b)
	groups := make([]mcGroup, len(s.Groups))
	for i, g := range s.Groups {
		groups[i] = mcGroup(g)
	}
	renderXLIOFDs(p, s, st, fd, b, emitGroups(p, xlioShared.mcGroup, b, groups))
}

// renderXLIOSockets adds the socket counts and the process's totals of
// the socket counters its layout has.
func renderXLIOSockets(p *collector.Poll, s *xliostats.Stats, st *xlioProc, b procLabels) {
	classes := map[sockClass]int{}
	var rxPkts, rxBytes, txBytes uint64
	for i := range s.Sockets {
		k := &s.Sockets[i]
		classes[sockClass{k.Protocol(), strconv.FormatBool(k.Offloaded)}]++
		a, _ := k.Get("n_rx_ready_pkt_count")
		c, _ := k.Get("n_rx_ready_byte_count")
		d, _ := k.Get("n_tx_ready_byte_count")
		rxPkts, rxBytes, txBytes = rxPkts+a, rxBytes+c, txBytes+d
	}
	emitSocketClasses(p, xlioSockets, b, classes)
	p.Add(xlioShared.rxReadyPackets, float64(rxPkts), b...)
	p.Add(xlioShared.rxReadyBytes, float64(rxBytes), b...)
	p.Add(xlioShared.txReadyBytes, float64(txBytes), b...)
	for i, sc := range xlioSockCounters {
		if s.Layout.HasSocketField(sc.xlio) {
			p.Add(sc.agg, float64(st.total(i)), b.with(sc.extra...)...)
		}
	}
}

// renderXLIOQueues adds the completion queues, rings, buffer pools and
// the global block.
func renderXLIOQueues(p *collector.Poll, s *xliostats.Stats, b procLabels) {
	for _, c := range s.CQs {
		l := b.with(strconv.Itoa(c.Index))
		if _, ok := c.Get("n_rx_pkt_drop"); ok {
			addValue(p, xlioCQDrops, c.Values, "n_rx_pkt_drop", 1, l...)
		} else {
			addValue(p, xlioCQDrops, c.Values, "n_rx_sw_pkt_drops", 1, l...)
		}
		addValue(p, xlioCQHWDrops, c.Values, "n_rx_hw_pkt_drops", 1, l...)
		addValue(p, xlioCQPackets, c.Values, "n_rx_packet_count", 1, l...)
		addValue(p, xlioCQErrors, c.Values, "n_rx_cqe_error", 1, l...)
		addValue(p, xlioShared.cqQueue, c.Values, "n_rx_sw_queue_len", 1, l...)
		addValue(p, xlioShared.cqDrained, c.Values, "n_rx_drained_at_once_max", 1, l...)
		addValue(p, xlioShared.cqPool, c.Values, "n_buffer_pool_len", 1, l...)
	}
	for _, r := range s.Rings {
		idx, typ := strconv.Itoa(r.Index), r.Type
		v := r.Values
		addValue(p, xlioShared.ringPackets, v, "n_rx_pkt_count", 1, b.with(idx, typ, "rx")...)
		addValue(p, xlioShared.ringPackets, v, "n_tx_pkt_count", 1, b.with(idx, typ, "tx")...)
		addValue(p, xlioShared.ringBytes, v, "n_rx_byte_count", 1, b.with(idx, typ, "rx")...)
		addValue(p, xlioShared.ringBytes, v, "n_tx_byte_count", 1, b.with(idx, typ, "tx")...)
		addValue(p, xlioShared.ringRetrans, v, "n_tx_retransmits", 1, b.with(idx, typ)...)
		if r.Type == "RING_TAP" {
			addValue(p, xlioRingTapBuffers, v, "tap.n_rx_buffers", 1, b.with(idx, r.TapName)...)
			addValue(p, xlioRingTapPlugouts, v, "tap.n_vf_plugouts", 1, b.with(idx, r.TapName)...)
			continue
		}
		addValue(p, xlioRingDroppedWQEs, v, "n_tx_dropped_wqes", 1, b.with(idx, typ)...)
		addValue(p, xlioShared.ringIntr, v, "n_rx_interrupt_requests", 1, b.with(idx, typ, "requested")...)
		addValue(p, xlioShared.ringIntr, v, "n_rx_interrupt_received", 1, b.with(idx, typ, "received")...)
		addValue(p, xlioShared.ringModCount, v, "n_rx_cq_moderation_count", 1, b.with(idx, typ)...)
		addValue(p, xlioShared.ringModPeriod, v, "n_rx_cq_moderation_period", 1e-6, b.with(idx, typ)...)
	}
	for _, bp := range s.BufferPools {
		kind := "tx"
		if x, _ := bp.Get("is_rx"); x != 0 {
			kind = "rx"
		}
		l := b.with(strconv.Itoa(bp.Index), kind)
		addValue(p, xlioPoolSize, bp.Values, "n_buffer_pool_size", 1, l...)
		addValue(p, xlioPoolNoBufs, bp.Values, "n_buffer_pool_no_bufs", 1, l...)
		addValue(p, xlioPoolExpands, bp.Values, "n_buffer_pool_expands", 1, l...)
	}
	if g := s.Global; g != nil {
		addValue(p, xlioSegPoolSize, g.Values, "n_tcp_seg_pool_size", 1, b...)
		addValue(p, xlioSegPoolNoSegs, g.Values, "n_tcp_seg_pool_no_segs", 1, b...)
		addValue(p, xlioPendingSockets, g.Values, "n_pending_sockets", 1, b...)
		addValue(p, xlioDestructed, g.Values, "socket_tcp_destructor_counter", 1, b.with("tcp")...)
		addValue(p, xlioDestructed, g.Values, "socket_udp_destructor_counter", 1, b.with("udp")...)
	}
}

// renderXLIOIomux adds the poll, select and epoll users, as for VMA.
func renderXLIOIomux(p *collector.Poll, s *xliostats.Stats, st *xlioProc, b procLabels) {
	user := func(kind string, idx int, fd int32, v xliostats.Values) {
		m := st.iomux[vmaIomuxKey{kind: kind, idx: idx, fd: fd}]
		if m == nil {
			return
		}
		var c [6]uint64
		for i := range c {
			c[i] = m.c[i].total
		}
		epfd := epfdLabel(kind, fd)
		emitIomux(p, xlioShared.iomux, b, kind, epfd, c)
		addValue(p, xlioIomuxCPU, v, "n_iomux_polling_time", 1, b.with(kind, epfd)...)
	}
	user("poll", 0, 0, s.Poll)
	user("select", 0, 0, s.Select)
	fds := make([]int32, len(s.Epoll))
	for i, e := range s.Epoll {
		fds[i] = e.FD
	}
	for _, i := range firstPerEpfd(fds) {
		e := s.Epoll[i]
		user("epoll", e.Index, e.FD, e.Values)
	}
}

// renderXLIOFDs adds the per-socket series, as renderVMAFDs does.
func renderXLIOFDs(p *collector.Poll, s *xliostats.Stats, st *xlioProc, fd *fdFamilies, b procLabels, groups map[int]string) {
	seen := make(map[fdID]bool, len(s.Sockets))
	for i := range s.Sockets {
		k := &s.Sockets[i]
		ss := st.socks[vmaSockKey{slot: k.Slot, fd: k.FD, inode: k.Inode}]
		if ss == nil {
			continue
		}
		local := hostPort(k.BoundIf.String(), k.BoundIf.Is6(), k.BoundPort)
		remote := ""
		if k.ConnectedPort != 0 || !k.ConnectedIP.IsUnspecified() {
			remote = hostPort(k.ConnectedIP.String(), k.ConnectedIP.Is6(), k.ConnectedPort)
		}
		fdl, ok := fdLabels(seen, b, fdID{strconv.Itoa(int(k.FD)), k.Protocol(), local, remote})
		if !ok {
			continue
		}
		state := ""
		if k.Type == xliostats.SockStream && int(k.TCPState) < len(tcpStates) {
			state = tcpStates[k.TCPState]
		}
		p.Add(fd.info, 1, withLast(fdl, strconv.FormatBool(k.Offloaded), state)...)
		addValue(p, fd.rxReadyPackets, k.Values, "n_rx_ready_pkt_count", 1, fdl...)
		addValue(p, fd.rxReadyBytes, k.Values, "n_rx_ready_byte_count", 1, fdl...)
		for i, sc := range xlioSockCounters {
			if s.Layout.HasSocketField(sc.xlio) {
				p.Add(fd.counters[i], float64(ss.counters[i].total), withLast(fdl, sc.extra...)...)
			}
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

// hostPort joins an address and a port, bracketing IPv6 addresses.
func hostPort(addr string, v6 bool, port uint16) string {
	if v6 {
		return fmt.Sprintf("[%s]:%d", addr, port)
	}
	return fmt.Sprintf("%s:%d", addr, port)
}
