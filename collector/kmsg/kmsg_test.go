package kmsg

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/collectortest"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/internal/errclass"
	"github.com/nic-exporter/nic_exporter/internal/logrules"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

func TestParseKmsgRecord(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want kmsgRecord
		bad  bool
	}{
		{
			name: "kernel device record with dictionary",
			in:   "3,1208,3204021374,-;mlx5_core 0000:08:00.0: poll_health:801:(pid 0): device's health compromised - reached miss count\n SUBSYSTEM=pci\n DEVICE=+pci:0000:08:00.0\n",
			want: kmsgRecord{Level: 3, Facility: 0, Seq: 1208, Since: 3204021374 * time.Microsecond, Flag: '-',
				Message:   "mlx5_core 0000:08:00.0: poll_health:801:(pid 0): device's health compromised - reached miss count",
				Subsystem: "pci", Device: "+pci:0000:08:00.0"},
		},
		{
			name: "user space write, from this machine",
			in:   "12,341,753288339,-;nic_exporter probe 8649\n",
			want: kmsgRecord{Level: 4, Facility: 1, Seq: 341, Since: 753288339 * time.Microsecond, Flag: '-', Message: "nic_exporter probe 8649"},
		},
		{
			name: "continuation fragment and extra header fields",
			in:   "6,17,100,c,caller=T1;first part",
			want: kmsgRecord{Level: 6, Seq: 17, Since: 100 * time.Microsecond, Flag: 'c', Message: "first part"},
		},
		{
			name: "no flags field",
			in:   "6,18,100;old kernel",
			want: kmsgRecord{Level: 6, Seq: 18, Since: 100 * time.Microsecond, Flag: '-', Message: "old kernel"},
		},
		{
			name: "message with a semicolon and escapes",
			in:   `4,19,5,-;a;b\x0ac` + "\n",
			want: kmsgRecord{Level: 4, Seq: 19, Since: 5 * time.Microsecond, Flag: '-', Message: `a;b\x0ac`},
		},
		{name: "no semicolon", in: "6,1,2,-", bad: true},
		{name: "short header", in: "6,1;x", bad: true},
		{name: "bad priority", in: "x,1,2,-;x", bad: true},
		{name: "bad sequence", in: "6,-1,2,-;x", bad: true},
		{name: "bad timestamp", in: "6,1,2x,-;x", bad: true},
		{name: "timestamp overflow", in: "6,1,99999999999999999999,-;x", bad: true},
		{name: "empty", in: "", bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseKmsgRecord([]byte(tc.in))
			if tc.bad {
				if err == nil || errclass.Reason(err) != "parse" {
					t.Fatalf("got %+v, %v; want a parse error", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// FuzzParseKmsgRecord checks that no input panics the parser and that a
// parsed message is part of the input.
func FuzzParseKmsgRecord(f *testing.F) {
	f.Add([]byte("3,1208,3204021374,-;mlx5_core 0000:08:00.0: x\n SUBSYSTEM=pci\n DEVICE=+pci:0000:08:00.0\n"))
	f.Add([]byte("12,341,753288339,-;nic_exporter probe 8649\n"))
	f.Add([]byte("6,17,100,c,caller=T1;first part"))
	f.Add([]byte("6,1;x"))
	f.Add([]byte(";\n =\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := parseKmsgRecord(b)
		if err != nil {
			return
		}
		if !strings.Contains(string(b), r.Message) || r.Level > 7 || r.Since < 0 {
			t.Errorf("inconsistent record %+v from %q", r, b)
		}
	})
}

// fakeKmsg is a kernel log for tests: records, EPIPE markers (nil) and a
// Read that blocks at the end until Close.
type fakeKmsg struct {
	mu      sync.Mutex
	cond    *sync.Cond
	records [][]byte
	pos     int
	closed  bool
	failAt  int // return a non-EPIPE error when pos reaches it (if > 0)
}

func newFakeKmsg(records ...string) *fakeKmsg {
	f := &fakeKmsg{}
	f.cond = sync.NewCond(&f.mu)
	for _, r := range records {
		f.add(r)
	}
	return f
}

// add appends a record; "EPIPE" stands for an overrun.
func (f *fakeKmsg) add(r string) {
	f.mu.Lock()
	if r == "EPIPE" {
		f.records = append(f.records, nil)
	} else {
		f.records = append(f.records, []byte(r))
	}
	f.mu.Unlock()
	f.cond.Broadcast()
}

func (f *fakeKmsg) Read(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failAt > 0 && f.pos == f.failAt {
		f.failAt = 0
		return 0, syscall.EIO
	}
	for !f.closed && f.pos >= len(f.records) {
		f.cond.Wait()
	}
	if f.closed {
		return 0, os.ErrClosed
	}
	r := f.records[f.pos]
	f.pos++
	if r == nil {
		return 0, &fs.PathError{Op: "read", Path: "fake", Err: syscall.EPIPE}
	}
	return copy(p, r), nil
}

func (f *fakeKmsg) Pending() (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pos < len(f.records), nil
}

func (f *fakeKmsg) SeekEnd() error {
	f.mu.Lock()
	f.pos = len(f.records)
	f.mu.Unlock()
	return nil
}

func (f *fakeKmsg) Close() error {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	f.cond.Broadcast()
	return nil
}

func kernelEngine(t testing.TB) *logrules.Engine {
	t.Helper()
	e, err := logrules.Compile(logrules.KernelRules())
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func pollText(t *testing.T, c collector.Collector) string {
	t.Helper()
	out, err := tryPoll(t, c)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func tryPoll(t testing.TB, c collector.Collector) (string, error) {
	t.Helper()
	r := collectortest.Poll(t, c, nil)
	return r.Text, r.Err
}

// waitFor polls the collector until every want line is in its output.
// Only the content is asserted; the generous limit just bounds a hang.
func waitFor(t *testing.T, c collector.Collector, want ...string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, err := tryPoll(t, c)
		missing := ""
		if err != nil {
			missing = err.Error()
		}
		for _, w := range want {
			if !strings.Contains(out, w+"\n") {
				missing = w
				break
			}
		}
		if missing == "" {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("missing %q in:\n%s", missing, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func runWatch(t *testing.T, k *Collector) (published *int32mu, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	published = &int32mu{}
	done := make(chan error, 1)
	go func() {
		done <- k.Watch(ctx, func(render func(p *collector.Poll)) {
			b := exposition.NewBuilder()
			render(collector.NewPoll(b, nil))
			published.add()
		})
	}()
	return published, func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Watch returned %v after cancel; want context.Canceled", err)
		}
	}
}

type int32mu struct {
	mu sync.Mutex
	n  int
}

func (c *int32mu) add() { c.mu.Lock(); c.n++; c.mu.Unlock() }
func (c *int32mu) get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func TestKmsgFake(t *testing.T) {
	dev := newFakeKmsg(
		"3,10,1000000,-;mlx5_core 0000:08:00.0: poll_health:801:(pid 0): device's health compromised - reached miss count\n SUBSYSTEM=pci\n DEVICE=+pci:0000:08:00.0\n",
		"6,11,1100000,-;EXT4-fs (vda): mounted filesystem",
		"EPIPE",
		"3,15,2000000,-;ena 0000:00:05.0 ens5: Keep alive watchdog timeout.",
		"3,16,3000000,-;ena 0000:00:05.0 ens5: Keep alive watchdog timeout.",
		"garbage without header",
		// The PCI address comes from the dictionary when the text has none.
		"3,17,4000000,-;command failed, status bad resource state(0x9), syndrome 0x5b8f32\n SUBSYSTEM=pci\n DEVICE=+pci:0000:08:00.1\n",
		// Excluded device.
		"3,18,5000000,-;mlx5_core 0000:09:00.0: poll_health:801:(pid 0): Fatal error 1 detected",
	)
	filter, err := collector.NewNameFilter("collector.kmsg.device", "", "0000:09:.*")
	if err != nil {
		t.Fatal(err)
	}
	boot := time.Unix(1700000000, 0)
	k := New(Config{
		Open: func() (Device, error) { return dev, nil }, Rules: kernelEngine(t),
		Replay: true, Filter: filter, BootTime: boot, PublishInterval: 10 * time.Millisecond,
	}, zap.NewNop())
	published, stop := runWatch(t, k)
	out := waitFor(t, k,
		`nic_kernel_log_events_total{driver="mlx5_core",device="0000:08:00.0",event="mlx5_health_compromised"} 1`,
		`nic_kernel_log_events_total{driver="ena",device="ens5",event="ena_keep_alive_timeout"} 2`,
		`nic_kernel_log_events_total{driver="mlx5_core",device="0000:08:00.1",event="mlx5_cmd_bad_resource_state"} 1`,
		`nic_kernel_log_last_event_timestamp_seconds{driver="ena",device="ens5",event="ena_keep_alive_timeout"} 1700000003`,
		`nic_kernel_log_records_total 6`,
		`nic_kernel_log_overruns_total 1`,
		`nic_kernel_log_unparsable_records_total 1`,
	)
	if strings.Contains(out, "0000:09:00.0") {
		t.Errorf("excluded device counted:\n%s", out)
	}
	// More records arrive after the start and are published between polls.
	before := published.get()
	dev.add("3,19,6000000,-;ena 0000:00:05.0 ens5: Keep alive watchdog timeout.")
	waitFor(t, k, `nic_kernel_log_events_total{driver="ena",device="ens5",event="ena_keep_alive_timeout"} 3`)
	for published.get() == before {
		time.Sleep(10 * time.Millisecond)
	}
	stop()
}

// TestKmsgReopen checks that a read error makes Watch fail, the next
// Watch reopens the device and records already counted are not counted
// again.
func TestKmsgReopen(t *testing.T) {
	records := []string{
		"3,1,1,-;ena 0000:00:05.0 ens5: Trigger reset is on",
		"3,2,2,-;ena 0000:00:05.0 ens5: Trigger reset is on",
	}
	first := newFakeKmsg(records...)
	first.failAt = 2
	opens := 0
	k := New(Config{
		Open: func() (Device, error) {
			opens++
			if opens == 1 {
				return first, nil
			}
			return newFakeKmsg(append(records, "3,3,3,-;ena 0000:00:05.0 ens5: Trigger reset is on")...), nil
		},
		Rules: kernelEngine(t), Replay: true,
	}, zap.NewNop())
	err := k.Watch(context.Background(), func(func(*collector.Poll)) {})
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("Watch returned %v, want EIO", err)
	}
	// The next poll reopens the device and counts only the new record.
	waitFor(t, k, `nic_kernel_log_events_total{driver="ena",device="ens5",event="ena_reset_triggered"} 3`)
	_, stop := runWatch(t, k)
	stop()
	if opens != 2 {
		t.Errorf("%d opens, want 2", opens)
	}
}

func TestKmsgNoReplay(t *testing.T) {
	dev := newFakeKmsg("3,1,1,-;ena 0000:00:05.0 ens5: Trigger reset is on")
	k := New(Config{Open: func() (Device, error) { return dev, nil }, Rules: kernelEngine(t)}, zap.NewNop())
	pollText(t, k) // opens the device and skips what is in it
	_, stop := runWatch(t, k)
	dev.add("3,2,2,-;ena 0000:00:05.0 ens5: Reg read32 timeout occurred")
	out := waitFor(t, k, `nic_kernel_log_events_total{driver="ena",device="ens5",event="ena_reset_reg_read_timeout"} 1`)
	stop()
	if strings.Contains(out, "ena_reset_triggered") {
		t.Errorf("a record from before the start was counted without replay:\n%s", out)
	}
}

func TestKmsgOpenErrors(t *testing.T) {
	perm := New(Config{
		Open: func() (Device, error) {
			return nil, &fs.PathError{Op: "open", Path: "/dev/kmsg", Err: syscall.EPERM}
		},
		Rules: kernelEngine(t),
	}, zap.NewNop())
	err := perm.Update(context.Background(), collector.NewPoll(exposition.NewBuilder(), nil))
	if err == nil || errors.Is(err, collector.ErrNoSource) || !strings.Contains(err.Error(), "CAP_SYSLOG") {
		t.Errorf("permission denied: Update returned %v; want an error naming CAP_SYSLOG", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := perm.Watch(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("permission denied: Watch returned %v; want it to wait for the end", err)
	}

	absent := New(Config{
		Open: func() (Device, error) {
			return nil, &fs.PathError{Op: "open", Path: "/dev/kmsg", Err: syscall.ENOENT}
		},
		Rules: kernelEngine(t),
	}, zap.NewNop())
	if err := absent.Update(context.Background(), collector.NewPoll(exposition.NewBuilder(), nil)); !errors.Is(err, collector.ErrNoSource) {
		t.Errorf("absent device: Update returned %v; want collector.ErrNoSource", err)
	}
	if err := absent.Watch(context.Background(), nil); !errors.Is(err, collector.ErrNoSource) {
		t.Errorf("absent device: Watch returned %v; want collector.ErrNoSource", err)
	}
}

func TestKmsgMaxSeries(t *testing.T) {
	var recs []string
	for i := range 5 {
		recs = append(recs, fmt.Sprintf("3,%d,1,-;ena 0000:00:05.0 eth%d: Trigger reset is on", i+1, i))
	}
	dev := newFakeKmsg(recs...)
	k := New(Config{Open: func() (Device, error) { return dev, nil }, Rules: kernelEngine(t), Replay: true, MaxSeries: 3}, zap.NewNop())
	_, stop := runWatch(t, k)
	out := waitFor(t, k, `nic_kernel_log_dropped_events_total 2`, `nic_kernel_log_records_total 5`)
	stop()
	if n := strings.Count(out, "nic_kernel_log_events_total{"); n != 3 {
		t.Errorf("%d event series, want the limit 3:\n%s", n, out)
	}
}

// BenchmarkKmsgRecord measures the cost per kernel log line: parsing the
// record and matching it against the built-in table.
func BenchmarkKmsgRecord(b *testing.B) {
	k := New(Config{Rules: kernelEngine(b), Replay: true}, zap.NewNop())
	lines := [][]byte{
		[]byte("6,1,1,-;EXT4-fs (nvme0n1p1): mounted filesystem with ordered data mode. Quota mode: none.\n"),
		[]byte("6,2,1,-;usb 1-1: new high-speed USB device number 2 using xhci_hcd\n"),
		[]byte("6,3,1,-;mlx5_core 0000:08:00.0: firmware version: 28.39.1002\n SUBSYSTEM=pci\n DEVICE=+pci:0000:08:00.0\n"),
		[]byte("3,4,1,-;ena 0000:00:05.0 ens5: Keep alive watchdog timeout.\n"),
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, l := range lines {
			k.record(l)
		}
		// Forget the sequence numbers so the same records count again.
		k.mu.Lock()
		k.lastSeq, k.haveSeq = 0, false
		k.mu.Unlock()
	}
	b.ReportMetric(float64(b.N*len(lines))/b.Elapsed().Seconds(), "lines/s")
}

// TestKmsgPermissionRunner checks what an operator sees when the exporter
// lacks CAP_SYSLOG: the collector is down, and the cause is logged once,
// however many polls fail.
func TestKmsgPermissionRunner(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	k := New(Config{
		Open: func() (Device, error) {
			return nil, &fs.PathError{Op: "open", Path: "/dev/kmsg", Err: syscall.EPERM}
		},
		Rules: kernelEngine(t),
	}, zap.New(core))
	r := collector.NewRunner(k, collector.RunnerConfig{Interval: time.Hour, Timeout: time.Second}, zap.New(core))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	for r.Status().Polls == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	r.PollOnce(ctx)
	r.PollOnce(ctx)
	cancel()
	<-done
	st := r.Status()
	if st.Up || st.Failures != 3 {
		t.Errorf("status %+v; want down after 3 failed polls", st)
	}
	var lines []string
	for _, e := range logs.All() {
		lines = append(lines, e.Message+" "+fmt.Sprint(e.ContextMap()))
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "CAP_SYSLOG") {
		t.Errorf("log lines %q; want one naming CAP_SYSLOG", lines)
	}
}

// TestKmsgRealNoPrivilege opens the real /dev/kmsg as an unprivileged user
// (uid 65534, in a child process). With kernel.dmesg_restrict=1 (this
// machine's setting) the collector must fail with the CAP_SYSLOG error;
// with 0 the kernel lets anyone read the log and it must work.
func TestKmsgRealNoPrivilege(t *testing.T) {
	if os.Getenv("NIC_EXPORTER_KMSG_CHILD") == "1" {
		k := New(Config{Open: OpenDevKmsg("/dev/kmsg"), Rules: kernelEngine(t)}, zap.NewNop())
		err := k.Update(context.Background(), collector.NewPoll(exposition.NewBuilder(), nil))
		fmt.Printf("UPDATE-ERROR: %v\n", err)
		return
	}
	testenv.Root(t)
	restrict, err := os.ReadFile("/proc/sys/kernel/dmesg_restrict")
	if err != nil {
		t.Fatal(err)
	}
	restricted := strings.TrimSpace(string(restrict)) == "1"

	// The test binary must be executable by the unprivileged user.
	dir := t.TempDir()
	for d := dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	child := filepath.Join(dir, "kmsg.test")
	if err := os.WriteFile(child, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(child, "-test.run=^TestKmsgRealNoPrivilege$", "-test.count=1")
	cmd.Env = append(os.Environ(), "NIC_EXPORTER_KMSG_CHILD=1")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	switch {
	case restricted && (!strings.Contains(string(out), "UPDATE-ERROR: reading the kernel log needs CAP_SYSLOG") ||
		!strings.Contains(string(out), "operation not permitted")):
		t.Errorf("unprivileged child with dmesg_restrict=1:\n%s\nwant the CAP_SYSLOG error with EPERM", out)
	case !restricted && !strings.Contains(string(out), "UPDATE-ERROR: <nil>"):
		t.Errorf("unprivileged child with dmesg_restrict=0:\n%s\nwant no error", out)
	}
}
