package ethtool

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/internal/ethtoolioctl"
)

func TestParseStatName(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want statName
		ok   bool
	}{
		// mlx5 (en_stats.c).
		{"rx12_packets", statName{statQueue, "rx_packets", "12", ""}, true},
		{"tx3_xmit_more", statName{statQueue, "tx_xmit_more", "3", ""}, true},
		{"ch5_events", statName{statQueue, "ch_events", "5", ""}, true},
		{"rx0_xdp_tx_xmit", statName{statQueue, "rx_xdp_tx_xmit", "0", ""}, true},
		{"ptp_tx1_packets", statName{statQueue, "ptp_tx_packets", "1", ""}, true},
		{"ptp_rq0_packets", statName{statQueue, "ptp_rq_packets", "0", ""}, true},
		{"qos_tx7_bytes", statName{statQueue, "qos_tx_bytes", "7", ""}, true},
		{"rx_prio3_bytes", statName{statPriority, "rx_bytes", "3", ""}, true},
		{"tx_prio0_pause_duration", statName{statPriority, "tx_pause_duration", "0", ""}, true},
		{"rx_err_lane_2_phy", statName{statLane, "rx_err_phy", "2", ""}, true},
		{"rx_out_of_buffer", statName{statDevice, "rx_out_of_buffer", "", ""}, true},
		{"rx_1024_to_1518_bytes_phy", statName{statDevice, "rx_1024_to_1518_bytes_phy", "", ""}, true},
		{"rx_vport_RDMA_unicast_packets", statName{statDevice, "rx_vport_rdma_unicast_packets", "", ""}, true},
		// ENA (ena_ethtool.c).
		{"queue_7_tx_cnt", statName{statQueue, "tx_cnt", "7", ""}, true},
		{"queue_0_rx_bad_csum", statName{statQueue, "rx_bad_csum", "0", ""}, true},
		{"queue_9_xdp_tx_cnt", statName{statQueue, "xdp_tx_cnt", "9", ""}, true},
		{"wd_expired", statName{statDevice, "wd_expired", "", ""}, true},
		{"ena_admin_q_aborted_cmd", statName{statDevice, "ena_admin_q_aborted_cmd", "", ""}, true},
		// virtio_net, veth.
		{"rx_queue_0_drops", statName{statQueue, "rx_drops", "0", ""}, true},
		{"tx_queue_15_xdp_xmit_errors", statName{statQueue, "tx_xdp_xmit_errors", "15", ""}, true},
		{"peer_ifindex", statName{statDevice, "peer_ifindex", "", ""}, true},
		// i40e, bnx2x, be2net.
		{"tx-3.tx_packets", statName{statQueue, "tx_packets", "3", ""}, true},
		{"rx-12.bytes", statName{statQueue, "rx_bytes", "12", ""}, true},
		{"[4]: rx_ucast_packets", statName{statQueue, "rx_ucast_packets", "4", ""}, true},
		{"rxq0: rx_bytes", statName{statQueue, "rx_bytes", "0", ""}, true},
		{"txq2: tx_compl", statName{statQueue, "tx_compl", "2", ""}, true},
		// mlx5 up to Linux 4.8: send queues by channel and traffic class.
		{"tx3_1_packets", statName{statQueue, "tx_packets", "3", "1"}, true},
		{"tx0_0_queue_stopped", statName{statQueue, "tx_queue_stopped", "0", "0"}, true},
		{"tx12_7_tso_bytes", statName{statQueue, "tx_tso_bytes", "12", "7"}, true},
		// Priority, class of service, traffic class and VF numbers of other
		// drivers go to labels.
		{"rx_priority_3_xon.nic", statName{statPriority, "rx_xon", "3", ""}, true},
		{"port.tx_priority_7_xoff_count", statName{statPriority, "tx_xoff_count", "7", ""}, true},
		{"pfc_pri3_rx_duration_us", statName{statPriority, "pfc_rx_duration_usecs", "3", ""}, true},
		{"rx_bytes_pri3", statName{statPriority, "rx_bytes", "3", ""}, true},
		{"rx_pfc_ena_frames_pri5", statName{statPriority, "rx_pfc_ena_frames", "5", ""}, true},
		{"rx_prio_2_packets", statName{statPriority, "rx_packets", "2", ""}, true},
		{"tx_pause_prio_4", statName{statPriority, "tx_pause", "4", ""}, true},
		{"rx_discard_packets_cos3", statName{statClass, "rx_discard_packets", "3", ""}, true},
		{"veb.tc_3_tx_packets", statName{statClass, "veb_tx_packets", "3", ""}, true},
		{"vf000.rx_discards", statName{statVF, "rx_discards", "0", ""}, true},
		{"vf012.tx_bytes", statName{statVF, "tx_bytes", "12", ""}, true},
		// Odd names: sanitized, or skipped when nothing is left.
		{"rx-errors", statName{statDevice, "rx_errors", "", ""}, true},
		{"  Rx  CRC Errors ", statName{statDevice, "rx_crc_errors", "", ""}, true},
		{"tx_total", statName{statDevice, "tx", "", ""}, true},
		{"total", statName{}, false},
		{"", statName{}, false},
		{"::::", statName{}, false},
		{"\xff\xfe", statName{}, false},
		{"rx5_", statName{statDevice, "rx5", "", ""}, true},
		{"rx01_packets", statName{statDevice, "rx01_packets", "", ""}, true}, // leading zero: not a queue number
		{"rx1234567_packets", statName{statDevice, "rx1234567_packets", "", ""}, true},
		{"queue_3_tx_\x00", statName{}, false},
		// Words promtool would reject as units or types are rewritten.
		{"rx_corrected_bits_phy", statName{statDevice, "rx_corrected_bit_phy", "", ""}, true},
		{"tx_pause_us", statName{statDevice, "tx_pause_usecs", "", ""}, true},
		{"rx0_wait_milliseconds", statName{statQueue, "rx_wait_millisecond", "0", ""}, true},
		{"pkt_counter", statName{statDevice, "pkt_counters", "", ""}, true},
	} {
		got, ok := parseStatName(tc.raw)
		if ok != tc.ok || got != tc.want {
			t.Errorf("parseStatName(%q) = %+v, %v; want %+v, %v", tc.raw, got, ok, tc.want, tc.ok)
		}
	}
}

// FuzzParseStatName checks that any byte string a driver might return
// either is skipped or yields a valid metric name and label value, never
// a panic. Run with: go test -run '^$' -fuzz FuzzParseStatName ./collector
func FuzzParseStatName(f *testing.F) {
	for _, s := range []string{"rx12_packets", "queue_7_tx_cnt", "rx_queue_0_drops", "rx_prio3_bytes",
		"[1]: rx_bytes", "tx-0.packets", "rx_err_lane_0_phy", "wd_expired", "\xff", "a-b c", "_total"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		n, ok := parseStatName(raw)
		if !ok {
			return
		}
		name := "nic_ethtool_" + n.kind.prefix() + n.base + "_total"
		if !exposition.ValidMetricName(name) {
			t.Fatalf("%q gives invalid metric name %q", raw, name)
		}
		if n.base == "" || strings.Contains(n.base, "__") || strings.HasPrefix(n.base, "_") || strings.HasSuffix(n.base, "_") {
			t.Fatalf("%q gives unclean base %q", raw, n.base)
		}
		if (n.kind == statDevice) != (n.index == "") {
			t.Fatalf("%q: kind %d with index %q", raw, n.kind, n.index)
		}
		if !utf8.ValidString(n.index) || strings.Trim(n.index, "0123456789") != "" || len(n.index) > 6 {
			t.Fatalf("%q gives index %q", raw, n.index)
		}
		if _, err := exposition.NewDesc(name, helpFor(n, false), exposition.Counter, "device"); err != nil {
			t.Fatal(err)
		}
	})
}

// tableSource is a minimal Source over one device whose table the
// test changes between polls.
type tableSource struct {
	names []string
	vals  []uint64
	gone  bool
}

func (s *tableSource) Interfaces() ([]ethtoolioctl.Interface, error) {
	return []ethtoolioctl.Interface{{Name: "eth0", Index: 2}}, nil
}

func (s *tableSource) DriverInfo(string) (ethtoolioctl.DriverInfo, error) {
	if s.gone {
		return ethtoolioctl.DriverInfo{}, syscall.ENODEV
	}
	return ethtoolioctl.DriverInfo{Driver: "ena", NStats: len(s.names)}, nil
}

func (s *tableSource) Link(string) (ethtoolioctl.Link, error) {
	return ethtoolioctl.Link{}, syscall.EOPNOTSUPP
}

func (s *tableSource) StatNames(_ string, n int) ([]string, error) {
	if n != len(s.names) {
		return nil, ethtoolioctl.ErrStatCountChanged
	}
	return append([]string(nil), s.names...), nil
}

func (s *tableSource) Stats(_ string, dst []uint64) error {
	if len(dst) != len(s.vals) {
		return ethtoolioctl.ErrStatCountChanged
	}
	copy(dst, s.vals)
	return nil
}

func pollValue(t *testing.T, c *Collector, family string) (float64, bool) {
	t.Helper()
	b := exposition.NewBuilder()
	if err := c.Update(context.Background(), collector.NewPoll(b, nil)); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(b.Snapshot().String(), "\n") {
		if strings.HasPrefix(line, family+"{") {
			v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			if err != nil {
				t.Fatal(err)
			}
			return v, true
		}
	}
	return 0, false
}

// TestEthtoolSumMonotonic shrinks and grows the queues of a device in sum
// mode, as `ethtool -L` does, with drivers that keep a closed queue's
// counters (mlx5) and drivers that restart them from zero: the summed
// counter never goes backwards and never counts a queue twice.
func TestEthtoolSumMonotonic(t *testing.T) {
	src := &tableSource{}
	c, err := New(Config{Source: src, QueueMode: QueueSum}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	const fam = "nic_ethtool_queue_tx_cnt_total"
	queues := func(vals ...uint64) {
		src.names, src.vals = []string{"wd_expired"}, []uint64{0}
		for i, v := range vals {
			src.names = append(src.names, "queue_"+string(rune('0'+i))+"_tx_cnt")
			src.vals = append(src.vals, v)
		}
	}
	steps := []struct {
		what string
		vals []uint64
		want float64
	}{
		{"four queues", []uint64{100, 200, 300, 400}, 1000},
		{"traffic", []uint64{110, 210, 310, 410}, 1040},
		{"shrunk to two queues: 2 and 3 keep their last values", []uint64{120, 220}, 120 + 220 + 310 + 410},
		{"grown to four, counters kept: no double counting", []uint64{130, 230, 315, 412}, 130 + 230 + 315 + 412},
		{"shrunk to two again", []uint64{140, 240}, 140 + 240 + 315 + 412},
		{"grown to four, new queues from zero", []uint64{150, 250, 5, 6}, 150 + 250 + 315 + 412 + 5 + 6},
		{"queue 1 restarted from zero", []uint64{160, 3, 7, 8}, 160 + 250 + 3 + 315 + 412 + 7 + 8},
	}
	prev := -1.0
	for _, s := range steps {
		queues(s.vals...)
		got, ok := pollValue(t, c, fam)
		if !ok {
			t.Fatalf("%s: no %s", s.what, fam)
		}
		if got != s.want {
			t.Errorf("%s: sum = %v, want %v", s.what, got, s.want)
		}
		if got < prev {
			t.Errorf("%s: sum went back from %v to %v", s.what, prev, got)
		}
		prev = got
	}
	// A re-created interface (new ifindex) is a new device: its sum
	// restarts, which is the source's reset, not the exporter's.
	src.gone = true
	if _, ok := pollValue(t, c, fam); ok {
		t.Error("a vanished device is still exported")
	}
	src.gone = false
	queues(1, 2)
	if got, _ := pollValue(t, c, fam); got != 3 {
		t.Errorf("after re-creation: sum = %v, want 3", got)
	}
}

// TestEthtoolStatCountChanged changes the table between the count and the
// read; the collector refreshes the table within the poll.
func TestEthtoolStatCountChanged(t *testing.T) {
	src := &tableSource{names: []string{"rx0_packets"}, vals: []uint64{5}}
	c, err := New(Config{Source: src, QueueMode: QueueKeep}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := pollValue(t, c, "nic_ethtool_queue_rx_packets_total"); v != 5 {
		t.Fatalf("got %v, want 5", v)
	}
	src.names, src.vals = []string{"rx0_packets", "rx1_packets"}, []uint64{6, 7}
	b := exposition.NewBuilder()
	if err := c.Update(context.Background(), collector.NewPoll(b, nil)); err != nil {
		t.Fatal(err)
	}
	text := b.Snapshot().String()
	for _, want := range []string{
		`nic_ethtool_queue_rx_packets_total{device="eth0",queue="0"} 6`,
		`nic_ethtool_queue_rx_packets_total{device="eth0",queue="1"} 7`,
		`nic_ethtool_stats{device="eth0"} 2`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %s in\n%s", want, text)
		}
	}
}

// TestEthtoolNameConflicts feeds names that collide after sanitizing or
// with the collector's own families: each is skipped and counted, and
// the exposition stays valid.
func TestEthtoolNameConflicts(t *testing.T) {
	src := &tableSource{
		names: []string{"rx-errors", "rx_errors", "info", "queue_rx_packets", "rx0_packets", "rx0_packets", "", "stats"},
		vals:  []uint64{1, 2, 3, 4, 5, 6, 7, 8},
	}
	c, err := New(Config{Source: src, QueueMode: QueueKeep}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	b := exposition.NewBuilder()
	if err := c.Update(context.Background(), collector.NewPoll(b, nil)); err != nil {
		t.Fatal(err)
	}
	text := b.Snapshot().String()
	for _, want := range []string{
		`nic_ethtool_rx_errors_total{device="eth0"} 1`,
		`nic_ethtool_queue_rx_packets_total{device="eth0"} 4`,
		`nic_ethtool_stats_skipped{device="eth0",reason="duplicate"} 1`,
		`nic_ethtool_stats_skipped{device="eth0",reason="invalid_name"} 1`,
		`nic_ethtool_stats_skipped{device="eth0",reason="name_conflict"} 4`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %s in\n%s", want, text)
		}
	}
	if strings.Count(text, "# TYPE nic_ethtool_queue_rx_packets_total") != 1 {
		t.Errorf("family written twice:\n%s", text)
	}
}

// TestEthtoolSumNameConflicts checks that in QueueSum mode a device
// statistic with the name of a sum over queues is skipped, in either
// order, and that the per-queue values go to the detail part.
func TestEthtoolSumNameConflicts(t *testing.T) {
	tests := []struct {
		name  string
		names []string
		want  string
	}{
		{"device statistic first", []string{"queue_rx_packets", "rx0_packets", "rx1_packets"}, `nic_ethtool_queue_rx_packets_total{device="eth0"} 1`},
		{"queues first", []string{"rx0_packets", "rx1_packets", "queue_rx_packets"}, `nic_ethtool_queue_rx_packets_total{device="eth0"} 5`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vals := map[string]uint64{"queue_rx_packets": 1, "rx0_packets": 2, "rx1_packets": 3}
			src := &tableSource{names: tt.names}
			for _, n := range tt.names {
				src.vals = append(src.vals, vals[n])
			}
			c, err := New(Config{Source: src}, zap.NewNop())
			if err != nil {
				t.Fatal(err)
			}
			b := exposition.NewBuilder()
			if err := c.Update(context.Background(), collector.NewPoll(b, nil)); err != nil {
				t.Fatal(err)
			}
			snap := b.Snapshot()
			text := snap.String()
			if strings.Count(text, "nic_ethtool_queue_rx_packets_total{") != 1 || !strings.Contains(text, tt.want) {
				t.Errorf("want exactly %s in\n%s", tt.want, text)
			}
			detail := snap.Detail().String()
			for _, want := range []string{
				`nic_ethtool_per_queue_rx_packets_total{device="eth0",queue="0"} 2`,
				`nic_ethtool_per_queue_rx_packets_total{device="eth0",queue="1"} 3`,
			} {
				if !strings.Contains(detail, want) {
					t.Errorf("detail part misses %s:\n%s", want, detail)
				}
			}
		})
	}
}

// TestEthtoolDetailBuffers checks the two value buffers of the deferred
// detail render: a snapshot rendered after the next poll still shows its
// own values (the next poll read into the other buffer), no poll copies
// the values, and renders running beside polls read a buffer only
// between the polls that fill it (run with -race). A render that comes
// two polls late shows the later poll's values, as valsBuf documents.
func TestEthtoolDetailBuffers(t *testing.T) {
	src := &tableSource{names: []string{"rx0_packets", "rx1_packets"}, vals: []uint64{10, 20}}
	c, err := New(Config{Source: src}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	poll := func(v0 uint64) *exposition.Snapshot {
		t.Helper()
		src.vals = []uint64{v0, v0 + 1}
		b := exposition.NewBuilder()
		if err := c.Update(context.Background(), collector.NewPoll(b, nil)); err != nil {
			t.Fatal(err)
		}
		return b.Snapshot()
	}
	rx0 := func(s *exposition.Snapshot) string {
		for _, l := range strings.Split(s.Detail().String(), "\n") {
			if strings.HasPrefix(l, `nic_ethtool_per_queue_rx_packets_total{device="eth0",queue="0"} `) {
				return l[strings.LastIndexByte(l, ' ')+1:]
			}
		}
		return "none"
	}
	s1 := poll(100)
	s2 := poll(200)
	if got := rx0(s1); got != "100" {
		t.Errorf("first poll's detail rendered after the second poll: queue 0 = %s, want 100", got)
	}
	s3 := poll(300)
	if got := rx0(s2); got != "200" {
		t.Errorf("second poll's detail rendered after the third: queue 0 = %s, want 200", got)
	}
	if got := rx0(s3); got != "300" {
		t.Errorf("third poll's detail: queue 0 = %s, want 300", got)
	}
	st := c.ifaces["eth0"]
	if st == nil || st.bufs[0] == nil || st.bufs[1] == nil || &st.bufs[0].vals[0] == &st.bufs[1].vals[0] {
		t.Fatalf("want two distinct value buffers, have %+v", st)
	}
	s4 := poll(400)
	poll(500)
	poll(600) // refills s4's buffer
	if got := rx0(s4); got != "600" {
		t.Errorf("a render two polls late: queue 0 = %s, want the later poll's 600", got)
	}

	// Renders beside polls: the race detector checks the locking.
	done := make(chan struct{})
	snaps := make(chan *exposition.Snapshot, 64)
	go func() {
		defer close(done)
		for s := range snaps {
			rx0(s)
		}
	}()
	for i := range 50 {
		src.vals = []uint64{uint64(1000 + i), uint64(1001 + i)}
		b := exposition.NewBuilder()
		if err := c.Update(context.Background(), collector.NewPoll(b, nil)); err != nil {
			t.Fatal(err)
		}
		snaps <- b.Snapshot()
	}
	close(snaps)
	<-done
}
