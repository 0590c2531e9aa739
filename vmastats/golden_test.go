package vmastats_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/nic-exporter/nic_exporter/vmastats"
	"github.com/nic-exporter/nic_exporter/vmastats/vmastatstest"
)

// goldenDir holds the golden files written through libvma's real
// headers and what the real vma_stats printed for them; its README.md
// says how they were produced.
const goldenDir = "testdata/libvma"

var goldenFiles = []struct{ bin, layout string }{
	{"golden_9.8.84_fd4", "B"},
	{"golden_9.0.2_fd4", "A"},
}

// goldenJSON renders s in the schema of the .decoded.json files,
// which an independent decoder wrote.
func goldenJSON(s *vmastats.Stats) map[string]any {
	iomux := func(m map[string]any, st vmastats.IomuxStats) map[string]any {
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
			counters[vmastats.Counter(i).String()] = v
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
	for _, g := range goldenFiles {
		t.Run(g.bin, func(t *testing.T) {
			bin, err := os.ReadFile(filepath.Join(goldenDir, g.bin+".bin"))
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join(goldenDir, g.bin+".decoded.json"))
			if err != nil {
				t.Fatal(err)
			}
			s, err := vmastats.Parse(bin)
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
			s2, err := vmastats.ParseReaderAt(bytes.NewReader(bin), int64(len(bin)))
			if err != nil || !reflect.DeepEqual(s, s2) {
				t.Errorf("ParseReaderAt differs from Parse (err %v)", err)
			}

			// Our encoder writes the same bytes libvma's headers did, for
			// every field the decoder knows: re-encoding the decoded file
			// and decoding again gives the same Stats.
			enc, err := vmastatstest.Encode(s)
			if err != nil {
				t.Fatal(err)
			}
			s3, err := vmastats.Parse(enc)
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

// TestKnownVersionsMatchLibvmaTags checks the table of supported
// stats_protocol_ver values against versions.tsv, the md5 of vma_stats.h
// at every public libvma tag: each md5 of a layout A or B tag is known
// with that layout and ring numbering, no md5 of an older layout is, and
// each entry's Releases names exactly the tags that carry its md5.
func TestKnownVersionsMatchLibvmaTags(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(goldenDir, "versions.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	type tag struct {
		name, md5 string
		layout    vmastats.Layout
		rings     vmastats.RingEnum
	}
	var tags []tag
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n")[1:] {
		f := strings.Split(line, "\t")
		if len(f) != 4 {
			t.Fatalf("versions.tsv line %d: %d fields", i+2, len(f))
		}
		tg := tag{name: f[0], md5: f[1]}
		switch {
		case strings.HasPrefix(f[2], "A:"):
			tg.layout = vmastats.LayoutA
		case strings.HasPrefix(f[2], "B:"):
			tg.layout = vmastats.LayoutB
		}
		switch {
		case strings.HasPrefix(f[3], "ETH=0,ETH_CB=1,"):
			tg.rings = vmastats.RingEnumOld
		case strings.HasPrefix(f[3], "ETH=0,ETH_DIRECT=1,"):
			tg.rings = vmastats.RingEnumNew
		}
		tags = append(tags, tg)
	}
	if len(tags) < 100 {
		t.Fatalf("only %d tags in versions.tsv", len(tags))
	}
	// ver orders tags such as 8.7.51 and 8.8.0 numerically.
	ver := func(s string) [3]int {
		var v [3]int
		for i, p := range strings.SplitN(s, ".", 3) {
			n, err := strconv.Atoi(p)
			if err != nil {
				t.Fatalf("tag %q: %v", s, err)
			}
			v[i] = n
		}
		return v
	}
	less := func(a, b string) bool { va, vb := ver(a), ver(b); return slices.Compare(va[:], vb[:]) < 0 }

	supported := map[string]bool{}
	for _, tg := range tags {
		v, ok := vmastats.LookupVersion(tg.md5)
		if tg.layout == vmastats.LayoutUnknown {
			if ok {
				t.Errorf("libvma %s (md5 %s) has an older layout but is in the table as %s", tg.name, tg.md5, v.Releases)
			}
			continue
		}
		supported[tg.md5] = true
		if !ok {
			t.Errorf("libvma %s (md5 %s, layout %v) is not in the table", tg.name, tg.md5, tg.layout)
			continue
		}
		if v.Layout != tg.layout || v.Rings != tg.rings || tg.rings == 0 {
			t.Errorf("libvma %s: table says layout %v rings %d, versions.tsv layout %v rings %d", tg.name, v.Layout, v.Rings, tg.layout, tg.rings)
		}
	}
	for _, v := range vmastats.KnownVersions() {
		if !supported[v.MD5] {
			t.Errorf("table entry %s (%s) is not the md5 of any layout A or B tag", v.MD5, v.Releases)
		}
		// Releases is a list of tags and ranges of tags; together they
		// must cover every tag with this md5 and no other.
		in := map[string]bool{}
		for _, part := range strings.Split(v.Releases, ", ") {
			lo, hi, isRange := strings.Cut(part, "-")
			if !isRange {
				hi = lo
			}
			for _, tg := range tags {
				if !less(tg.name, lo) && !less(hi, tg.name) {
					in[tg.name] = true
					if tg.md5 != v.MD5 {
						t.Errorf("%s: Releases %q covers libvma %s, whose md5 is %s", v.MD5, v.Releases, tg.name, tg.md5)
					}
				}
			}
			if !in[lo] || !in[hi] {
				t.Errorf("%s: Releases %q names a tag that versions.tsv lacks", v.MD5, v.Releases)
			}
		}
		for _, tg := range tags {
			if tg.md5 == v.MD5 && !in[tg.name] {
				t.Errorf("%s: Releases %q omits libvma %s", v.MD5, v.Releases, tg.name)
			}
		}
	}
}
