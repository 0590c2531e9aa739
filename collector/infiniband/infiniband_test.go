package infiniband_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/collectortest"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/collector/infiniband"
	"github.com/nic-exporter/nic_exporter/demo"
)

// recordFS serves a fixture tree through os.DirFS, records every name the
// collector touches, and turns files whose content is "!errno NAME" into
// files that fail to read with that errno, like a sysfs attribute whose
// show() fails. before, if set, runs before each access.
type recordFS struct {
	base   fs.FS
	before func(name string)

	mu       sync.Mutex
	accessed map[string]int
	listed   map[string]int // ReadDir only
}

func newRecordFS(root string) *recordFS {
	return &recordFS{base: os.DirFS(root), accessed: make(map[string]int), listed: make(map[string]int)}
}

func (r *recordFS) touch(name string) {
	r.mu.Lock()
	r.accessed[name]++
	r.mu.Unlock()
	if r.before != nil {
		r.before(name)
	}
}

// count returns how often name was accessed.
func (r *recordFS) count(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.accessed[name]
}

// lists returns how often the directory name was listed.
func (r *recordFS) lists(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.listed[name]
}

// touchedBelow returns the accessed names at or below dir.
func (r *recordFS) touchedBelow(dir string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for n := range r.accessed {
		if n == dir || strings.HasPrefix(n, dir+"/") {
			out = append(out, n)
		}
	}
	return out
}

var errnos = map[string]syscall.Errno{
	"EINVAL": syscall.EINVAL, "EIO": syscall.EIO, "EOPNOTSUPP": syscall.EOPNOTSUPP, "EACCES": syscall.EACCES,
}

func (r *recordFS) Open(name string) (fs.File, error) {
	r.touch(name)
	f, err := r.base.Open(name)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil || st.IsDir() || st.Size() > 64 {
		return f, err
	}
	var buf [64]byte
	n, _ := f.Read(buf[:])
	f.Close()
	if e, ok := strings.CutPrefix(strings.TrimSpace(string(buf[:n])), "!errno "); ok {
		return &failingFile{name: name, errno: errnos[e]}, nil
	}
	return r.base.Open(name)
}

func (r *recordFS) ReadDir(name string) ([]fs.DirEntry, error) {
	r.mu.Lock()
	r.listed[name]++
	r.mu.Unlock()
	r.touch(name)
	return fs.ReadDir(r.base, name)
}

func (r *recordFS) Stat(name string) (fs.FileInfo, error) {
	r.touch(name)
	return fs.Stat(r.base, name)
}

func (r *recordFS) ReadLink(name string) (string, error) {
	r.touch(name)
	return fs.ReadLink(r.base, name)
}

func (r *recordFS) Lstat(name string) (fs.FileInfo, error) {
	r.touch(name)
	return fs.Lstat(r.base, name)
}

// failingFile opens but fails every read.
type failingFile struct {
	name  string
	errno syscall.Errno
}

func (f *failingFile) Stat() (fs.FileInfo, error) {
	return nil, &fs.PathError{Op: "stat", Path: f.name, Err: syscall.ENOSYS}
}
func (f *failingFile) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: f.name, Err: f.errno}
}
func (f *failingFile) Close() error { return nil }

// fixture extracts the fixture tree and returns the sysfs root.
func fixture(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "host.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := demo.WriteTree(root, string(data)); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "sys")
}

// ibPoll runs one poll and returns the snapshot and the error.
func ibPoll(t *testing.T, c collector.Collector, errs *collector.SourceErrors) (*exposition.Snapshot, error) {
	t.Helper()
	r := collectortest.Poll(t, c, errs)
	return r.Snapshot, r.Err
}

func reasons(errs *collector.SourceErrors) map[string]uint64 {
	out := make(map[string]uint64)
	for _, rc := range errs.Counts() {
		out[rc.Reason] = rc.Count
	}
	return out
}

func newIB(t *testing.T, sysfs string, fsys fs.FS, include, exclude string) collector.Collector {
	t.Helper()
	f, err := collector.NewNameFilter("collector.infiniband.device", include, exclude)
	if err != nil {
		t.Fatal(err)
	}
	return infiniband.New(infiniband.Config{SysfsPath: sysfs, Filter: f, FS: fsys}, zap.NewNop())
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	collectortest.Golden(t, filepath.Join("testdata", name), got)
}

// TestInfiniBandFixture checks the scrape of the fixture host against the
// golden file, and that the unreadable files were counted by reason while
// the rest of their devices was exported.
func TestInfiniBandFixture(t *testing.T) {
	sysfs := fixture(t)
	errs := collector.NewSourceErrors(zap.NewNop(), time.Hour)
	snap, err := ibPoll(t, newIB(t, sysfs, newRecordFS(sysfs), "", ""), errs)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "host.golden", snap.String())
	if snap.Devices() != 4 {
		t.Errorf("devices = %d, want 4", snap.Devices())
	}
	// mlx5_2: port_rcv_errors EINVAL, out_of_buffer EIO (its rate EINVAL
	// is the disabled link's state, not an error); mlx4_0: 17 counters on
	// each of 2 ports say "N/A (no PMA)".
	want := map[string]uint64{"einval": 1, "eio": 1, "eopnotsupp": 34}
	if got := reasons(errs); !equalCounts(got, want) {
		t.Errorf("source errors by reason = %v, want %v", got, want)
	}
	out := snap.String()
	for _, s := range []string{
		// The rest of mlx5_2 is still there.
		`nic_infiniband_port_symbol_error_total{device="mlx5_2",port="1"} 0`,
		`nic_infiniband_port_phys_state{device="mlx5_2",port="1"} 3`,
		`nic_infiniband_hw_rnr_nak_retry_err_total{device="mlx5_2",port="1"} 0`,
		// Device-level hw_counters of a switchdev-mode mlx5 device.
		`nic_infiniband_hw_rp_cnp_handled_total{device="mlx5_1",port="0"} 43304`,
		// and the state of the VF without a PMA.
		`nic_infiniband_port_state{device="mlx4_0",port="2"} 4`,
		`nic_infiniband_port_netdev_info{device="mlx4_0",port="2",netdev="ib1"} 1`,
	} {
		if !strings.Contains(out, s+"\n") {
			t.Errorf("scrape lacks %s", s)
		}
	}
	for _, s := range []string{
		`nic_infiniband_port_rcv_errors_total{device="mlx5_2"`,
		`nic_infiniband_hw_out_of_buffer_total{device="mlx5_2"`,
		`nic_infiniband_port_rate_bytes_per_second{device="mlx5_2"`,
		`{device="mlx4_0",port="1"} 0`, // no counter of the VF
		`lifespan`,
	} {
		if strings.Contains(out, s) {
			t.Errorf("scrape has %s, want it dropped", s)
		}
	}
}

func equalCounts(a, b map[string]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestInfiniBandRemembersUnsupported checks that counter files answering
// EINVAL, EIO or "N/A (no PMA)" are read once (a restricted ConnectX-7 PF
// answers EIO or EINVAL to every counter read and logs each failure to the
// kernel log), while files that read fine are read on every poll.
func TestInfiniBandRemembersUnsupported(t *testing.T) {
	sysfs := fixture(t)
	rfs := newRecordFS(sysfs)
	c := newIB(t, sysfs, rfs, "", "")
	errs := collector.NewSourceErrors(zap.NewNop(), time.Hour)
	for i := 0; i < 3; i++ {
		if _, err := ibPoll(t, c, errs); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		file string
		want int
	}{
		{"class/infiniband/mlx5_2/ports/1/counters/port_rcv_errors", 1},
		{"class/infiniband/mlx4_0/ports/1/counters/port_rcv_data", 1},
		{"class/infiniband/mlx4_0/ports/2/counters/symbol_error", 1},
		{"class/infiniband/mlx5_2/ports/1/hw_counters/out_of_buffer", 1},
		{"class/infiniband/mlx5_2/ports/1/counters/symbol_error", 3},
		{"class/infiniband/mlx5_2/ports/1/hw_counters/lifespan", 0},
	} {
		if got := rfs.count(tc.file); got != tc.want {
			t.Errorf("%s opened %d times in 3 polls, want %d", tc.file, got, tc.want)
		}
	}
	want := map[string]uint64{"einval": 1, "eio": 1, "eopnotsupp": 34}
	if got := reasons(errs); !equalCounts(got, want) {
		t.Errorf("source errors by reason after 3 polls = %v, want %v", got, want)
	}
}

// TestInfiniBandFilterBeforeOpen checks that nothing below an excluded
// device is opened, listed, stat'ed or resolved, and that the included
// devices are exported.
func TestInfiniBandFilterBeforeOpen(t *testing.T) {
	all := []string{"mlx4_0", "mlx5_0", "mlx5_1", "mlx5_2"}
	for _, tc := range []struct {
		name, include, exclude string
		want                   []string
	}{
		{"exclude one", "", "mlx5_2", []string{"mlx4_0", "mlx5_0", "mlx5_1"}},
		{"exclude a pattern", "", "mlx4_.*|mlx5_1", []string{"mlx5_0", "mlx5_2"}},
		{"include one", "mlx5_0", "", []string{"mlx5_0"}},
		{"include and exclude", "mlx5_.*", "mlx5_0", []string{"mlx5_1", "mlx5_2"}},
		{"anchored", "mlx5", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sysfs := fixture(t)
			rfs := newRecordFS(sysfs)
			snap, err := ibPoll(t, newIB(t, sysfs, rfs, tc.include, tc.exclude), collector.NewSourceErrors(zap.NewNop(), time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			out := snap.String()
			for _, dev := range all {
				included := contains(tc.want, dev)
				touched := rfs.touchedBelow("class/infiniband/" + dev)
				if !included && len(touched) > 0 {
					t.Errorf("excluded device %s was accessed: %v", dev, touched)
				}
				exported := strings.Contains(out, `nic_infiniband_info{device="`+dev+`"`)
				if exported != included {
					t.Errorf("device %s exported = %v, want %v", dev, exported, included)
				}
			}
			if snap.Devices() != len(tc.want) {
				t.Errorf("devices = %d, want %d", snap.Devices(), len(tc.want))
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestInfiniBandVanishing removes a device, or one port, while the poll
// reads it: the poll succeeds, the rest is exported, nothing is counted as
// a source error.
func TestInfiniBandVanishing(t *testing.T) {
	for _, tc := range []struct {
		name     string
		trigger  string // access that removes victim first
		victim   string // relative to the sysfs root
		absent   string // a series prefix that must be gone
		present  []string
		wantDevs int
	}{
		{
			name:     "device",
			trigger:  "class/infiniband/mlx5_1/ports/1/counters",
			victim:   "devices/pci0000:00/0000:00:02.0/0000:1b:00.0/infiniband/mlx5_1",
			absent:   `{device="mlx5_1"`,
			present:  []string{`nic_infiniband_info{device="mlx5_0"`, `nic_infiniband_info{device="mlx5_2"`},
			wantDevs: 3,
		},
		{
			name:     "port",
			trigger:  "class/infiniband/mlx4_0/ports/2/state",
			victim:   "devices/pci0000:00/0000:00:02.0/0000:3b:00.1/infiniband/mlx4_0/ports/2",
			absent:   `{device="mlx4_0",port="2"`,
			present:  []string{`nic_infiniband_port_state{device="mlx4_0",port="1"} 4`},
			wantDevs: 4,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sysfs := fixture(t)
			rfs := newRecordFS(sysfs)
			rfs.before = func(name string) {
				if name == tc.trigger {
					if err := os.RemoveAll(filepath.Join(sysfs, tc.victim)); err != nil {
						t.Error(err)
					}
				}
			}
			errs := collector.NewSourceErrors(zap.NewNop(), time.Hour)
			snap, err := ibPoll(t, newIB(t, sysfs, rfs, "", ""), errs)
			if err != nil {
				t.Fatalf("poll failed: %v", err)
			}
			if rfs.count(tc.trigger) == 0 {
				t.Fatalf("the poll never reached %s", tc.trigger)
			}
			out := snap.String()
			if strings.Contains(out, tc.absent) {
				t.Errorf("scrape still has %s", tc.absent)
			}
			for _, s := range tc.present {
				if !strings.Contains(out, s) {
					t.Errorf("scrape lacks %s", s)
				}
			}
			if snap.Devices() != tc.wantDevs {
				t.Errorf("devices = %d, want %d", snap.Devices(), tc.wantDevs)
			}
			// The fixture's own bad files are the only errors.
			want := map[string]uint64{"einval": 1, "eio": 1, "eopnotsupp": 34}
			if tc.name == "port" {
				want["eopnotsupp"] = 17
			}
			if got := reasons(errs); !equalCounts(got, want) {
				t.Errorf("source errors = %v, want %v", got, want)
			}
		})
	}
}

// TestInfiniBandNoSource checks that a host without /sys/class/infiniband
// has nothing to collect, and that an empty class is zero devices.
func TestInfiniBandNoSource(t *testing.T) {
	root := t.TempDir()
	c := newIB(t, root, nil, "", "")
	_, err := ibPoll(t, c, nil)
	if !errors.Is(err, collector.ErrNoSource) {
		t.Fatalf("Update without /sys/class/infiniband = %v, want ErrNoSource", err)
	}
	if err := os.MkdirAll(filepath.Join(root, "class", "infiniband"), 0o755); err != nil {
		t.Fatal(err)
	}
	snap, err := ibPoll(t, c, nil)
	if err != nil || snap.Series() != 0 || snap.Devices() != 0 {
		t.Fatalf("empty class: err %v, %d series, %d devices; want nil, 0, 0", err, snap.Series(), snap.Devices())
	}
}

// TestInfiniBandDemo runs the collector against the demo host through the
// ib_link_down fault and checks the states it exports.
func TestInfiniBandDemo(t *testing.T) {
	for _, tc := range []struct {
		at               time.Duration
		state, physState string
	}{
		{50 * time.Second, "4", "5"},
		{70 * time.Second, "1", "2"},  // Polling
		{190 * time.Second, "1", "6"}, // LinkErrorRecovery
		{197 * time.Second, "2", "5"}, // LinkUp, waiting for the SM
		{210 * time.Second, "4", "5"},
	} {
		h, err := demo.New(demo.Config{Faults: "ib_link_down@1m,rnr_retry@1m", Elapsed: tc.at}, zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		snap, err := ibPoll(t, newIB(t, h.SysfsPath(), nil, "", ""), collector.NewSourceErrors(zap.NewNop(), time.Hour))
		h.Close()
		if err != nil {
			t.Fatal(err)
		}
		out := snap.String()
		for _, s := range []string{
			`nic_infiniband_port_state{device="mlx5_0",port="1"} ` + tc.state,
			`nic_infiniband_port_phys_state{device="mlx5_0",port="1"} ` + tc.physState,
			`nic_infiniband_port_netdev_info{device="mlx5_0",port="1",netdev="ibp8s0f0"} 1`,
			`nic_infiniband_port_netdev_info{device="mlx5_1",port="1",netdev="enp8s0f1np1"} 1`,
			`nic_infiniband_port_rate_bytes_per_second{device="mlx5_0",port="1"} 50000000000`,
			`nic_infiniband_info{device="mlx5_0",hca_type="MT4129",board_id="MT_0000000838",firmware_version="28.45.4028",node_guid="fc4c:ea03:00f9:4234",pci_address="0000:08:00.0"} 1`,
		} {
			if !strings.Contains(out, s+"\n") {
				t.Errorf("at %v: scrape lacks %s", tc.at, s)
			}
		}
		if tc.at > time.Minute && strings.Contains(out, `nic_infiniband_hw_rnr_nak_retry_err_total{device="mlx5_0",port="1"} 3`+"\n") {
			t.Errorf("at %v: rnr_nak_retry_err did not grow during rnr_retry", tc.at)
		}
	}
}

// BenchmarkInfiniBandPoll measures one poll of the fixture host (four
// devices, five ports, about 150 series) on the real file system, the way the
// collector reads /sys.
func BenchmarkInfiniBandPoll(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("testdata", "host.txtar"))
	if err != nil {
		b.Fatal(err)
	}
	root := b.TempDir()
	if err := demo.WriteTree(root, string(data)); err != nil {
		b.Fatal(err)
	}
	// Without the test file system the error markers would be content;
	// drop those files instead.
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		if b, err := os.ReadFile(p); err == nil && strings.HasPrefix(string(b), "!errno ") {
			return os.Remove(p)
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	f, _ := collector.NewNameFilter("collector.infiniband.device", "", "")
	c := infiniband.New(infiniband.Config{SysfsPath: filepath.Join(root, "sys"), Filter: f}, zap.NewNop())
	errs := collector.NewSourceErrors(zap.NewNop(), time.Hour)
	bld := exposition.NewBuilder()
	b.ReportAllocs()
	for b.Loop() {
		bld.Reset()
		if err := c.Update(context.Background(), collector.NewPoll(bld, errs)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(bld.Series()), "series")
}

// TestInfiniBandDemoErrors checks the demo's error faults: symbol errors
// saturate at the 16-bit maximum of the IBA counter, and rnr_retry moves
// the RNR counters of the same port.
func TestInfiniBandDemoErrors(t *testing.T) {
	h, err := demo.New(demo.Config{Faults: "ib_symbol_errors@0s,rnr_retry@30m", Elapsed: time.Hour}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	snap, err := ibPoll(t, newIB(t, h.SysfsPath(), nil, "mlx5_0", ""), collector.NewSourceErrors(zap.NewNop(), time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	out := snap.String()
	for _, s := range []string{
		`nic_infiniband_port_symbol_error_total{device="mlx5_0",port="1"} 65535`,
		`nic_infiniband_port_local_link_integrity_errors_total{device="mlx5_0",port="1"} 15`,
		`nic_infiniband_port_rcv_errors_total{device="mlx5_0",port="1"} 10800`,
		`nic_infiniband_hw_rnr_nak_retry_err_total{device="mlx5_0",port="1"} 450003`,
		`nic_infiniband_hw_req_rnr_retries_exceeded_total{device="mlx5_0",port="1"} 900`,
		`nic_infiniband_hw_req_cqe_error_total{device="mlx5_0",port="1"} 905`,
	} {
		if !strings.Contains(out, s+"\n") {
			t.Errorf("scrape lacks %s", s)
		}
	}
}
