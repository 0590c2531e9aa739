package vma

import (
	"bufio"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/vmastats"
	"github.com/nic-exporter/nic_exporter/vmastats/vmastatstest"
)

// helperDirEnv makes the test binary act as a libvma application: see
// runVMAHelper.
const helperDirEnv = "NIC_EXPORTER_VMA_HELPER_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(helperDirEnv); dir != "" {
		if err := runVMAHelper(dir, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "vma helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// helperRx is the offloaded rx packet counter of each helper socket at
// each step: a counter about to wrap, a socket that closes at step 1 and
// a new socket that reuses its slot and fd at step 2.
type helperSock struct {
	slot  int
	fd    int32
	inode uint32
	rx    uint32
}

var helperSteps = [][]helperSock{
	{{0, 10, 100, 0xFFFFFF00}, {1, 11, 101, 100}},
	{{0, 10, 100, 0x100}},
	{{0, 10, 100, 0x200}, {1, 11, 202, 5}},
}

func helperStats(step int) *vmastats.Stats {
	s := &vmastats.Stats{
		Header:   vmastats.Header{VerInfo: [4]uint8{9, 8, 84, 0}, ProtocolVer: "25ca1bbb55c2c5536b0b4bded2689e9a", MaxSockets: 4, Layout: vmastats.LayoutB, FdDump: -1},
		RingEnum: vmastats.RingEnumNew,
	}
	for _, h := range helperSteps[step] {
		k := vmastats.Socket{Slot: h.slot, FD: h.fd, Inode: h.inode, Type: vmastats.SockDgram, Offloaded: true,
			BoundIf: netip.MustParseAddr("127.0.0.1"), BoundPort: 5000 + uint16(h.slot),
			ConnectedIP: netip.IPv4Unspecified(), MCTxIf: netip.IPv4Unspecified()}
		k.Counters[vmastats.RxPackets] = h.rx
		s.Sockets = append(s.Sockets, k)
	}
	return s
}

// runVMAHelper publishes vmastat.<own pid> in dir like libvma and obeys
// commands on in: "step N" publishes step N, but only if a reader bumped
// reader_counter since the last publication (libvma's handshake), and
// answers "published" or "idle"; "rc" answers the reader counter.
func runVMAHelper(dir string, in io.Reader, out io.Writer) error {
	pub, err := vmastatstest.NewPublisher(dir, os.Getpid(), helperStats(0))
	if err != nil {
		return err
	}
	defer pub.Close()
	seen := pub.ReaderCounter()
	fmt.Fprintln(out, "ready")
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "step":
			n, err := strconv.Atoi(f[1])
			if err != nil || n < 0 || n >= len(helperSteps) {
				return fmt.Errorf("bad step %q", f[1])
			}
			if rc := pub.ReaderCounter(); rc == seen {
				fmt.Fprintln(out, "idle")
				continue
			} else {
				seen = rc
			}
			if err := pub.Update(helperStats(n)); err != nil {
				return err
			}
			fmt.Fprintln(out, "published")
		case len(f) == 1 && f[0] == "rc":
			fmt.Fprintln(out, pub.ReaderCounter())
		default:
			return fmt.Errorf("unknown command %q", sc.Text())
		}
	}
	return sc.Err()
}

// TestVMALiveProcess runs a helper process that publishes a live stats
// file, and checks the collector's handshake, its monotonic totals
// through a 32-bit wrap and socket churn, and the values it reports.
// Liveness is the real procfs check: the helper is a real process that
// maps its file.
func TestVMALiveProcess(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperDirEnv+"="+dir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	lines := bufio.NewScanner(stdout)
	ask := func(cmd string) string {
		t.Helper()
		if cmd != "" {
			fmt.Fprintln(stdin, cmd)
		}
		if !lines.Scan() {
			t.Fatalf("helper exited: %v", lines.Err())
		}
		return lines.Text()
	}
	if got := ask(""); got != "ready" {
		t.Fatalf("helper said %q", got)
	}
	pid := strconv.Itoa(cmd.Process.Pid)

	c := New(Config{Dirs: []string{dir}, ProcPath: "/proc", PerSocket: true}, zap.NewNop())
	wantTotals := []float64{0xFFFFFF00 + 100, 0xFFFFFF00 + 0x200 + 100, 0xFFFFFF00 + 0x300 + 100 + 5}
	wantSockets := []float64{2, 1, 2}
	var last float64
	for step := range helperSteps {
		if step > 0 {
			if got := ask(fmt.Sprintf("step %d", step)); got != "published" {
				t.Fatalf("step %d: helper %s: the collector's handshake did not reach it", step, got)
			}
		}
		text, errs, err := poll(t, c)
		if err != nil {
			t.Fatal(err)
		}
		if n := errs.Counts(); len(n) != 0 {
			t.Fatalf("step %d: source errors %v", step, n)
		}
		if rc := ask("rc"); rc != strconv.Itoa(step+1) {
			t.Errorf("step %d: reader_counter %s, want %d", step, rc, step+1)
		}
		ss := parseSamples(t, text)
		base := []string{"pid", pid, "version", "9.8.84.0"}
		got := get(t, ss, "nic_vma_socket_packets_total", append(base, "direction", "rx", "path", "offload")...)
		if got != wantTotals[step] || got < last {
			t.Errorf("step %d: rx packets %v, want %v (previous %v)", step, got, wantTotals[step], last)
		}
		last = got
		if n := get(t, ss, "nic_vma_sockets", append(base, "protocol", "udp", "offloaded", "true")...); n != wantSockets[step] {
			t.Errorf("step %d: %v sockets, want %v", step, n, wantSockets[step])
		}
		if fd10 := get(t, ss, "nic_vma_fd_packets_total", append(base, "fd", "10", "direction", "rx", "path", "offload")...); fd10 != wantTotals[step]-map[int]float64{0: 100, 1: 100, 2: 105}[step] {
			t.Errorf("step %d: fd 10 rx packets %v", step, fd10)
		}
		if get(t, ss, "nic_vma_reader_handshake", base...) != 1 || get(t, ss, "nic_vma_files", "state", "live") != 1 {
			t.Errorf("step %d: handshake or live file missing:\n%s", step, text)
		}
		comm := ""
		for _, s := range ss {
			if s.name == "nic_vma_process_info" {
				comm = s.labels["comm"]
			}
		}
		if want := filepath.Base(os.Args[0]); len(want) > 15 && comm != want[:15] || len(want) <= 15 && comm != want {
			t.Errorf("comm %q for %s", comm, os.Args[0])
		}
	}
	// Without a reader's bump, the helper (like libvma) publishes nothing.
	if got := ask("step 0"); got != "published" {
		t.Fatalf("after the last poll: %s", got)
	}
	if got := ask("step 1"); got != "idle" {
		t.Errorf("no reader since the last publication, helper %s", got)
	}

	// SIGKILL leaves the file behind: stale, ignored, not deleted.
	path := filepath.Join(dir, vmastats.FilePrefix+pid)
	cmd.Process.Kill()
	cmd.Wait()
	text, errs, err := poll(t, c)
	if err != nil {
		t.Fatal(err)
	}
	ss := parseSamples(t, text)
	if get(t, ss, "nic_vma_files", "state", "stale") != 1 || get(t, ss, "nic_vma_files", "state", "live") != 0 || len(errs.Counts()) != 0 {
		t.Errorf("after SIGKILL:\n%s", text)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("stale file removed: %v", err)
	}
}

// TestVMAFileStates plants bad files next to a good one: each bad file is
// counted in its state and reported once; the good one is exported.
func TestVMAFileStates(t *testing.T) {
	dir := t.TempDir()
	me := os.Getpid()
	good := helperStats(0)
	pub, err := vmastatstest.NewPublisher(dir, me, good)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	// A symlink named for a live pid (init, pid 1) pointing at /etc/passwd.
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "vmastat.1")); err != nil {
		t.Fatal(err)
	}
	// A stale file of a dead process.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	b, _ := vmastatstest.Encode(good)
	if err := os.WriteFile(filepath.Join(dir, vmastats.FilePrefix+strconv.Itoa(dead.Process.Pid)), b, 0o644); err != nil {
		t.Fatal(err)
	}
	c := New(Config{Dirs: []string{dir, filepath.Join(dir, "absent")}}, zap.NewNop())
	text, errs, err := poll(t, c)
	if err != nil {
		t.Fatal(err)
	}
	ss := parseSamples(t, text)
	for state, want := range map[string]float64{"live": 1, "stale": 1, "refused": 1, "unsupported": 0, "error": 0} {
		if got := get(t, ss, "nic_vma_files", "state", state); got != want {
			t.Errorf("state %s: %v, want %v", state, got, want)
		}
	}
	var reported uint64
	for _, rc := range errs.Counts() {
		reported += rc.Count
	}
	if reported != 1 {
		t.Errorf("%d source errors, want 1 (the symlink): %v", reported, errs.Counts())
	}
	if strings.Contains(text, "root:") {
		t.Error("/etc/passwd content exported")
	}
}

// TestVMAProcessRestartResets checks that totals restart only when the
// process identity (pid and start time) changes.
func TestVMAProcessRestartResets(t *testing.T) {
	dir := t.TempDir()
	pub, err := vmastatstest.NewPublisher(dir, 4242, helperStats(0))
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	live := &fixedLiveness{vmastats.Process{PID: 4242, Comm: "app", StartTicks: 1}}
	c := New(Config{Dirs: []string{dir}, Liveness: live, Settle: time.Nanosecond}, zap.NewNop())
	total := func() float64 {
		text, _, err := poll(t, c)
		if err != nil {
			t.Fatal(err)
		}
		return get(t, parseSamples(t, text), "nic_vma_socket_packets_total", "direction", "rx", "path", "offload")
	}
	first := total()
	if err := pub.Update(helperStats(2)); err != nil { // lower values: a wrap for the same process
		t.Fatal(err)
	}
	if got := total(); got <= first {
		t.Errorf("same process: %v after %v", got, first)
	}
	live.proc.StartTicks = 2 // same pid, new process
	if got := total(); got != 0x200+5 {
		t.Errorf("new process: %v, want its own counters %v", got, 0x200+5)
	}
}

var _ vmastats.Liveness = fixedLiveness{}

// TestVMAFilterSkipsBeforeReading excludes this test process by name:
// its file is neither read nor written.
func TestVMAFilterSkipsBeforeReading(t *testing.T) {
	dir := t.TempDir()
	pub, err := vmastatstest.NewPublisher(dir, os.Getpid(), helperStats(0))
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	comm, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Fatal(err)
	}
	f, err := collector.NewNameFilter("collector.vma.device", "", regexp.QuoteMeta(strings.TrimSpace(string(comm))))
	if err != nil {
		t.Fatal(err)
	}
	c := New(Config{Dirs: []string{dir}, Filter: f}, zap.NewNop())
	text, _, err := poll(t, c)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text, "nic_vma_process_info") || pub.ReaderCounter() != 0 {
		t.Errorf("excluded process was read (reader_counter %d):\n%s", pub.ReaderCounter(), text)
	}
	// Without the filter it is read.
	c = New(Config{Dirs: []string{dir}}, zap.NewNop())
	if text, _, err = poll(t, c); err != nil || !strings.Contains(text, "nic_vma_process_info") || pub.ReaderCounter() != 1 {
		t.Errorf("unfiltered: %v, reader_counter %d", err, pub.ReaderCounter())
	}
}

// TestVMAKeepsTotalsThroughABadPoll makes one poll fail (the file has the
// wrong size for a moment): the totals of closed sockets must survive.
func TestVMAKeepsTotalsThroughABadPoll(t *testing.T) {
	dir := t.TempDir()
	pub, err := vmastatstest.NewPublisher(dir, 4242, helperStats(0))
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	c := New(Config{Dirs: []string{dir}, Settle: time.Nanosecond,
		Liveness: fixedLiveness{vmastats.Process{PID: 4242, Comm: "app", StartTicks: 1}}}, zap.NewNop())
	total := func() (float64, bool) {
		text, _, err := poll(t, c)
		if err != nil {
			t.Fatal(err)
		}
		ss := parseSamples(t, text)
		if get(t, ss, "nic_vma_files", "state", "live") == 0 {
			return 0, false
		}
		return get(t, ss, "nic_vma_socket_packets_total", "direction", "rx", "path", "offload"), true
	}
	total()
	if err := pub.Update(helperStats(1)); err != nil { // socket 11 closes
		t.Fatal(err)
	}
	before, _ := total()
	size, err := os.Stat(pub.Path())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(pub.Path(), size.Size()+1); err != nil {
		t.Fatal(err)
	}
	if _, live := total(); live {
		t.Fatal("a file of the wrong size was read")
	}
	if err := os.Truncate(pub.Path(), size.Size()); err != nil {
		t.Fatal(err)
	}
	after, live := total()
	if !live || after != before || before != 0xFFFFFF00+0x200+100 {
		t.Errorf("totals %v before the bad poll, %v after (live %v)", before, after, live)
	}
}

// TestVMAOneFilePerProcess lists the same process twice: once through
// two names of one directory (a repeated or symlinked --stats-dir), once
// as two files that the process maps in two directories (which a local
// user can arrange for his own process). A process must be exported
// once: two copies of its series would be duplicate samples.
func TestVMAOneFilePerProcess(t *testing.T) {
	for _, tc := range []struct {
		name       string
		dirs       func(t *testing.T) []string
		wantRefuse float64
	}{
		{"aliased directory", func(t *testing.T) []string {
			dir := t.TempDir()
			pub, err := vmastatstest.NewPublisher(dir, os.Getpid(), helperStats(0))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { pub.Close() })
			alias := filepath.Join(t.TempDir(), "alias")
			if err := os.Symlink(dir, alias); err != nil {
				t.Fatal(err)
			}
			return []string{dir, alias, dir + "/"}
		}, 0},
		{"two files", func(t *testing.T) []string {
			var dirs []string
			for i := 0; i < 2; i++ {
				dir := t.TempDir()
				pub, err := vmastatstest.NewPublisher(dir, os.Getpid(), helperStats(i))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { pub.Close() })
				dirs = append(dirs, dir)
			}
			return dirs
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(Config{Dirs: tc.dirs(t), Settle: time.Nanosecond}, zap.NewNop())
			for i := 0; i < 2; i++ {
				text, _, err := poll(t, c)
				if err != nil {
					t.Fatal(err)
				}
				ss := parseSamples(t, text)
				seen := map[string]bool{}
				for _, s := range ss {
					key := fmt.Sprint(s.name, s.labels)
					if seen[key] {
						t.Fatalf("poll %d: duplicate series %s", i, key)
					}
					seen[key] = true
				}
				get(t, ss, "nic_vma_process_info", "pid", strconv.Itoa(os.Getpid()))
				if n := get(t, ss, "nic_vma_files", "state", "live"); n != 1 {
					t.Errorf("poll %d: %v live files, want 1", i, n)
				}
				if n := get(t, ss, "nic_vma_files", "state", "refused"); n != tc.wantRefuse {
					t.Errorf("poll %d: %v refused files, want %v", i, n, tc.wantRefuse)
				}
			}
		})
	}
}

// TestVMANoDuplicateSeriesFromOneFile gives one file two entries that
// map to the same labels: two enabled epoll entries with one epfd (a
// stale entry left enabled when the fd was closed behind libvma's back
// and reused), two multicast entries of one group, and two socket slots
// with one fd and the same addresses (a TCP socket lingering in libvma
// after close while a new socket reuses its fd). Each label set must be
// exported once, as the lowest index.
func TestVMANoDuplicateSeriesFromOneFile(t *testing.T) {
	s := helperStats(0)
	s.Iomux.Epoll = []vmastats.Epoll{
		{Index: 0, FD: 7, IomuxStats: vmastats.IomuxStats{PollHit: 1}},
		{Index: 3, FD: 7, IomuxStats: vmastats.IomuxStats{PollHit: 2}},
	}
	group := netip.MustParseAddr("239.1.1.1")
	s.Multicast = vmastats.Multicast{MaxGroups: 2, Groups: []vmastats.MCGroup{{Index: 0, Sockets: 1, Group: group}, {Index: 1, Sockets: 2, Group: group}}}
	s.Sockets[1].FD = s.Sockets[0].FD
	s.Sockets[1].BoundPort = s.Sockets[0].BoundPort
	s.Sockets[0].MCGroups = []int{0, 1}
	dir := t.TempDir()
	pub, err := vmastatstest.NewPublisher(dir, 4242, s)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	c := New(Config{Dirs: []string{dir}, Settle: time.Nanosecond, PerSocket: true,
		Liveness: fixedLiveness{vmastats.Process{PID: 4242, Comm: "app", StartTicks: 1}}}, zap.NewNop())
	text, _, err := poll(t, c)
	if err != nil {
		t.Fatal(err)
	}
	ss := parseSamples(t, text)
	seen := map[string]bool{}
	for _, s := range ss {
		key := fmt.Sprint(s.name, s.labels)
		if seen[key] {
			t.Errorf("duplicate series %s", key)
		}
		seen[key] = true
	}
	if t.Failed() {
		return
	}
	if got := get(t, ss, "nic_vma_iomux_polls_total", "iomux", "epoll", "epfd", "7", "result", "hit"); got != 1 {
		t.Errorf("epoll fd 7 hits %v, want 1 (entry 0)", got)
	}
	if got := get(t, ss, "nic_vma_multicast_group_sockets", "group", "239.1.1.1"); got != 1 {
		t.Errorf("group sockets %v, want 1 (entry 0)", got)
	}
	if got := get(t, ss, "nic_vma_fd_packets_total", "fd", "10", "direction", "rx", "path", "offload"); got != float64(s.Sockets[0].Counters[vmastats.RxPackets]) {
		t.Errorf("fd 10 rx packets %v, want slot 0's %v", got, s.Sockets[0].Counters[vmastats.RxPackets])
	}
}

// TestVMAReinitializedFileResets re-creates the statistics of a process
// whose pid and start time stay the same, as libvma does when the
// process exec()s: libvma opens the existing vmastat.<pid> again and
// writes a fresh file (reader_counter 0, every counter 0, sockets from
// slot 0). Totals must restart from the new file's counters; taking the
// lower readings for 32-bit wraps would add about 2^32 to each.
func TestVMAReinitializedFileResets(t *testing.T) {
	dir := t.TempDir()
	before := helperStats(0)
	before.Iomux.Poll.PollHit = 1000
	pub, err := vmastatstest.NewPublisher(dir, 4242, before)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	c := New(Config{Dirs: []string{dir}, Settle: time.Nanosecond,
		Liveness: fixedLiveness{vmastats.Process{PID: 4242, Comm: "app", StartTicks: 1}}}, zap.NewNop())
	totals := func() (float64, float64) {
		t.Helper()
		text, _, err := poll(t, c)
		if err != nil {
			t.Fatal(err)
		}
		ss := parseSamples(t, text)
		return get(t, ss, "nic_vma_socket_packets_total", "direction", "rx", "path", "offload"),
			get(t, ss, "nic_vma_iomux_polls_total", "iomux", "poll", "result", "hit")
	}
	totals()
	totals()
	if pub.ReaderCounter() != 2 {
		t.Fatalf("reader_counter %d after two polls", pub.ReaderCounter())
	}
	// The exec'd image's libvma rewrites the same inode from zero.
	after := helperStats(2)
	after.Iomux.Poll.PollHit = 10
	b, err := vmastatstest.Encode(after)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pub.Path(), b, 0o644); err != nil {
		t.Fatal(err)
	}
	rx, hits := totals()
	if rx != 0x200+5 || hits != 10 {
		t.Errorf("after re-initialization: rx packets %v, poll hits %v; want the new file's %v and %v", rx, hits, 0x200+5, 10)
	}
}
