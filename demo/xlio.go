package demo

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nic-exporter/nic_exporter/vmastats"
	"github.com/nic-exporter/nic_exporter/xliostats"
	"github.com/nic-exporter/nic_exporter/xliostats/xliostatstest"
)

// The reference host's XLIO application: an order gateway accelerated by
// libxlio 3.70.2 as DOCA ships it (layout G2 with UTLS, the protocol
// string of that release's xlio_stats.h), started with
// XLIO_STATS_FD_NUM=16 so it publishes per-socket statistics (the
// default is 0 from 3.30). It has a TCP listener, an accepted TCP
// session and a UDP multicast receiver on one ring. The file is written
// through the layout table of 3.70.2 by xliostatstest, whose NewFile is
// byte for byte what the real library writes; like libxlio, the demo
// copies its counters into the file only after a reader has incremented
// reader_counter (and for 10 s after), so a reader without the handshake
// sees the counters of the last copy.
const (
	xlioDemoPID     = 4343
	xlioDemoComm    = "ord_gw"
	xlioDemoDir     = "tmp/xlio"
	xlioDemoMD5     = "8acf4c5e11413c1da2c7f27b2ec26476"
	xlioDemoSockets = 16
	// xlioCopyWindow is how long libxlio keeps copying after a reader's
	// handshake (stats_data_reader::should_write).
	xlioCopyWindow = 10 * time.Second
)

var xlioPart = part{
	faults: map[string]string{
		"xlio_no_buffers": "the XLIO application's receive buffer pool runs dry: \"no buffers\" errors, CQ and ready-queue drops climb (memlock too low)",
	},
	update: (*Host).updateXLIO,
}

// XLIODir returns the demo host's libxlio statistics directory.
func (h *Host) XLIODir() string { return filepath.Join(h.dir, filepath.FromSlash(xlioDemoDir)) }

// XLIOLiveness returns the liveness check for the demo's XLIO
// application, which is simulated like the VMA one (see VMALiveness).
func (h *Host) XLIOLiveness() vmastats.Liveness {
	return demoLiveness{start: time.Date(2026, 1, 5, 6, 45, 0, 0, time.UTC), uid: uint32(os.Getuid()), pid: xlioDemoPID, comm: xlioDemoComm, ticks: 434343}
}

// xlioState is what the demo's libxlio remembers between updates: the
// reader_counter it last saw and when it last changed.
type xlioState struct {
	readerCounter int32
	asked         time.Duration
	copied        bool
}

// xlioStats builds the application's statistics for demo time t (the
// application's uptime) with the fault durations given.
func xlioStats(t, noBufs time.Duration) ([]byte, error) {
	f, err := xliostatstest.NewFile(xlioDemoMD5, true, [4]uint16{3, 70, 2, 0}, xlioDemoSockets)
	if err != nil {
		return nil, err
	}
	sec := t.Seconds()
	n := func(perSec float64, d time.Duration) uint64 { return uint64(perSec * d.Seconds()) }
	var errs []error
	set := func(array string, index int, v map[string]uint64) {
		if err := f.Enable(array, index); err != nil {
			errs = append(errs, err)
		}
		errs = append(errs, f.SetAll(array, index, v))
	}
	set("cq_inst_arr", 0, map[string]uint64{
		"n_rx_packet_count": n(180000, t), "n_rx_stride_count": n(180000, t), "n_rx_consumed_rwqe_count": n(180000, t),
		"n_rx_sw_pkt_drops": n(7000, noBufs), "n_rx_drained_at_once_max": 64, "n_buffer_pool_len": 512,
		"n_rx_sw_queue_len": map[bool]uint64{true: 4096, false: 0}[noBufs > 0], "n_rx_max_stirde_per_packet": 1,
	})
	set("ring_inst_arr", 0, map[string]uint64{
		"n_rx_pkt_count": n(180000, t), "n_rx_byte_count": uint64(180000 * 700 * sec),
		"n_tx_pkt_count": n(25000, t), "n_tx_byte_count": uint64(25000 * 220 * sec),
		"n_tx_retransmits": n(0.2, t), "p_ring_master": 0x7f5e10002000,
		"n_rx_interrupt_requests": n(40, t), "n_rx_interrupt_received": n(38, t),
		"n_rx_cq_moderation_count": 48, "n_rx_cq_moderation_period": 50, "n_tx_num_bufs": 64,
	})
	rxPool := map[string]uint64{"is_rx": 1, "n_buffer_pool_size": 262144, "n_buffer_pool_created": 262144, "n_buffer_pool_no_bufs": n(1200, noBufs)}
	if noBufs > 0 {
		rxPool["n_buffer_pool_size"] = 0
	}
	set("bpool_inst_arr", 0, rxPool)
	set("bpool_inst_arr", 1, map[string]uint64{"is_tx": 1, "n_buffer_pool_size": 65536, "n_buffer_pool_created": 65536})
	errs = append(errs, f.SetAll("global_inst_arr", 0, map[string]uint64{"n_tcp_seg_pool_size": 16384, "socket_tcp_destructor_counter": n(0.01, t)}))
	set("iomux.epoll", 0, map[string]uint64{
		"epfd": 5, "threadid_last": xlioDemoPID + 1, "n_iomux_poll_hit": n(205000, t) & 0xffffffff,
		"n_iomux_poll_miss": n(1.2e6, t) & 0xffffffff, "n_iomux_rx_ready": n(205000, t) & 0xffffffff, "n_iomux_polling_time": 92,
	})

	any4 := netip.IPv4Unspecified()
	sock := func(slot int, fd, inode uint64, typ uint64, state uint64, local netip.Addr, lport uint16, remote netip.Addr, rport uint16, v map[string]uint64) {
		v["fd"], v["inode"], v["socket_type"], v["tcp_state"], v["sa_family"] = fd, inode, typ, state, 2
		v["b_is_offloaded"], v["threadid_last_rx"], v["threadid_last_tx"] = 1, xlioDemoPID+1, xlioDemoPID+1
		set("skt_inst_arr", slot, v)
		errs = append(errs, f.SetAddr("skt_inst_arr", slot, "bound_if", local), f.SetAddr("skt_inst_arr", slot, "connected_ip", remote),
			f.SetAddr("skt_inst_arr", slot, "mc_tx_if", any4), f.SetPort(slot, "bound_port", lport), f.SetPort(slot, "connected_port", rport))
	}
	sock(0, 7, 5120001, xliostats.SockStream, 1, netip.MustParseAddr("10.20.0.16"), 9100, any4, 0, map[string]uint64{
		"listen_counters.n_rx_syn": 14, "listen_counters.n_conn_established": 14, "listen_counters.n_conn_accepted": 14,
	})
	sock(1, 9, 5120002, xliostats.SockStream, 4, netip.MustParseAddr("10.20.0.16"), 9100, netip.MustParseAddr("10.20.0.31"), 51872, map[string]uint64{
		"n_rx_packets": n(25000, t) & 0xffffffff, "n_rx_bytes": uint64(25000 * 120 * sec),
		"n_tx_sent_pkt_count": n(25000, t) & 0xffffffff, "n_tx_sent_byte_count": uint64(25000 * 220 * sec),
		"n_rx_poll_hit": n(24000, t) & 0xffffffff, "n_rx_poll_miss": n(90000, t) & 0xffffffff,
		"n_tx_retransmits": n(0.2, t), "n_rx_data_pkts": n(25000, t) & 0xffffffff, "n_rx_ready_pkt_max": 8,
	})
	rx := n(155000, t)
	sock(2, 11, 5120003, xliostats.SockDgram, 0, netip.MustParseAddr("239.10.1.7"), 30001, any4, 0, map[string]uint64{
		"n_rx_packets": rx & 0xffffffff, "n_rx_bytes": rx * 810, "n_rx_poll_hit": n(150000, t) & 0xffffffff,
		"n_rx_poll_miss": n(1.1e6, t) & 0xffffffff, "n_rx_eagain": n(1.1e6, t) & 0xffffffff,
		"n_rx_ready_pkt_drop": n(6000, noBufs) & 0xffffffff, "n_rx_ready_byte_drop": n(6000*810, noBufs) & 0xffffffff,
		"n_rx_ready_pkt_count": 2, "n_rx_ready_byte_count": 1620, "n_rx_ready_pkt_max": 256,
	})
	errs = append(errs, f.AddGroup(0, netip.MustParseAddr("239.10.1.7"), 2))
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return f.B, nil
}

// updateXLIO writes the application's file the way libxlio does: created
// once with its header (xlio_shmem_stats_open), then its counters copied
// in place when a reader has asked (reader_counter changed) or within
// xlioCopyWindow of the last ask. The first copy is made at start, as if
// a reader had asked before the demo began.
func (h *Host) updateXLIO() error {
	if err := os.MkdirAll(h.XLIODir(), 0o755); err != nil {
		return err
	}
	path := filepath.Join(h.XLIODir(), xliostats.FilePrefix+strconv.Itoa(xlioDemoPID))
	b, err := xlioStats(h.Elapsed()+3*time.Hour, h.ActiveFor("xlio_no_buffers"))
	if err != nil {
		return err
	}
	l, _, _ := xliostats.LookupLayout(xlioDemoMD5, true)
	rc := l.ReaderCounterOffset()
	now := h.Elapsed()
	cur, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) || (err == nil && len(cur) != len(b)):
		h.xlio = xlioState{asked: now}
	case err != nil:
		return err
	default:
		if c := int32(binary.LittleEndian.Uint32(cur[rc:])); c != h.xlio.readerCounter {
			h.xlio.readerCounter, h.xlio.asked = c, now
		}
		if h.xlio.copied && now-h.xlio.asked > xlioCopyWindow {
			return nil // nobody asked: the file keeps the last copy
		}
	}
	h.xlio.copied = true
	return writeInPlace(path, b, rc)
}
