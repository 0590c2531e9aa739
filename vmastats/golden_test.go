package vmastats

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"

	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// sharedDir returns ../shared/vma relative to the repository root, where
// CI keeps the golden files written through libvma's real headers. They
// are deliberately not copied into the repository.
func sharedDir(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "shared", "vma"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = os.Stat(filepath.Join(dir, "LAYOUT.md"))
	testenv.Require(t, err == nil, "the shared libvma golden files in "+dir)
	return dir
}

var goldenFiles = []struct{ bin, layout string }{
	{"golden_9.8.84_fd4", "B"},
	{"golden_9.0.2_fd4", "A"},
}

// goldenJSON renders s in the schema of the shared .decoded.json files,
// which an independent decoder wrote.
func goldenJSON(s *Stats) map[string]any {
	iomux := func(m map[string]any, st IomuxStats) map[string]any {
		m["threadid_last"] = st.ThreadIDLast
		m["n_iomux_poll_hit"] = st.PollHit
		m["n_iomux_poll_miss"] = st.PollMiss
		m["n_iomux_timeouts"] = st.Timeouts
		m["n_iomux_errors"] = st.Errors
		m["n_iomux_rx_ready"] = st.RxReady
		m["n_iomux_os_rx_ready"] = st.OSRxReady
		m["n_iomux_polling_time"] = st.PollingTime
		return m
	}
	cqs := []any{}
	for _, c := range s.CQs {
		cqs = append(cqs, map[string]any{"idx": c.Index, "n_rx_pkt_drop": c.RxPktDrop, "n_rx_sw_queue_len": c.RxSWQueueLen,
			"n_rx_drained_at_once_max": c.RxDrainedAtOnceMax, "n_buffer_pool_len": c.BufferPoolLen})
	}
	rings := []any{}
	for _, r := range s.Rings {
		m := map[string]any{"idx": r.Index, "n_rx_pkt_count": r.RxPackets, "n_rx_byte_count": r.RxBytes,
			"n_tx_pkt_count": r.TxPackets, "n_tx_byte_count": r.TxBytes, "n_tx_retransmits": r.TxRetransmits,
			"p_ring_master": r.Master, "n_type": r.RawType, "type": r.Type.String()}
		if r.Tap != nil {
			m["s_tap_name"], m["n_tap_fd"], m["n_rx_buffers"], m["n_vf_plugouts"] = r.Tap.Name, r.Tap.FD, r.Tap.RxBuffers, r.Tap.VFPlugouts
		} else {
			x := r.Simple
			m["n_rx_interrupt_requests"], m["n_rx_interrupt_received"] = x.RxInterruptRequests, x.RxInterruptReceived
			m["n_rx_cq_moderation_count"], m["n_rx_cq_moderation_period"] = x.RxCQModerationCount, x.RxCQModerationPeriod
			m["n_tx_dev_mem_pkt_count"], m["n_tx_dev_mem_byte_count"] = x.TxDevMemPackets, x.TxDevMemBytes
			m["n_tx_dev_mem_oob"], m["n_tx_dev_mem_allocated"] = x.TxDevMemOOB, x.TxDevMemAllocated
		}
		rings = append(rings, m)
	}
	bpools := []any{}
	for _, p := range s.BufferPools {
		bpools = append(bpools, map[string]any{"idx": p.Index, "is_rx": p.IsRx, "is_tx": p.IsTx,
			"n_buffer_pool_size": p.Size, "n_buffer_pool_no_bufs": p.NoBuffers})
	}
	groups := map[string]any{}
	for _, g := range s.Multicast.Groups {
		groups[strconv.Itoa(g.Index)] = map[string]any{"sock_num": g.Sockets, "group": g.Group.String()}
	}
	epolls := []any{}
	for _, e := range s.Iomux.Epoll {
		epolls = append(epolls, iomux(map[string]any{"idx": e.Index, "epfd": e.FD}, e.IomuxStats))
	}
	socks := []any{}
	for _, k := range s.Sockets {
		counters := map[string]any{}
		for i, v := range k.Counters {
			counters[Counter(i).String()] = v
		}
		mc := []any{}
		for _, g := range k.MCGroups {
			mc = append(mc, g)
		}
		socks = append(socks, map[string]any{
			"slot": k.Slot, "fd": k.FD, "inode": k.Inode, "tcp_state": k.TCPState, "socket_type": k.Type,
			"b_is_offloaded": k.Offloaded, "b_blocking": k.Blocking, "b_mc_loop": k.MCLoop,
			"bound_if": k.BoundIf.String(), "connected_ip": k.ConnectedIP.String(), "mc_tx_if": k.MCTxIf.String(),
			"bound_port": k.BoundPort, "connected_port": k.ConnectedPort,
			"threadid_last_rx": k.ThreadIDLastRx, "threadid_last_tx": k.ThreadIDLastTx,
			"n_rx_ready_pkt_count": k.RxReadyPkts, "n_rx_ready_byte_count": k.RxReadyBytes,
			"n_rx_ready_byte_limit": k.RxReadyByteLimit, "n_rx_zcopy_pkt_count": k.RxZcopyPkts,
			"n_tx_ready_byte_count": k.TxReadyBytes, "counters": counters, "mc_grp_idx": mc,
			"ring_alloc_logic_rx": k.RingAllocLogicRx, "ring_alloc_logic_tx": k.RingAllocLogicTx,
			"ring_user_id_rx": k.RingUserIDRx, "ring_user_id_tx": k.RingUserIDTx,
		})
	}
	return map[string]any{
		"reader_counter": s.ReaderCounter, "version": s.Version(), "stats_protocol_ver": s.ProtocolVer,
		"log_level": s.LogLevel, "log_details_level": s.LogDetailsLevel, "fd_dump": s.FdDump,
		"fd_dump_log_level": s.FdDumpLogLevel, "max_skt_inst_num": s.MaxSockets, "layout": s.Layout.String(),
		"cq": cqs, "ring": rings, "bpool": bpools,
		"mc":      map[string]any{"max_grp_num": s.Multicast.MaxGroups, "groups": groups},
		"iomux":   map[string]any{"poll": iomux(map[string]any{}, s.Iomux.Poll), "select": iomux(map[string]any{}, s.Iomux.Select), "epoll": epolls},
		"sockets": socks,
	}
}

// normalize decodes JSON with exact numbers so 64-bit values compare
// without float rounding.
func normalize(t *testing.T, data []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestGoldenDecode(t *testing.T) {
	dir := sharedDir(t)
	for _, g := range goldenFiles {
		t.Run(g.bin, func(t *testing.T) {
			bin, err := os.ReadFile(filepath.Join(dir, g.bin+".bin"))
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join(dir, g.bin+".decoded.json"))
			if err != nil {
				t.Fatal(err)
			}
			s, err := Parse(bin)
			if err != nil {
				t.Fatal(err)
			}
			if s.Layout.String() != g.layout {
				t.Errorf("layout %v, want %s", s.Layout, g.layout)
			}
			got, err := json.Marshal(goldenJSON(s))
			if err != nil {
				t.Fatal(err)
			}
			if g, w := normalize(t, got), normalize(t, want); !reflect.DeepEqual(g, w) {
				gi, _ := json.MarshalIndent(g, "", " ")
				t.Errorf("decoded file differs from %s.decoded.json; got:\n%s", filepath.Base(g.(map[string]any)["layout"].(string)), gi)
			}

			// The same through an io.ReaderAt.
			s2, err := ParseReaderAt(bytes.NewReader(bin), int64(len(bin)))
			if err != nil || !reflect.DeepEqual(s, s2) {
				t.Errorf("ParseReaderAt differs from Parse (err %v)", err)
			}

			// Our encoder writes the same bytes libvma's headers did, for
			// every field the decoder knows: re-encoding the decoded file
			// and decoding again gives the same Stats.
			enc, err := Encode(s)
			if err != nil {
				t.Fatal(err)
			}
			s3, err := Parse(enc)
			if err != nil {
				t.Fatal(err)
			}
			s3.ReaderCounter = s.ReaderCounter
			if !reflect.DeepEqual(s, s3) {
				t.Errorf("encode/decode round trip differs:\n%+v\n%+v", s, s3)
			}
		})
	}
}
