package vma

import (
	"strings"

	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/vmastats"
)

// The metric families that libvma and libxlio share: the same meaning,
// labels and help under each library's prefix. They are defined here once
// and built for each library; the families whose meaning or labels differ
// stay beside their collector (vma.go, xlio.go).

// library is what the shared families of one library differ in.
type library struct {
	// prefix starts every family name: nic_vma or nic_xlio.
	prefix string
	// name is the library's name in help texts: libvma or libxlio.
	name string
	// perSocketFlag is the flag that puts the per-socket series in
	// /metrics.
	perSocketFlag string
}

var (
	libVMA  = library{prefix: "nic_vma", name: "libvma", perSocketFlag: "--collector.vma.per-socket"}
	libXLIO = library{prefix: "nic_xlio", name: "libxlio", perSocketFlag: "--collector.xlio.per-socket"}
)

// procLabelNames are the labels every series of a process starts with.
var procLabelNames = []string{"pid", "comm", "version"}

// fdLabelNames are the labels every per-socket series starts with.
var fdLabelNames = []string{"pid", "comm", "version", "fd", "protocol", "local", "remote"}

// desc returns the family prefix_suffix of lib; {lib} in help stands for
// the library's name.
func (lib library) desc(suffix, help string, t exposition.Type, labels ...string) *exposition.Desc {
	return exposition.MustNewDesc(lib.prefix+"_"+suffix, strings.ReplaceAll(help, "{lib}", lib.name), t, labels...)
}

// withNames returns the label names base followed by extra, in a new slice.
func withNames(base []string, extra ...string) []string {
	return append(append([]string(nil), base...), extra...)
}

// perSocketNote ends the help of every per-socket family.
func (lib library) perSocketNote() string {
	return "(a detail series at /metrics/detail; in /metrics too with " + lib.perSocketFlag + ")."
}

// sharedFamilies are the families of one library whose meaning is the
// same in the other.
type sharedFamilies struct {
	startTime                                  *exposition.Desc
	rxReadyPackets, rxReadyBytes, txReadyBytes *exposition.Desc
	cqQueue, cqDrained, cqPool                 *exposition.Desc
	ringPackets, ringBytes, ringRetrans        *exposition.Desc
	ringIntr, ringModCount, ringModPeriod      *exposition.Desc
	mcGroup                                    *exposition.Desc
	iomux                                      iomuxFamilies
}

// families builds lib's shared families.
func (lib library) families() sharedFamilies {
	proc := procLabelNames
	cq := withNames(proc, "cq")
	ring := withNames(proc, "ring", "type")
	iomux := withNames(proc, "iomux", "epfd")
	return sharedFamilies{
		startTime: lib.desc("process_start_time_seconds",
			"Start time of the process, in seconds since the epoch; per-process totals restart when it changes.", exposition.Gauge, proc...),
		rxReadyPackets: lib.desc("socket_rx_ready_packets",
			"Packets waiting in sockets' receive ready queues, summed over the process's sockets.", exposition.Gauge, proc...),
		rxReadyBytes: lib.desc("socket_rx_ready_bytes",
			"Bytes waiting in sockets' receive ready queues, summed over the process's sockets.", exposition.Gauge, proc...),
		txReadyBytes: lib.desc("socket_tx_ready_bytes",
			"Bytes waiting to be sent, summed over the process's sockets.", exposition.Gauge, proc...),

		cqQueue: lib.desc("cq_rx_queue_length",
			"Packets in a completion queue's software receive queue.", exposition.Gauge, cq...),
		cqDrained: lib.desc("cq_rx_drained_at_once_max",
			"Largest number of completions drained at once.", exposition.Gauge, cq...),
		cqPool: lib.desc("cq_buffer_pool_length",
			"Buffers in a completion queue's buffer pool.", exposition.Gauge, cq...),

		ringPackets: lib.desc("ring_packets_total",
			"Packets through a ring, by direction.", exposition.Counter, withNames(ring, "direction")...),
		ringBytes: lib.desc("ring_bytes_total",
			"Bytes through a ring, by direction.", exposition.Counter, withNames(ring, "direction")...),
		ringRetrans: lib.desc("ring_tx_retransmissions_total",
			"Retransmissions sent through a ring.", exposition.Counter, ring...),
		ringIntr: lib.desc("ring_rx_interrupts_total",
			"Receive interrupts of a hardware ring, requested (armed) or received.", exposition.Counter, withNames(ring, "event")...),
		ringModCount: lib.desc("ring_rx_cq_moderation_frames",
			"Receive CQ moderation: frames per interrupt.", exposition.Gauge, ring...),
		ringModPeriod: lib.desc("ring_rx_cq_moderation_period_seconds",
			"Receive CQ moderation: period ({lib} reports microseconds).", exposition.Gauge, ring...),

		mcGroup: lib.desc("multicast_group_sockets",
			"Sockets of the process that are members of a multicast group.", exposition.Gauge, withNames(proc, "group")...),

		iomux: iomuxFamilies{
			polls: lib.desc("iomux_polls_total",
				"Polls of offloaded sockets by poll, select or an epoll fd, by result (hit: data was ready).", exposition.Counter, withNames(iomux, "result")...),
			timeouts: lib.desc("iomux_timeouts_total",
				"poll/select/epoll calls that timed out.", exposition.Counter, iomux...),
			errors: lib.desc("iomux_errors_total",
				"poll/select/epoll calls that failed.", exposition.Counter, iomux...),
			ready: lib.desc("iomux_rx_ready_fds_total",
				"File descriptors found ready for receive, by path (offload or os).", exposition.Counter, withNames(iomux, "path")...),
		},
	}
}

// sockCounter maps one per-socket counter to its families: the process
// aggregate and the per-socket one, with extra label values. vma is
// libvma's counter and xlio libxlio's field name for it.
type sockCounter struct {
	vma   vmastats.Counter
	xlio  string
	agg   *exposition.Desc
	fd    *exposition.Desc
	extra []string
}

// noVMACounter marks a socket counter that libvma does not have.
const noVMACounter vmastats.Counter = -1

// sockCounterFamily is one family of per-socket counters: its name
// (between nic_<lib>_socket_ or nic_<lib>_fd_ and _total), help, extra
// labels and the counters that make its series.
type sockCounterFamily struct {
	name string
	// help has {lib} for the library's name; vmaHelp, when set, is
	// libvma's, where its counters mean a little more.
	help, vmaHelp string
	labels        []string
	series        []sockCounterSeries
}

// sockCounterSeries is one series of a sockCounterFamily: the counter in
// each library and the values of the family's extra labels.
type sockCounterSeries struct {
	vma   vmastats.Counter
	xlio  string
	extra []string
}

// sockCounterFamilies are the per-socket counter families, in the order
// they are exported. libvma has those whose every series has a libvma
// counter.
var sockCounterFamilies = []sockCounterFamily{
	{name: "packets", help: "Packets received or sent, by direction and path (offload: through {lib}; os: fell back to the kernel).",
		labels: []string{"direction", "path"}, series: []sockCounterSeries{
			{vmastats.RxPackets, "n_rx_packets", []string{"rx", "offload"}}, {vmastats.RxOSPackets, "n_rx_os_packets", []string{"rx", "os"}},
			{vmastats.TxPackets, "n_tx_sent_pkt_count", []string{"tx", "offload"}}, {vmastats.TxOSPackets, "n_tx_os_packets", []string{"tx", "os"}},
		}},
	{name: "bytes", help: "Bytes received or sent, by direction and path.",
		labels: []string{"direction", "path"}, series: []sockCounterSeries{
			{vmastats.RxBytes, "n_rx_bytes", []string{"rx", "offload"}}, {vmastats.RxOSBytes, "n_rx_os_bytes", []string{"rx", "os"}},
			{vmastats.TxBytes, "n_tx_sent_byte_count", []string{"tx", "offload"}}, {vmastats.TxOSBytes, "n_tx_os_bytes", []string{"tx", "os"}},
		}},
	{name: "errors", help: "Receive or send calls that failed, by direction and path.",
		labels: []string{"direction", "path"}, series: []sockCounterSeries{
			{vmastats.RxErrors, "n_rx_errors", []string{"rx", "offload"}}, {vmastats.RxOSErrors, "n_rx_os_errors", []string{"rx", "os"}},
			{vmastats.TxErrors, "n_tx_errors", []string{"tx", "offload"}}, {vmastats.TxOSErrors, "n_tx_os_errors", []string{"tx", "os"}},
		}},
	{name: "eagain", help: "Receive or send calls that returned EAGAIN, by direction and path.",
		vmaHelp: "Receive or send calls that returned EAGAIN, by direction and path (libvma before 9.1 counts offloaded send drops here).",
		labels:  []string{"direction", "path"}, series: []sockCounterSeries{
			{vmastats.RxEagain, "n_rx_eagain", []string{"rx", "offload"}}, {vmastats.RxOSEagain, "n_rx_os_eagain", []string{"rx", "os"}},
			{vmastats.TxEagain, "n_tx_eagain", []string{"tx", "offload"}}, {vmastats.TxOSEagain, "n_tx_os_eagain", []string{"tx", "os"}},
		}},
	{name: "rx_ready_queue_dropped_packets", help: "Packets dropped because the socket's receive ready queue was full.",
		series: []sockCounterSeries{{vmastats.RxReadyPktDrop, "n_rx_ready_pkt_drop", []string{}}}},
	{name: "rx_ready_queue_dropped_bytes", help: "Bytes dropped because the socket's receive ready queue was full.",
		series: []sockCounterSeries{{vmastats.RxReadyByteDrop, "n_rx_ready_byte_drop", []string{}}}},
	{name: "rx_polls", help: "Receive polls of offloaded sockets, by result: hit (data ready), miss, os_hit (data found on the kernel path).",
		labels: []string{"result"}, series: []sockCounterSeries{
			{vmastats.RxPollHit, "n_rx_poll_hit", []string{"hit"}}, {vmastats.RxPollMiss, "n_rx_poll_miss", []string{"miss"}},
			{vmastats.RxPollOSHit, "n_rx_poll_os_hit", []string{"os_hit"}},
		}},
	{name: "tx_retransmissions", help: "TCP segments retransmitted.",
		series: []sockCounterSeries{{vmastats.TxRetransmits, "n_tx_retransmits", []string{}}}},
	{name: "ring_migrations", help: "Times a socket moved to another ring, by direction.",
		labels: []string{"direction"}, series: []sockCounterSeries{
			{vmastats.RxMigrations, "n_rx_migrations", []string{"rx"}}, {vmastats.TxMigrations, "n_tx_migrations", []string{"tx"}},
		}},
	{name: "tx_dummy_packets", help: "Dummy send requests that warmed the send path.",
		vmaHelp: "Dummy send requests (VMA_SEND_FLAGS_DUMMY) that warmed the send path.",
		series:  []sockCounterSeries{{vmastats.TxDummy, "n_tx_dummy", []string{}}}},
	{name: "tx_sendfile_fallbacks", help: "sendfile() calls that fell back to a copy, and those that overflowed, by event.",
		labels: []string{"event"}, series: []sockCounterSeries{
			{noVMACounter, "n_tx_sendfile_fallbacks", []string{"fallback"}}, {noVMACounter, "n_tx_sendfile_overflows", []string{"overflow"}},
		}},
	{name: "listen_events", help: "Events of listening TCP sockets: syn, syn_time_wait (SYN for a connection in TIME_WAIT), fin, established, accepted, dropped.",
		labels: []string{"event"}, series: []sockCounterSeries{
			{noVMACounter, "listen_counters.n_rx_syn", []string{"syn"}}, {noVMACounter, "listen_counters.n_rx_syn_tw", []string{"syn_time_wait"}},
			{noVMACounter, "listen_counters.n_rx_fin", []string{"fin"}}, {noVMACounter, "listen_counters.n_conn_established", []string{"established"}},
			{noVMACounter, "listen_counters.n_conn_accepted", []string{"accepted"}}, {noVMACounter, "listen_counters.n_conn_dropped", []string{"dropped"}},
		}},
}

// sockCounters builds lib's per-socket counters from sockCounterFamilies:
// for libvma only the families it has all counters of.
func (lib library) sockCounters() []sockCounter {
	var out []sockCounter
	for _, f := range sockCounterFamilies {
		if lib == libVMA && !f.hasVMA() {
			continue
		}
		help := f.help
		if lib == libVMA && f.vmaHelp != "" {
			help = f.vmaHelp
		}
		agg := lib.desc("socket_"+f.name+"_total", help+" Summed over the process's sockets, including closed ones.",
			exposition.Counter, withNames(procLabelNames, f.labels...)...)
		fd := lib.desc("fd_"+f.name+"_total", help+" Per socket "+lib.perSocketNote(),
			exposition.Counter, withNames(fdLabelNames, f.labels...)...)
		for _, s := range f.series {
			out = append(out, sockCounter{vma: s.vma, xlio: s.xlio, agg: agg, fd: fd, extra: s.extra})
		}
	}
	return out
}

// hasVMA reports whether libvma has every counter of the family.
func (f sockCounterFamily) hasVMA() bool {
	for _, s := range f.series {
		if s.vma == noVMACounter {
			return false
		}
	}
	return true
}

// fdFamilies are the per-socket families, in one part of the snapshot.
type fdFamilies struct {
	info, rxReadyPackets, rxReadyBytes, member *exposition.Desc
	counters                                   []*exposition.Desc // by the index of the library's sockCounters
}

// fdFamilies returns lib's per-socket families in the default part (with
// its per-socket flag) and in the detail part (the default); counters are
// lib's socket counters.
func (lib library) fdFamilies(counters []sockCounter) (inDefault, inDetail *fdFamilies) {
	note := lib.perSocketNote()
	def := &fdFamilies{
		info: lib.desc("fd_info", "A socket known to {lib}, value 1 "+note,
			exposition.Gauge, withNames(fdLabelNames, "offloaded", "tcp_state")...),
		rxReadyPackets: lib.desc("fd_rx_ready_packets", "Packets in the socket's receive ready queue "+note,
			exposition.Gauge, fdLabelNames...),
		rxReadyBytes: lib.desc("fd_rx_ready_bytes", "Bytes in the socket's receive ready queue "+note,
			exposition.Gauge, fdLabelNames...),
		member: lib.desc("fd_multicast_member", "1 for each multicast group the socket is a member of "+note,
			exposition.Gauge, withNames(fdLabelNames, "group")...),
	}
	det := &fdFamilies{info: def.info.AsDetail(), rxReadyPackets: def.rxReadyPackets.AsDetail(), rxReadyBytes: def.rxReadyBytes.AsDetail(), member: def.member.AsDetail()}
	asDetail := map[*exposition.Desc]*exposition.Desc{}
	for _, sc := range counters {
		if asDetail[sc.fd] == nil {
			asDetail[sc.fd] = sc.fd.AsDetail()
		}
		def.counters = append(def.counters, sc.fd)
		det.counters = append(det.counters, asDetail[sc.fd])
	}
	return def, det
}
