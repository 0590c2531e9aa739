package vma

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/collectortest"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/vmastats"
)

// fixedLiveness accepts one pid for files owned by this test's user; it
// stands in for procfs when the file's writer is not a real process.
type fixedLiveness struct {
	proc vmastats.Process
}

func (f fixedLiveness) Verify(pid int, fi vmastats.FileInfo) (vmastats.Process, error) {
	if pid != f.proc.PID {
		return vmastats.Process{}, fmt.Errorf("%w: process %d does not exist", vmastats.ErrStale, pid)
	}
	if fi.UID != uint32(os.Getuid()) {
		return vmastats.Process{}, fmt.Errorf("%w: owner %d", vmastats.ErrRefused, fi.UID)
	}
	return f.proc, nil
}

// sample is one parsed series.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

var sampleRE = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$`)
var labelRE = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)

func parseSamples(t *testing.T, text string) []sample {
	t.Helper()
	var out []sample
	for _, line := range strings.Split(text, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m := sampleRE.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("unparsable line %q", line)
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			t.Fatal(err)
		}
		s := sample{name: m[1], labels: map[string]string{}, value: v}
		for _, l := range labelRE.FindAllStringSubmatch(m[2], -1) {
			s.labels[l[1]] = l[2]
		}
		out = append(out, s)
	}
	return out
}

// get returns the value of the one series of name whose labels include
// kv (pairs of name, value).
func get(t *testing.T, samples []sample, name string, kv ...string) float64 {
	t.Helper()
	var found []float64
	for _, s := range samples {
		if s.name != name {
			continue
		}
		match := true
		for i := 0; i < len(kv); i += 2 {
			if s.labels[kv[i]] != kv[i+1] {
				match = false
				break
			}
		}
		if match {
			found = append(found, s.value)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s%v: %d series, want 1", name, kv, len(found))
	}
	return found[0]
}

func poll(t *testing.T, c collector.Collector) (string, *collector.SourceErrors, error) {
	t.Helper()
	r := collectortest.Poll(t, c, nil)
	return r.Text, r.Errors, r.Err
}

func sharedVMADir(t *testing.T) string {
	t.Helper()
	// The libvma golden files and what vma_stats printed for them; their
	// README.md says how they were produced.
	return filepath.Join("..", "..", "vmastats", "testdata", "libvma")
}

// vsSections parses the "-v 3" output of the real vma_stats into its
// sections: title (such as "Fd=[10]", "CQ=[0]", "poll") to key to value.
func vsSections(t *testing.T, path string) map[string]map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]map[string]string{}
	var cur map[string]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "====="):
			cur = nil
		case strings.HasPrefix(line, "\t"):
			cur = map[string]string{}
			out[strings.TrimSpace(line)] = cur
		case cur != nil:
			if k, v, ok := strings.Cut(strings.TrimPrefix(line, "- "), ":"); ok {
				cur[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
		}
	}
	return out
}

// nums returns the integers of a vma_stats value such as
// "97 / 100017 / 100020 / 100019 [kilobytes/packets/eagains/errors]".
func nums(t *testing.T, s string) []float64 {
	t.Helper()
	var out []float64
	for _, f := range regexp.MustCompile(`\d+(\.\d+)?`).FindAllString(strings.Split(s, "[")[0], -1) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// TestVMAGoldenMatchesVMAStats exports the golden files written through
// libvma's real headers and checks every number the real vma_stats
// printed for them against the exporter's series.
func TestVMAGoldenMatchesVMAStats(t *testing.T) {
	shared := sharedVMADir(t)
	for _, tc := range []struct {
		bin, v3, v4, v5, version string
		pid                      int
	}{
		{"golden_9.8.84_fd4.bin", "vs_v3.txt", "vs_v4.txt", "vs_v5.txt", "9.8.84.0", 20795},
		{"golden_9.0.2_fd4.bin", "vs902_v3.txt", "", "vs902_v5.txt", "9.0.2.0", 17540},
	} {
		t.Run(tc.bin, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(shared, tc.bin))
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, vmastats.FilePrefix+strconv.Itoa(tc.pid)), data, 0o644); err != nil {
				t.Fatal(err)
			}
			c := New(Config{Dirs: []string{dir}, PerSocket: true, Settle: time.Nanosecond,
				Liveness: fixedLiveness{vmastats.Process{PID: tc.pid, Comm: "gen_golden", StartTicks: 1}}}, zap.NewNop())
			text, _, err := poll(t, c)
			if err != nil {
				t.Fatal(err)
			}
			ss := parseSamples(t, text)
			base := []string{"pid", strconv.Itoa(tc.pid), "version", tc.version}
			l := func(kv ...string) []string { return append(append([]string(nil), base...), kv...) }
			if get(t, ss, "nic_vma_files", "state", "live") != 1 {
				t.Error("file not live")
			}
			kb := func(v float64) float64 { return math.Floor(v / 1024) }

			sec := vsSections(t, filepath.Join(shared, tc.v3))
			for _, fd := range []string{"10", "12"} {
				s := sec["Fd=["+fd+"]"]
				if s == nil {
					t.Fatalf("no Fd=[%s] in %s", fd, tc.v3)
				}
				for _, dir := range []struct{ key, dir, path string }{
					{"Rx Offload", "rx", "offload"}, {"Rx OS info", "rx", "os"},
					{"Tx Offload", "tx", "offload"}, {"Tx OS info", "tx", "os"},
				} {
					// kilobytes / packets / eagains (drops in 9.0) / errors
					want := nums(t, s[dir.key])
					dl := l("fd", fd, "direction", dir.dir, "path", dir.path)
					got := []float64{
						kb(get(t, ss, "nic_vma_fd_bytes_total", dl...)),
						get(t, ss, "nic_vma_fd_packets_total", dl...),
						get(t, ss, "nic_vma_fd_eagain_total", dl...),
						get(t, ss, "nic_vma_fd_errors_total", dl...),
					}
					if fmt.Sprint(got) != fmt.Sprint(want) {
						t.Errorf("fd %s %s: exporter %v, vma_stats %v", fd, dir.key, got, want)
					}
				}
				// "Rx byte: cur 4294967302 / max 100008 / dropped 100006 / limit 65536"
				rb := nums(t, s["Rx byte"])
				if get(t, ss, "nic_vma_fd_rx_ready_bytes", l("fd", fd)...) != rb[0] ||
					get(t, ss, "nic_vma_fd_rx_ready_queue_dropped_bytes_total", l("fd", fd)...) != rb[2] {
					t.Errorf("fd %s Rx byte: %v", fd, rb)
				}
				rp := nums(t, s["Rx pkt"])
				if get(t, ss, "nic_vma_fd_rx_ready_packets", l("fd", fd)...) != rp[0] ||
					get(t, ss, "nic_vma_fd_rx_ready_queue_dropped_packets_total", l("fd", fd)...) != rp[2] {
					t.Errorf("fd %s Rx pkt: %v", fd, rp)
				}
				// "Rx poll: 100004 / 100003 (50.00%) [miss/hit]"
				rpoll := nums(t, s["Rx poll"])
				miss := get(t, ss, "nic_vma_fd_rx_polls_total", l("fd", fd, "result", "miss")...)
				hit := get(t, ss, "nic_vma_fd_rx_polls_total", l("fd", fd, "result", "hit")...)
				if miss != rpoll[0] || hit != rpoll[1] || fmt.Sprintf("%.2f", 100*hit/(hit+miss)) != fmt.Sprintf("%.2f", rpoll[2]) {
					t.Errorf("fd %s Rx poll: exporter miss %v hit %v, vma_stats %v", fd, miss, hit, rpoll)
				}
				mig := nums(t, s["Ring migrations Rx"]) // "100016, Tx: 100026" is split at the first colon
				if get(t, ss, "nic_vma_fd_ring_migrations_total", l("fd", fd, "direction", "rx")...) != mig[0] ||
					get(t, ss, "nic_vma_fd_ring_migrations_total", l("fd", fd, "direction", "tx")...) != mig[1] {
					t.Errorf("fd %s migrations %v", fd, mig)
				}
				if get(t, ss, "nic_vma_fd_tx_retransmissions_total", l("fd", fd)...) != nums(t, s["Retransmissions"])[0] {
					t.Errorf("fd %s retransmissions", fd)
				}
				if get(t, ss, "nic_vma_fd_tx_dummy_packets_total", l("fd", fd)...) != nums(t, s["Tx Dummy messages"])[0] {
					t.Errorf("fd %s dummy", fd)
				}
			}
			// The process aggregates are the sums over both sockets.
			if got := get(t, ss, "nic_vma_socket_packets_total", l("direction", "rx", "path", "offload")...); got != 100001+300001 {
				t.Errorf("aggregate rx packets %v", got)
			}
			for _, cq := range []string{"0", "2"} {
				s := sec["CQ=["+cq+"]"]
				for key, name := range map[string]string{
					"Packets dropped": "nic_vma_cq_rx_dropped_packets_total", "Packets queue len": "nic_vma_cq_rx_queue_length",
					"Drained max": "nic_vma_cq_rx_drained_at_once_max", "Buffer pool size": "nic_vma_cq_buffer_pool_length",
				} {
					if got, want := get(t, ss, name, l("cq", cq)...), nums(t, s[key])[0]; got != want {
						t.Errorf("CQ %s %s: exporter %v, vma_stats %v", cq, key, got, want)
					}
				}
			}
			eth := sec["RING_ETH=[0]"]
			rl := l("ring", "0", "type", "RING_ETH")
			for key, dir := range map[string]string{"Tx Offload": "tx", "Rx Offload": "rx"} {
				v := nums(t, eth[key])
				if kb(get(t, ss, "nic_vma_ring_bytes_total", append(rl, "direction", dir)...)) != v[0] || get(t, ss, "nic_vma_ring_packets_total", append(rl, "direction", dir)...) != v[1] {
					t.Errorf("ring 0 %s: %v", key, v)
				}
			}
			in := nums(t, eth["Interrupts"])
			md := nums(t, eth["Moderation"])
			if get(t, ss, "nic_vma_ring_rx_interrupts_total", append(rl, "event", "requested")...) != in[0] ||
				get(t, ss, "nic_vma_ring_rx_interrupts_total", append(rl, "event", "received")...) != in[1] ||
				get(t, ss, "nic_vma_ring_rx_cq_moderation_frames", rl...) != md[0] ||
				math.Round(get(t, ss, "nic_vma_ring_rx_cq_moderation_period_seconds", rl...)*1e6) != md[1] ||
				get(t, ss, "nic_vma_ring_tx_retransmissions_total", rl...) != nums(t, eth["Retransmissions"])[0] {
				t.Errorf("ring 0 interrupts %v moderation %v", in, md)
			}
			tap := sec["RING_TAP=[1]"]
			tl := l("ring", "1", "tap", tap["Tap Device"])
			if get(t, ss, "nic_vma_ring_tap_rx_buffers", tl...) != nums(t, tap["Rx Buffers"])[0] ||
				get(t, ss, "nic_vma_ring_tap_vf_plugouts_total", tl...) != nums(t, tap["VF Plugouts"])[0] {
				t.Errorf("tap ring %v", tap)
			}
			if kb(get(t, ss, "nic_vma_ring_bytes_total", l("ring", "1", "type", "RING_TAP", "direction", "tx")...)) != nums(t, tap["Tx Offload"])[0] {
				t.Errorf("tap ring tx bytes")
			}
			for title, pool := range map[string]string{"BUFFER_POOL(RX)=[0]": "rx", "BUFFER_POOL(TX)=[1]": "tx"} {
				s := sec[title]
				if get(t, ss, "nic_vma_buffer_pool_size_buffers", l("pool", pool)...) != nums(t, s["Size"])[0] ||
					get(t, ss, "nic_vma_buffer_pool_no_buffers_total", l("pool", pool)...) != nums(t, s["No buffers error"])[0] {
					t.Errorf("buffer pool %s: %v", pool, s)
				}
			}
			for title, ik := range map[string][2]string{"poll": {"poll", ""}, "select": {"select", ""}, "epoll[42]": {"epoll", "42"}} {
				s := sec[title]
				il := l("iomux", ik[0], "epfd", ik[1])
				ready := nums(t, s["Rx fds ready"]) // os / offload
				polls := nums(t, s["Polls [miss/hit]"])
				if get(t, ss, "nic_vma_iomux_rx_ready_fds_total", append(il, "path", "os")...) != ready[0] ||
					get(t, ss, "nic_vma_iomux_rx_ready_fds_total", append(il, "path", "offload")...) != ready[1] ||
					get(t, ss, "nic_vma_iomux_polls_total", append(il, "result", "miss")...) != polls[0] ||
					get(t, ss, "nic_vma_iomux_polls_total", append(il, "result", "hit")...) != polls[1] ||
					get(t, ss, "nic_vma_iomux_timeouts_total", il...) != nums(t, s["Timeouts"])[0] ||
					get(t, ss, "nic_vma_iomux_errors_total", il...) != nums(t, s["Errors"])[0] ||
					get(t, ss, "nic_vma_iomux_polling_cpu_percent", il...) != nums(t, s["Polling CPU"])[0] {
					t.Errorf("iomux %s: %v", title, s)
				}
			}

			// Multicast membership as "vma_stats -v 4" lists it:
			// "[239.1.1.1]           10 12".
			if tc.v4 != "" {
				data, err := os.ReadFile(filepath.Join(shared, tc.v4))
				if err != nil {
					t.Fatal(err)
				}
				n := 0
				for _, m := range regexp.MustCompile(`(?m)^\[([0-9.]+)\]\s+([0-9 ]+)$`).FindAllStringSubmatch(string(data), -1) {
					fds := strings.Fields(m[2])
					n++
					if got := get(t, ss, "nic_vma_multicast_group_sockets", l("group", m[1])...); got != float64(len(fds)) {
						t.Errorf("group %s: %v sockets, vma_stats lists %v", m[1], got, fds)
					}
					for _, fd := range fds {
						get(t, ss, "nic_vma_fd_multicast_member", l("fd", fd, "group", m[1])...)
					}
				}
				members := 0
				for _, s := range ss {
					if s.name == "nic_vma_fd_multicast_member" {
						members++
					}
				}
				if n != 2 || members != 3 {
					t.Errorf("%d groups and %d memberships, want 2 and 3 as vma_stats printed", n, members)
				}
			}

			// "vma_stats -v 5": protocol, Recv-Q, Send-Q, addresses, state, inode.
			data, err = os.ReadFile(filepath.Join(shared, tc.v5))
			if err != nil {
				t.Fatal(err)
			}
			rows := 0
			for _, line := range strings.Split(string(data), "\n") {
				f := strings.Fields(line)
				if len(f) < 7 || (f[0] != "udp" && f[0] != "tcp") {
					continue
				}
				rows++
				var match *sample
				for i := range ss {
					if ss[i].name == "nic_vma_fd_info" && ss[i].labels["local"] == f[4] && ss[i].labels["protocol"] == f[0] {
						match = &ss[i]
					}
				}
				if match == nil {
					t.Fatalf("no socket %s %s", f[0], f[4])
				}
				fd := match.labels["fd"]
				if q, _ := strconv.ParseFloat(f[2], 64); get(t, ss, "nic_vma_fd_rx_ready_bytes", l("fd", fd)...) != q {
					t.Errorf("fd %s Recv-Q %s", fd, f[2])
				}
				if f[0] == "tcp" && (match.labels["tcp_state"] != f[6] || match.labels["remote"] != f[5]) {
					t.Errorf("fd %s: state %q remote %q, vma_stats %q %q", fd, match.labels["tcp_state"], match.labels["remote"], f[6], f[5])
				}
				if match.labels["offloaded"] != "true" || f[1] != "Yes" {
					t.Errorf("fd %s offloaded %q, vma_stats %q", fd, match.labels["offloaded"], f[1])
				}
			}
			if rows != 2 {
				t.Errorf("%d socket rows in %s", rows, tc.v5)
			}
		})
	}
}

func TestVMANoDirectory(t *testing.T) {
	c := New(Config{Dirs: []string{filepath.Join(t.TempDir(), "none")}}, zap.NewNop())
	_, _, err := poll(t, c)
	if !errors.Is(err, collector.ErrNoSource) {
		t.Errorf("missing directory: %v, want collector.ErrNoSource", err)
	}
}

func TestWrapCounter(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []uint32
		want uint64
	}{
		{"steady", []uint32{5, 10, 20}, 20},
		{"wrap", []uint32{math.MaxUint32 - 10, 5}, math.MaxUint32 - 10 + 16},
		{"two wraps", []uint32{1 << 31, math.MaxUint32, 1 << 30, 1<<31 + 5, 3}, 1<<32 + 1<<32 + 3},
		// A decrease is a wrap only from the upper half of the range into
		// the lower half; any other decrease is a reset, counted from zero
		// (it used to be taken for a wrap and add 2^32).
		{"reset, not a wrap", []uint32{3000, 100}, 3000 + 100},
		{"reset within the upper half", []uint32{1<<31 + 100, 1<<31 + 50}, 1<<31 + 100 + 1<<31 + 50},
		{"reset within the lower half, then counting", []uint32{1 << 30, 0, 7}, 1<<30 + 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w wrapCounter
			for _, v := range tc.in {
				w.observe(v)
			}
			if w.total != tc.want {
				t.Errorf("total %d, want %d", w.total, tc.want)
			}
		})
	}
}

func TestVMAProcSocketChurn(t *testing.T) {
	st := newVMAProc(vmastats.Process{PID: 1, StartTicks: 1})
	sock := func(slot int, fd int32, inode uint32, rx uint32) vmastats.Socket {
		s := vmastats.Socket{Slot: slot, FD: fd, Inode: inode}
		s.Counters[vmastats.RxPackets] = rx
		return s
	}
	steps := []struct {
		socks []vmastats.Socket
		want  uint64
	}{
		{[]vmastats.Socket{sock(0, 10, 100, 50), sock(1, 11, 101, 7)}, 57},
		{[]vmastats.Socket{sock(0, 10, 100, 60), sock(1, 11, 101, 9)}, 69},
		// Socket 11 closes: its 9 packets stay in the total.
		{[]vmastats.Socket{sock(0, 10, 100, 61)}, 70},
		// Slot 1 is reused by a new socket with the same fd: new identity.
		{[]vmastats.Socket{sock(0, 10, 100, 61), sock(1, 11, 555, 3)}, 73},
		// Slot 0 reused at once by a new socket with lower counters.
		{[]vmastats.Socket{sock(0, 12, 777, 1), sock(1, 11, 555, 4)}, 75},
	}
	var last uint64
	for i, step := range steps {
		st.observe(&vmastats.Stats{Sockets: step.socks}, uint64(i+1))
		got := st.total(vmastats.RxPackets)
		if got != step.want || got < last {
			t.Fatalf("step %d: total %d, want %d (previous %d)", i, got, step.want, last)
		}
		last = got
	}
}

// TestVMAPerSocketPart checks which part of the snapshot the per-socket
// series go to: the detail part by default, the default part with
// PerSocket; never both, and the same series either way.
func TestVMAPerSocketPart(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(sharedVMADir(t), "golden_9.8.84_fd4.bin"))
	if err != nil {
		t.Fatal(err)
	}
	const pid = 20795
	parts := map[bool][2]string{}
	for _, perSocket := range []bool{false, true} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, vmastats.FilePrefix+strconv.Itoa(pid)), data, 0o644); err != nil {
			t.Fatal(err)
		}
		c := New(Config{Dirs: []string{dir}, PerSocket: perSocket, Settle: time.Nanosecond,
			Liveness: fixedLiveness{vmastats.Process{PID: pid, Comm: "gen_golden", StartTicks: 1}}}, zap.NewNop())
		b := exposition.NewBuilder()
		if err := c.Update(context.Background(), collector.NewPoll(b, collector.NewSourceErrors(zap.NewNop(), time.Hour))); err != nil {
			t.Fatal(err)
		}
		snap := b.Snapshot()
		parts[perSocket] = [2]string{snap.String(), snap.Detail().String()}
	}
	tests := []struct {
		name            string
		perSocket       bool
		inDefault, want bool
	}{
		{"default part without the flag", false, true, false},
		{"detail part without the flag", false, false, true},
		{"default part with the flag", true, true, true},
		{"detail part with the flag", true, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := parts[tt.perSocket][1]
			if tt.inDefault {
				text = parts[tt.perSocket][0]
			}
			for _, fam := range []string{"nic_vma_fd_info{", "nic_vma_fd_packets_total{", "nic_vma_fd_rx_ready_packets{"} {
				if got := strings.Contains(text, fam); got != tt.want {
					t.Errorf("has %s = %v, want %v", fam, got, tt.want)
				}
			}
		})
	}
	samples := func(texts ...string) string {
		var lines []string
		for _, text := range texts {
			for _, l := range strings.Split(text, "\n") {
				if l != "" && !strings.HasPrefix(l, "#") {
					lines = append(lines, l)
				}
			}
		}
		sort.Strings(lines)
		return strings.Join(lines, "\n")
	}
	if samples(parts[false][0], parts[false][1]) != samples(parts[true][0]) {
		t.Error("the two parts without the flag do not hold the same samples as the default part with it")
	}
}
