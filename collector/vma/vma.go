// Package vma holds the vma and xlio collectors: per-process statistics
// of applications accelerated by NVIDIA VMA and by its successor XLIO,
// read safely from libvma's vmastat.<pid> and libxlio's xliostat.<pid>
// shared-memory files. The two collectors share the file loop (files.go)
// and the metric model; they differ in the decoder and the prefix.
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
		scanner: vmastats.NewScanner(vmastats.ScannerConfig{Dirs: cfg.Dirs, ProcPath: cfg.ProcPath, Liveness: cfg.Liveness, MaxNames: cfg.MaxNames}),
		procs:   make(map[string]*tracked[vmaProc]),
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

var (
	vmaFiles = exposition.MustNewDesc("nic_vma_files",
		"libvma statistics files found, by state: live (read), stale (process gone or pid reused; ignored, never deleted), unsupported (unknown version or size), refused (symbolic link, not a regular file, wrong owner, not mapped by the process), error (could not be read), skipped (not opened this poll: over the limit of files opened per poll).",
		exposition.Gauge, "state")
	vmaInfo = exposition.MustNewDesc("nic_vma_process_info",
		"A process accelerated by libvma, value 1: its libvma version and statistics layout.", exposition.Gauge, "pid", "comm", "version", "layout")
	vmaHandshake = exposition.MustNewDesc("nic_vma_reader_handshake",
		"1 if the exporter could increment the file's reader_counter so libvma keeps copying fresh counters; 0 if it may only read (counters then stay as libvma last copied them).",
		exposition.Gauge, "pid", "comm", "version")
	vmaStartTime = exposition.MustNewDesc("nic_vma_process_start_time_seconds",
		"Start time of the process, in seconds since the epoch; per-process totals restart when it changes.", exposition.Gauge, "pid", "comm", "version")
	vmaSockets = exposition.MustNewDesc("nic_vma_sockets",
		"Open sockets known to libvma, by protocol and whether libvma offloads them; offloaded=\"false\" means the traffic takes the kernel (OS) path.",
		exposition.Gauge, "pid", "comm", "version", "protocol", "offloaded")
	vmaRxReadyPackets = exposition.MustNewDesc("nic_vma_socket_rx_ready_packets",
		"Packets waiting in sockets' receive ready queues, summed over the process's sockets.", exposition.Gauge, "pid", "comm", "version")
	vmaRxReadyBytes = exposition.MustNewDesc("nic_vma_socket_rx_ready_bytes",
		"Bytes waiting in sockets' receive ready queues, summed over the process's sockets.", exposition.Gauge, "pid", "comm", "version")
	vmaTxReadyBytes = exposition.MustNewDesc("nic_vma_socket_tx_ready_bytes",
		"Bytes waiting to be sent, summed over the process's sockets.", exposition.Gauge, "pid", "comm", "version")

	vmaCQDrops = exposition.MustNewDesc("nic_vma_cq_rx_dropped_packets_total",
		"Packets a completion queue dropped on receive.", exposition.Counter, "pid", "comm", "version", "cq")
	vmaCQQueue = exposition.MustNewDesc("nic_vma_cq_rx_queue_length",
		"Packets in a completion queue's software receive queue.", exposition.Gauge, "pid", "comm", "version", "cq")
	vmaCQDrained = exposition.MustNewDesc("nic_vma_cq_rx_drained_at_once_max",
		"Largest number of completions drained at once.", exposition.Gauge, "pid", "comm", "version", "cq")
	vmaCQPool = exposition.MustNewDesc("nic_vma_cq_buffer_pool_length",
		"Buffers in a completion queue's buffer pool.", exposition.Gauge, "pid", "comm", "version", "cq")

	vmaRingPackets = exposition.MustNewDesc("nic_vma_ring_packets_total",
		"Packets through a ring, by direction.", exposition.Counter, "pid", "comm", "version", "ring", "type", "direction")
	vmaRingBytes = exposition.MustNewDesc("nic_vma_ring_bytes_total",
		"Bytes through a ring, by direction.", exposition.Counter, "pid", "comm", "version", "ring", "type", "direction")
	vmaRingRetrans = exposition.MustNewDesc("nic_vma_ring_tx_retransmissions_total",
		"Retransmissions sent through a ring.", exposition.Counter, "pid", "comm", "version", "ring", "type")
	vmaRingIntr = exposition.MustNewDesc("nic_vma_ring_rx_interrupts_total",
		"Receive interrupts of a hardware ring, requested (armed) or received.", exposition.Counter, "pid", "comm", "version", "ring", "type", "event")
	vmaRingModCount = exposition.MustNewDesc("nic_vma_ring_rx_cq_moderation_frames",
		"Receive CQ moderation: frames per interrupt.", exposition.Gauge, "pid", "comm", "version", "ring", "type")
	vmaRingModPeriod = exposition.MustNewDesc("nic_vma_ring_rx_cq_moderation_period_seconds",
		"Receive CQ moderation: period (libvma reports microseconds).", exposition.Gauge, "pid", "comm", "version", "ring", "type")
	vmaRingTapBuffers = exposition.MustNewDesc("nic_vma_ring_tap_rx_buffers",
		"Receive buffers of a tap ring.", exposition.Gauge, "pid", "comm", "version", "ring", "tap")
	vmaRingTapPlugouts = exposition.MustNewDesc("nic_vma_ring_tap_vf_plugouts_total",
		"Times the virtual function behind a tap ring was unplugged.", exposition.Counter, "pid", "comm", "version", "ring", "tap")

	vmaPoolSize = exposition.MustNewDesc("nic_vma_buffer_pool_size_buffers",
		"Buffers in a libvma buffer pool.", exposition.Gauge, "pid", "comm", "version", "pool")
	vmaPoolNoBufs = exposition.MustNewDesc("nic_vma_buffer_pool_no_buffers_total",
		"Times a buffer pool had no buffer to give (the \"Failed to allocate buffer pool\" / memlock limit situation).", exposition.Counter, "pid", "comm", "version", "pool")

	vmaIomuxPolls = exposition.MustNewDesc("nic_vma_iomux_polls_total",
		"Polls of offloaded sockets by poll, select or an epoll fd, by result (hit: data was ready).", exposition.Counter, "pid", "comm", "version", "iomux", "epfd", "result")
	vmaIomuxTimeouts = exposition.MustNewDesc("nic_vma_iomux_timeouts_total",
		"poll/select/epoll calls that timed out.", exposition.Counter, "pid", "comm", "version", "iomux", "epfd")
	vmaIomuxErrors = exposition.MustNewDesc("nic_vma_iomux_errors_total",
		"poll/select/epoll calls that failed.", exposition.Counter, "pid", "comm", "version", "iomux", "epfd")
	vmaIomuxReady = exposition.MustNewDesc("nic_vma_iomux_rx_ready_fds_total",
		"File descriptors found ready for receive, by path (offload or os).", exposition.Counter, "pid", "comm", "version", "iomux", "epfd", "path")
	vmaIomuxCPU = exposition.MustNewDesc("nic_vma_iomux_polling_cpu_percent",
		"Share of time poll/select/epoll spent busy-polling, in percent.", exposition.Gauge, "pid", "comm", "version", "iomux", "epfd")

	vmaMCGroup = exposition.MustNewDesc("nic_vma_multicast_group_sockets",
		"Sockets of the process that are members of a multicast group.", exposition.Gauge, "pid", "comm", "version", "group")

	vmaFDInfo = exposition.MustNewDesc("nic_vma_fd_info",
		"A socket known to libvma, value 1 (a detail series at /metrics/detail; in /metrics too with --collector.vma.per-socket).", exposition.Gauge, "pid", "comm", "version", "fd", "protocol", "local", "remote", "offloaded", "tcp_state")
	vmaFDRxReadyPackets = exposition.MustNewDesc("nic_vma_fd_rx_ready_packets",
		"Packets in the socket's receive ready queue (a detail series at /metrics/detail; in /metrics too with --collector.vma.per-socket).", exposition.Gauge, "pid", "comm", "version", "fd", "protocol", "local", "remote")
	vmaFDRxReadyBytes = exposition.MustNewDesc("nic_vma_fd_rx_ready_bytes",
		"Bytes in the socket's receive ready queue (a detail series at /metrics/detail; in /metrics too with --collector.vma.per-socket).", exposition.Gauge, "pid", "comm", "version", "fd", "protocol", "local", "remote")
	vmaFDMember = exposition.MustNewDesc("nic_vma_fd_multicast_member",
		"1 for each multicast group the socket is a member of (a detail series at /metrics/detail; in /metrics too with --collector.vma.per-socket).", exposition.Gauge, "pid", "comm", "version", "fd", "protocol", "local", "remote", "group")
)

// fdFamilies are the per-socket families, in one part of the snapshot.
type fdFamilies struct {
	info, rxReadyPackets, rxReadyBytes, member *exposition.Desc
	counters                                   []*exposition.Desc // by vmaSockCounters index
}

// fdInDefault and fdInDetail are the per-socket families in the default
// part (--collector.vma.per-socket) and in the detail part.
var fdInDefault, fdInDetail = func() (*fdFamilies, *fdFamilies) {
	def := &fdFamilies{info: vmaFDInfo, rxReadyPackets: vmaFDRxReadyPackets, rxReadyBytes: vmaFDRxReadyBytes, member: vmaFDMember}
	det := &fdFamilies{info: vmaFDInfo.AsDetail(), rxReadyPackets: vmaFDRxReadyPackets.AsDetail(), rxReadyBytes: vmaFDRxReadyBytes.AsDetail(), member: vmaFDMember.AsDetail()}
	asDetail := map[*exposition.Desc]*exposition.Desc{}
	for _, sc := range vmaSockCounters {
		if asDetail[sc.fd] == nil {
			asDetail[sc.fd] = sc.fd.AsDetail()
		}
		def.counters = append(def.counters, sc.fd)
		det.counters = append(det.counters, asDetail[sc.fd])
	}
	return def, det
}()

// vmaSockCounter maps one per-socket counter to its families: the
// process aggregate and the per-socket one, with extra label values.
type vmaSockCounter struct {
	c     vmastats.Counter
	agg   *exposition.Desc
	fd    *exposition.Desc
	extra []string
}

func vmaSockFamilies(name, help string, extraLabels ...string) (*exposition.Desc, *exposition.Desc) {
	agg := exposition.MustNewDesc("nic_vma_socket_"+name+"_total", help+" Summed over the process's sockets, including closed ones.",
		exposition.Counter, append([]string{"pid", "comm", "version"}, extraLabels...)...)
	fd := exposition.MustNewDesc("nic_vma_fd_"+name+"_total", help+" Per socket (a detail series at /metrics/detail; in /metrics too with --collector.vma.per-socket).",
		exposition.Counter, append([]string{"pid", "comm", "version", "fd", "protocol", "local", "remote"}, extraLabels...)...)
	return agg, fd
}

var vmaSockCounters = func() []vmaSockCounter {
	var out []vmaSockCounter
	add := func(agg, fd *exposition.Desc, defs ...any) {
		for i := 0; i < len(defs); i += 2 {
			out = append(out, vmaSockCounter{c: defs[i].(vmastats.Counter), agg: agg, fd: fd, extra: defs[i+1].([]string)})
		}
	}
	a, f := vmaSockFamilies("packets", "Packets received or sent, by direction and path (offload: through libvma; os: fell back to the kernel).", "direction", "path")
	add(a, f, vmastats.RxPackets, []string{"rx", "offload"}, vmastats.RxOSPackets, []string{"rx", "os"},
		vmastats.TxPackets, []string{"tx", "offload"}, vmastats.TxOSPackets, []string{"tx", "os"})
	a, f = vmaSockFamilies("bytes", "Bytes received or sent, by direction and path.", "direction", "path")
	add(a, f, vmastats.RxBytes, []string{"rx", "offload"}, vmastats.RxOSBytes, []string{"rx", "os"},
		vmastats.TxBytes, []string{"tx", "offload"}, vmastats.TxOSBytes, []string{"tx", "os"})
	a, f = vmaSockFamilies("errors", "Receive or send calls that failed, by direction and path.", "direction", "path")
	add(a, f, vmastats.RxErrors, []string{"rx", "offload"}, vmastats.RxOSErrors, []string{"rx", "os"},
		vmastats.TxErrors, []string{"tx", "offload"}, vmastats.TxOSErrors, []string{"tx", "os"})
	a, f = vmaSockFamilies("eagain", "Receive or send calls that returned EAGAIN, by direction and path (libvma before 9.1 counts offloaded send drops here).", "direction", "path")
	add(a, f, vmastats.RxEagain, []string{"rx", "offload"}, vmastats.RxOSEagain, []string{"rx", "os"},
		vmastats.TxEagain, []string{"tx", "offload"}, vmastats.TxOSEagain, []string{"tx", "os"})
	a, f = vmaSockFamilies("rx_ready_queue_dropped_packets", "Packets dropped because the socket's receive ready queue was full.")
	add(a, f, vmastats.RxReadyPktDrop, []string{})
	a, f = vmaSockFamilies("rx_ready_queue_dropped_bytes", "Bytes dropped because the socket's receive ready queue was full.")
	add(a, f, vmastats.RxReadyByteDrop, []string{})
	a, f = vmaSockFamilies("rx_polls", "Receive polls of offloaded sockets, by result: hit (data ready), miss, os_hit (data found on the kernel path).", "result")
	add(a, f, vmastats.RxPollHit, []string{"hit"}, vmastats.RxPollMiss, []string{"miss"}, vmastats.RxPollOSHit, []string{"os_hit"})
	a, f = vmaSockFamilies("tx_retransmissions", "TCP segments retransmitted.")
	add(a, f, vmastats.TxRetransmits, []string{})
	a, f = vmaSockFamilies("ring_migrations", "Times a socket moved to another ring, by direction.", "direction")
	add(a, f, vmastats.RxMigrations, []string{"rx"}, vmastats.TxMigrations, []string{"tx"})
	a, f = vmaSockFamilies("tx_dummy_packets", "Dummy send requests (VMA_SEND_FLAGS_DUMMY) that warmed the send path.")
	add(a, f, vmastats.TxDummy, []string{})
	return out
}()

// tcpStates are lwip's TCP state names.
var tcpStates = []string{"CLOSED", "LISTEN", "SYN_SENT", "SYN_RCVD", "ESTABLISHED", "FIN_WAIT_1", "FIN_WAIT_2", "CLOSE_WAIT", "CLOSING", "LAST_ACK", "TIME_WAIT"}

// renderVMA adds the series of one libvma process.
func renderVMA(p *collector.Poll, l *vmastats.Loaded, st *vmaProc, fd *fdFamilies) {
	s := l.Stats
	b := newProcLabels(l.Process.PID, l.Process.Comm, s.Version())
	p.Add(vmaInfo, 1, b.with(s.Layout.String())...)
	p.Add(vmaHandshake, collector.Bool(l.Handshake), b...)
	if !l.Process.Start.IsZero() {
		p.Add(vmaStartTime, float64(l.Process.Start.Unix()), b...)
	}
	renderVMASockets(p, s, st, b)
	renderVMAQueues(p, s, b)
	renderVMAIomux(p, s, st, b)
	groups := make([]mcGroup, len(s.Multicast.Groups))
	for i, g := range s.Multicast.Groups {
		groups[i] = mcGroup(g)
	}
	renderVMAFDs(p, s, st, fd, b, emitGroups(p, vmaMCGroup, b, groups))
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
	p.Add(vmaRxReadyPackets, float64(rxPkts), b...)
	p.Add(vmaRxReadyBytes, float64(rxBytes), b...)
	p.Add(vmaTxReadyBytes, float64(txBytes), b...)
	for _, sc := range vmaSockCounters {
		p.Add(sc.agg, float64(st.total(sc.c)), b.with(sc.extra...)...)
	}
}

// renderVMAQueues adds the completion queues, rings and buffer pools.
func renderVMAQueues(p *collector.Poll, s *vmastats.Stats, b procLabels) {
	for _, c := range s.CQs {
		l := b.with(strconv.Itoa(c.Index))
		p.Add(vmaCQDrops, float64(c.RxPktDrop), l...)
		p.Add(vmaCQQueue, float64(c.RxSWQueueLen), l...)
		p.Add(vmaCQDrained, float64(c.RxDrainedAtOnceMax), l...)
		p.Add(vmaCQPool, float64(c.BufferPoolLen), l...)
	}
	for _, r := range s.Rings {
		idx, typ := strconv.Itoa(r.Index), r.Type.String()
		p.Add(vmaRingPackets, float64(r.RxPackets), b.with(idx, typ, "rx")...)
		p.Add(vmaRingPackets, float64(r.TxPackets), b.with(idx, typ, "tx")...)
		p.Add(vmaRingBytes, float64(r.RxBytes), b.with(idx, typ, "rx")...)
		p.Add(vmaRingBytes, float64(r.TxBytes), b.with(idx, typ, "tx")...)
		p.Add(vmaRingRetrans, float64(r.TxRetransmits), b.with(idx, typ)...)
		if x := r.Simple; x != nil {
			p.Add(vmaRingIntr, float64(x.RxInterruptRequests), b.with(idx, typ, "requested")...)
			p.Add(vmaRingIntr, float64(x.RxInterruptReceived), b.with(idx, typ, "received")...)
			p.Add(vmaRingModCount, float64(x.RxCQModerationCount), b.with(idx, typ)...)
			p.Add(vmaRingModPeriod, float64(x.RxCQModerationPeriod)/1e6, b.with(idx, typ)...)
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

// vmaIomuxFamilies are libvma's poll/select/epoll families.
var vmaIomuxFamilies = iomuxFamilies{polls: vmaIomuxPolls, timeouts: vmaIomuxTimeouts, errors: vmaIomuxErrors, ready: vmaIomuxReady}

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
		emitIomux(p, vmaIomuxFamilies, b, kind, epfd, c)
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
			p.Add(fd.counters[i], float64(ss.counters[sc.c].total), withLast(fdl, sc.extra...)...)
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
