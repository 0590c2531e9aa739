package vma

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/collectortest"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/vmastats"
	"github.com/nic-exporter/nic_exporter/xliostats"
	"github.com/nic-exporter/nic_exporter/xliostats/xliostatstest"
)

const xlioGoldenDir = "../../xliostats/testdata/golden"

// pollXLIO polls c once and returns the default and the detail part.
func pollXLIO(t *testing.T, c collector.Collector, errs *collector.SourceErrors) (string, string) {
	t.Helper()
	r := collectortest.MustPoll(t, c, errs)
	return r.Text, r.Detail
}

// xlioDir writes a golden file as the statistics file of pid in a new
// directory.
func xlioDir(t *testing.T, tag, name string, pid int, edit func([]byte)) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(xlioGoldenDir, tag, name))
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(b)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, xliostats.FilePrefix+strconv.Itoa(pid)), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// v1Rows parses xlio_stats -v 1 (one row per fd and direction: offloaded
// pkt, Kbyte, eagain, error, [poll% on Rx], then the same for the os
// path) into fd → direction → numbers.
func v1Rows(t *testing.T, tag string) map[string]map[string][]float64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(xlioGoldenDir, tag, "xlio_stats-v1.txt"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string][]float64{}
	fd := ""
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && (f[1] == "Rx:" || f[1] == "Tx:") {
			fd, f = f[0], f[1:]
		}
		if len(f) == 0 || (f[0] != "Rx:" && f[0] != "Tx:") {
			continue
		}
		var nums []float64
		for _, s := range f[1:] {
			n, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			nums = append(nums, n)
		}
		if f[0] == "Rx:" {
			nums = append(nums[:4], nums[5:]...) // drop poll%
		}
		if out[fd] == nil {
			out[fd] = map[string][]float64{}
		}
		out[fd][strings.ToLower(strings.TrimSuffix(f[0], ":"))] = nums
	}
	return out
}

// TestXLIOGoldenMatchesXLIOStats runs the collector over the golden file
// of each libxlio family and compares the per-socket series with what
// that tag's xlio_stats printed (-v 1: packets, kilobytes, EAGAIN and
// errors per fd, direction and path), and the process sums with the
// same numbers added up.
func TestXLIOGoldenMatchesXLIOStats(t *testing.T) {
	const pid = 4711
	for _, tc := range []struct{ tag, layout string }{{"3.21.2", "F4"}, {"3.70.2", "G2+utls"}} {
		t.Run(tc.tag, func(t *testing.T) {
			dir := xlioDir(t, tc.tag, "xliostat.bin", pid, nil)
			c := NewXLIO(XLIOConfig{Dirs: []string{dir}, Settle: time.Nanosecond,
				Liveness: fixedLiveness{vmastats.Process{PID: pid, Comm: "xlio_host", StartTicks: 1}}}, zap.NewNop())
			def, detail := pollXLIO(t, c, collector.NewSourceErrors(zap.NewNop(), time.Hour))
			s, d := parseSamples(t, def), parseSamples(t, detail)
			if get(t, s, "nic_xlio_process_info", "layout", tc.layout, "version", tc.tag+".0") != 1 ||
				get(t, s, "nic_xlio_files", "state", "live") != 1 ||
				get(t, s, "nic_xlio_reader_handshake") != 1 ||
				get(t, s, "nic_xlio_socket_slots") != 8 {
				t.Error("process series")
			}
			if strings.Contains(def, "nic_xlio_fd_info{") || strings.Contains(def, "nic_xlio_fd_packets_total{") {
				t.Error("per-socket series in the default part")
			}
			rows := v1Rows(t, tc.tag)
			if len(rows) != 4 {
				t.Fatalf("%d fds in the -v 1 output", len(rows))
			}
			sum := map[string]float64{}
			for fd, dirs := range rows {
				for dirn, nums := range dirs {
					for i, path := range []string{"offload", "os"} {
						n := nums[4*i:]
						kv := []string{"fd", fd, "direction", dirn, "path", path}
						got := []float64{
							get(t, d, "nic_xlio_fd_packets_total", kv...),
							float64(int64(get(t, d, "nic_xlio_fd_bytes_total", kv...)) / 1024),
							get(t, d, "nic_xlio_fd_eagain_total", kv...),
							get(t, d, "nic_xlio_fd_errors_total", kv...),
						}
						for j := range got {
							if got[j] != n[j] {
								t.Errorf("fd %s %s %s: column %d printed %v, exported %v", fd, dirn, path, j, n[j], got[j])
							}
						}
						sum[dirn+path] += n[0]
					}
				}
			}
			for _, dirn := range []string{"rx", "tx"} {
				for _, path := range []string{"offload", "os"} {
					if got := get(t, s, "nic_xlio_socket_packets_total", "direction", dirn, "path", path); got != sum[dirn+path] {
						t.Errorf("%s %s packets: exported %v, printed rows add up to %v", dirn, path, got, sum[dirn+path])
					}
				}
			}
			if get(t, s, "nic_xlio_sockets", "protocol", "tcp", "offloaded", "true") != 3 || get(t, s, "nic_xlio_sockets", "protocol", "udp", "offloaded", "true") != 1 {
				t.Error("socket counts")
			}
			if get(t, s, "nic_xlio_multicast_group_sockets", "group", "239.1.1.1") != 1 || get(t, d, "nic_xlio_fd_multicast_member", "fd", "8", "group", "239.1.1.1") != 1 {
				t.Error("multicast")
			}
			if get(t, s, "nic_xlio_iomux_polls_total", "iomux", "epoll", "epfd", "9", "result", "hit") == 0 {
				t.Error("epoll")
			}
		})
	}
}

// TestXLIOFamiliesAgree: the same application in both families exports
// the same families for what both have (the metric model does not depend
// on the layout), and the 3.60-only ones only where the layout has them.
func TestXLIOFamiliesAgree(t *testing.T) {
	const pid = 4711
	names := map[string]map[string]bool{}
	for _, tag := range []string{"3.21.2", "3.70.2"} {
		dir := xlioDir(t, tag, "xliostat.bin", pid, nil)
		c := NewXLIO(XLIOConfig{Dirs: []string{dir}, Settle: time.Nanosecond, PerSocket: true,
			Liveness: fixedLiveness{vmastats.Process{PID: pid, Comm: "xlio_host", StartTicks: 1}}}, zap.NewNop())
		def, _ := pollXLIO(t, c, collector.NewSourceErrors(zap.NewNop(), time.Hour))
		names[tag] = map[string]bool{}
		for _, s := range parseSamples(t, def) {
			names[tag][s.name] = true
		}
	}
	for n := range names["3.21.2"] {
		if !names["3.70.2"][n] {
			t.Errorf("%s only for 3.21.2", n)
		}
	}
	for n := range names["3.70.2"] {
		if !names["3.21.2"][n] && n != "nic_xlio_cq_rx_hw_dropped_packets_total" {
			t.Errorf("%s only for 3.70.2", n)
		}
	}
}

// TestXLIOUnsupportedLayout: a file of an unknown protocol string is not
// decoded: one state count, one log line with the reason, no series of
// the process.
func TestXLIOUnsupportedLayout(t *testing.T) {
	const pid = 4711
	dir := xlioDir(t, "3.21.2", "xliostat.bin", pid, func(b []byte) { copy(b[8:], "0123456789abcdef0123456789abcdef") })
	core, logs := observer.New(zapcore.WarnLevel)
	errs := collector.NewSourceErrors(zap.New(core), time.Hour)
	c := NewXLIO(XLIOConfig{Dirs: []string{dir}, Settle: time.Nanosecond,
		Liveness: fixedLiveness{vmastats.Process{PID: pid, Comm: "xlio_host", StartTicks: 1}}}, zap.NewNop())
	for i := 0; i < 3; i++ {
		def, _ := pollXLIO(t, c, errs)
		s := parseSamples(t, def)
		if get(t, s, "nic_xlio_files", "state", "unsupported") != 1 || get(t, s, "nic_xlio_files", "state", "live") != 0 {
			t.Errorf("poll %d: file states", i)
		}
		if strings.Contains(def, "nic_xlio_process_info") {
			t.Errorf("poll %d: a process exported from an unsupported file", i)
		}
	}
	if logs.Len() != 1 || !strings.Contains(logs.All()[0].ContextMap()["error"].(string), "unknown protocol 0123456789abcdef0123456789abcdef at 8") {
		t.Errorf("log lines: %v", logs.All())
	}
}

func TestXLIONoDirectory(t *testing.T) {
	c := NewXLIO(XLIOConfig{Dirs: []string{filepath.Join(t.TempDir(), "none")}}, zap.NewNop())
	err := c.Update(context.Background(), collector.NewPoll(exposition.NewBuilder(), nil))
	if !errors.Is(err, collector.ErrNoSource) {
		t.Errorf("got %v, want ErrNoSource", err)
	}
}

func TestMonoCounter(t *testing.T) {
	for _, tc := range []struct {
		name  string
		size  int
		steps []uint64
		want  uint64
	}{
		{"64-bit increases", 8, []uint64{5, 7, 1 << 40}, 1 << 40},
		{"64-bit reset", 8, []uint64{100, 150, 20}, 170},
		{"32-bit wrap", 4, []uint64{1<<32 - 10, 5}, 1<<32 + 5},
		{"32-bit reset", 4, []uint64{100, 3}, 103},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m monoCounter
			for _, v := range tc.steps {
				m.observe(v, tc.size)
			}
			if m.total != tc.want {
				t.Errorf("total %d, want %d", m.total, tc.want)
			}
		})
	}
}

// TestXLIOProcSocketChurn runs the per-process totals through the same
// socket churn as for VMA, on files written through the 3.70.2 layout: a
// 32-bit packet counter that wraps, a 64-bit byte counter, a socket that
// closes, and slots reused by new sockets. The totals never go down and
// keep the closed sockets' counts.
func TestXLIOProcSocketChurn(t *testing.T) {
	type sock struct {
		slot  int
		fd    uint64
		inode uint64
		pkts  uint64 // n_rx_packets, 32-bit
		bytes uint64 // n_rx_bytes, 64-bit
	}
	steps := []struct {
		socks               []sock
		wantPkts, wantBytes uint64
	}{
		{[]sock{{0, 10, 100, 1<<32 - 10, 1 << 40}, {1, 11, 101, 7, 70}}, 1<<32 - 3, 1<<40 + 70},
		// Socket 10's packet counter wraps; its byte counter moves on.
		{[]sock{{0, 10, 100, 5, 1<<40 + 500}, {1, 11, 101, 9, 90}}, 1<<32 + 14, 1<<40 + 590},
		// Socket 11 closes: its counts stay in the totals.
		{[]sock{{0, 10, 100, 6, 1<<40 + 600}}, 1<<32 + 15, 1<<40 + 690},
		// Slot 1 is reused by a new socket with the same fd.
		{[]sock{{0, 10, 100, 6, 1<<40 + 600}, {1, 11, 555, 3, 30}}, 1<<32 + 18, 1<<40 + 720},
		// Slot 0 is reused at once by a new socket with lower counters.
		{[]sock{{0, 12, 777, 1, 10}, {1, 11, 555, 4, 40}}, 1<<32 + 20, 1<<40 + 740},
	}
	c, b := -1, -1
	for i, sc := range xlioSockCounters {
		switch sc.xlio {
		case "n_rx_packets":
			c = i
		case "n_rx_bytes":
			b = i
		}
	}
	st := newXLIOProc()
	var lastP, lastB uint64
	for i, step := range steps {
		f, err := xliostatstest.NewFile("8acf4c5e11413c1da2c7f27b2ec26476", true, [4]uint16{3, 70, 2, 0}, 4)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range step.socks {
			if err := f.Enable("skt_inst_arr", k.slot); err != nil {
				t.Fatal(err)
			}
			if err := f.SetAll("skt_inst_arr", k.slot, map[string]uint64{"fd": k.fd, "inode": k.inode, "n_rx_packets": k.pkts, "n_rx_bytes": k.bytes}); err != nil {
				t.Fatal(err)
			}
		}
		s, err := xliostats.Parse(f.B)
		if err != nil {
			t.Fatal(err)
		}
		st.observe(s, uint64(i+1))
		p, by := st.total(c), st.total(b)
		if p != step.wantPkts || by != step.wantBytes || p < lastP || by < lastB {
			t.Fatalf("step %d: packets %d (want %d), bytes %d (want %d)", i, p, step.wantPkts, by, step.wantBytes)
		}
		lastP, lastB = p, by
	}
}
