package devlinkhealth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/collectortest"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/devlink"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// fakeDevlink is a Source with fixed content that records every
// request reaching a device.
type fakeDevlink struct {
	devices   []devlink.Device
	ports     []devlink.Port
	reporters []devlink.HealthReporter
	infos     map[devlink.Handle]devlink.Info
	infoErr   map[devlink.Handle]error
	dumpErr   error // for the Devices, Ports and HealthReporters dumps
	events    chan devlink.Event

	mu    sync.Mutex
	calls []string
}

func (f *fakeDevlink) record(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, s)
}

func (f *fakeDevlink) Devices(context.Context) ([]devlink.Device, error) {
	return f.devices, f.dumpErr
}

func (f *fakeDevlink) Ports(context.Context) ([]devlink.Port, error) { return f.ports, f.dumpErr }

func (f *fakeDevlink) HealthReporters(context.Context) ([]devlink.HealthReporter, error) {
	return f.reporters, f.dumpErr
}

func (f *fakeDevlink) Info(_ context.Context, h devlink.Handle) (devlink.Info, error) {
	f.record("info " + h.String())
	if err := f.infoErr[h]; err != nil {
		return devlink.Info{}, err
	}
	return f.infos[h], nil
}

func (f *fakeDevlink) Diagnose(_ context.Context, id devlink.ReporterID) (devlink.Object, error) {
	f.record("diagnose " + id.String())
	return devlink.Object{{Name: "Syndrome", Value: uint8(1)}}, nil
}

func (f *fakeDevlink) Dump(_ context.Context, id devlink.ReporterID) (devlink.Object, error) {
	f.record("dump " + id.String())
	return nil, fmt.Errorf("dumping: %w", syscall.EOPNOTSUPP)
}

func (f *fakeDevlink) Watch(ctx context.Context, fn func(devlink.Event)) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev := <-f.events:
			fn(ev)
		}
	}
}

func (f *fakeDevlink) Close() error { return nil }

func devlinkPtr[T any](v T) *T { return &v }

var (
	cx7IB  = devlink.Handle{Bus: "pci", Device: "0000:08:00.0"}
	cx7Eth = devlink.Handle{Bus: "pci", Device: "0000:08:00.1"}
)

func devlinkReporter(h devlink.Handle, port *uint32, name string, state devlink.HealthState, errs, recovers uint64) devlink.HealthReporter {
	return devlink.HealthReporter{
		ReporterID:   devlink.ReporterID{Handle: h, Port: port, Name: name},
		State:        &state,
		ErrorCount:   &errs,
		RecoverCount: &recovers,
	}
}

// newFake returns the two ConnectX-7 functions with mlx5's reporters.
func newDevlinkFake() *fakeDevlink {
	port := uint32(131071)
	fatal := devlinkReporter(cx7Eth, nil, "fw_fatal", devlink.HealthStateError, 2, 1)
	fatal.GracefulPeriod = devlinkPtr(60 * time.Second)
	fatal.AutoRecover = devlinkPtr(true)
	fatal.LastDump = devlinkPtr(time.Unix(1700000000, 500_000_000))
	tx := devlinkReporter(cx7Eth, &port, "tx", devlink.HealthStateHealthy, 0, 0)
	tx.GracefulPeriod = devlinkPtr(500 * time.Millisecond)
	tx.AutoRecover = devlinkPtr(false)
	fw := []devlink.Version{{Name: "fw.version", Value: "28.45.4028"}}
	return &fakeDevlink{
		devices: []devlink.Device{{Handle: cx7IB}, {Handle: cx7Eth}},
		ports: []devlink.Port{
			{Handle: cx7IB, Index: 65535, IBDev: "mlx5_0"},
			{Handle: cx7Eth, Index: port, Netdev: "enp8s0f1np1"},
		},
		reporters: []devlink.HealthReporter{
			devlinkReporter(cx7IB, nil, "fw", devlink.HealthStateHealthy, 0, 0),
			devlinkReporter(cx7Eth, nil, "fw", devlink.HealthStateHealthy, 0, 0),
			fatal, tx,
			{ReporterID: devlink.ReporterID{Handle: cx7Eth, Name: "vnic"}}, // no attributes at all
		},
		infos: map[devlink.Handle]devlink.Info{
			cx7IB:  {Handle: cx7IB, Driver: "mlx5_core", SerialNumber: "MT2347X01938", Fixed: []devlink.Version{{Name: "fw.psid", Value: "MT_0000000838"}}, Running: fw, Stored: fw},
			cx7Eth: {Handle: cx7Eth, Driver: "mlx5_core", BoardSerialNumber: "MT2347X01938", Fixed: []devlink.Version{{Name: "board.id", Value: "MT_0000000838"}}, Running: []devlink.Version{{Name: "fw", Value: "28.45.4028"}}},
		},
		events: make(chan devlink.Event),
	}
}

func newTestDevlink(t *testing.T, f *fakeDevlink, filter collector.NameFilter, captureDir string) *Collector {
	t.Helper()
	return New(Config{
		Open:    func() (Source, error) { return f, nil },
		Filter:  filter,
		Capture: CaptureConfig{Dir: captureDir},
	}, zap.NewNop())
}

func pollDevlink(t *testing.T, c collector.Collector) (string, []collector.ReasonCount, error) {
	t.Helper()
	r := collectortest.Poll(t, c, collector.NewSourceErrors(zap.NewNop(), time.Minute))
	return r.Text, r.Errors.Counts(), r.Err
}

// samples returns the sample lines of a text exposition.
func devlinkSamples(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

func TestDevlinkUpdate(t *testing.T) {
	excludeIB, err := collector.NewNameFilter("collector.devlink.device", "", "pci/0000:08:00.0")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		filter collector.NameFilter
		want   []string
		calls  []string
	}{
		{
			name: "all devices",
			want: []string{
				`nic_devlink_info{device="pci/0000:08:00.0",driver="mlx5_core",serial_number="MT2347X01938",board_id="MT_0000000838",firmware_running="28.45.4028",firmware_stored="28.45.4028"} 1`,
				`nic_devlink_info{device="pci/0000:08:00.1",driver="mlx5_core",serial_number="MT2347X01938",board_id="MT_0000000838",firmware_running="28.45.4028",firmware_stored=""} 1`,
				`nic_devlink_health_reporter_healthy{device="pci/0000:08:00.0",port="",netdev="",reporter="fw"} 1`,
				`nic_devlink_health_reporter_healthy{device="pci/0000:08:00.1",port="",netdev="",reporter="fw"} 1`,
				`nic_devlink_health_reporter_healthy{device="pci/0000:08:00.1",port="",netdev="",reporter="fw_fatal"} 0`,
				`nic_devlink_health_reporter_healthy{device="pci/0000:08:00.1",port="131071",netdev="enp8s0f1np1",reporter="tx"} 1`,
				`nic_devlink_health_reporter_errors_total{device="pci/0000:08:00.0",port="",netdev="",reporter="fw"} 0`,
				`nic_devlink_health_reporter_errors_total{device="pci/0000:08:00.1",port="",netdev="",reporter="fw"} 0`,
				`nic_devlink_health_reporter_errors_total{device="pci/0000:08:00.1",port="",netdev="",reporter="fw_fatal"} 2`,
				`nic_devlink_health_reporter_errors_total{device="pci/0000:08:00.1",port="131071",netdev="enp8s0f1np1",reporter="tx"} 0`,
				`nic_devlink_health_reporter_recoveries_total{device="pci/0000:08:00.0",port="",netdev="",reporter="fw"} 0`,
				`nic_devlink_health_reporter_recoveries_total{device="pci/0000:08:00.1",port="",netdev="",reporter="fw"} 0`,
				`nic_devlink_health_reporter_recoveries_total{device="pci/0000:08:00.1",port="",netdev="",reporter="fw_fatal"} 1`,
				`nic_devlink_health_reporter_recoveries_total{device="pci/0000:08:00.1",port="131071",netdev="enp8s0f1np1",reporter="tx"} 0`,
				`nic_devlink_health_reporter_auto_recover{device="pci/0000:08:00.1",port="",netdev="",reporter="fw_fatal"} 1`,
				`nic_devlink_health_reporter_auto_recover{device="pci/0000:08:00.1",port="131071",netdev="enp8s0f1np1",reporter="tx"} 0`,
				`nic_devlink_health_reporter_graceful_period_seconds{device="pci/0000:08:00.1",port="",netdev="",reporter="fw_fatal"} 60`,
				`nic_devlink_health_reporter_graceful_period_seconds{device="pci/0000:08:00.1",port="131071",netdev="enp8s0f1np1",reporter="tx"} 0.5`,
				`nic_devlink_health_reporter_last_dump_timestamp_seconds{device="pci/0000:08:00.1",port="",netdev="",reporter="fw_fatal"} 1.7000000005e+09`,
			},
			calls: []string{"info pci/0000:08:00.0", "info pci/0000:08:00.1"},
		},
		{
			name:   "excluded device",
			filter: excludeIB,
			want: []string{
				`nic_devlink_info{device="pci/0000:08:00.1",driver="mlx5_core",serial_number="MT2347X01938",board_id="MT_0000000838",firmware_running="28.45.4028",firmware_stored=""} 1`,
				`nic_devlink_health_reporter_healthy{device="pci/0000:08:00.1",port="",netdev="",reporter="fw"} 1`,
				`nic_devlink_health_reporter_healthy{device="pci/0000:08:00.1",port="",netdev="",reporter="fw_fatal"} 0`,
				`nic_devlink_health_reporter_healthy{device="pci/0000:08:00.1",port="131071",netdev="enp8s0f1np1",reporter="tx"} 1`,
				`nic_devlink_health_reporter_errors_total{device="pci/0000:08:00.1",port="",netdev="",reporter="fw"} 0`,
				`nic_devlink_health_reporter_errors_total{device="pci/0000:08:00.1",port="",netdev="",reporter="fw_fatal"} 2`,
				`nic_devlink_health_reporter_errors_total{device="pci/0000:08:00.1",port="131071",netdev="enp8s0f1np1",reporter="tx"} 0`,
				`nic_devlink_health_reporter_recoveries_total{device="pci/0000:08:00.1",port="",netdev="",reporter="fw"} 0`,
				`nic_devlink_health_reporter_recoveries_total{device="pci/0000:08:00.1",port="",netdev="",reporter="fw_fatal"} 1`,
				`nic_devlink_health_reporter_recoveries_total{device="pci/0000:08:00.1",port="131071",netdev="enp8s0f1np1",reporter="tx"} 0`,
				`nic_devlink_health_reporter_auto_recover{device="pci/0000:08:00.1",port="",netdev="",reporter="fw_fatal"} 1`,
				`nic_devlink_health_reporter_auto_recover{device="pci/0000:08:00.1",port="131071",netdev="enp8s0f1np1",reporter="tx"} 0`,
				`nic_devlink_health_reporter_graceful_period_seconds{device="pci/0000:08:00.1",port="",netdev="",reporter="fw_fatal"} 60`,
				`nic_devlink_health_reporter_graceful_period_seconds{device="pci/0000:08:00.1",port="131071",netdev="enp8s0f1np1",reporter="tx"} 0.5`,
				`nic_devlink_health_reporter_last_dump_timestamp_seconds{device="pci/0000:08:00.1",port="",netdev="",reporter="fw_fatal"} 1.7000000005e+09`,
			},
			calls: []string{"info pci/0000:08:00.1"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newDevlinkFake()
			text, srcErrs, err := pollDevlink(t, newTestDevlink(t, f, tc.filter, ""))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, devlinkSamples(text)); diff != "" {
				t.Errorf("samples (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.calls, f.calls); diff != "" {
				t.Errorf("device requests (-want +got):\n%s", diff)
			}
			if len(srcErrs) != 0 {
				t.Errorf("source errors %v", srcErrs)
			}
		})
	}
}

func TestDevlinkSourceStates(t *testing.T) {
	for _, tc := range []struct {
		name     string
		open     error
		dumpErr  error
		infoErr  error
		noSource bool
		fails    bool
		reasons  []collector.ReasonCount
	}{
		{name: "no devlink family", open: fmt.Errorf("devlink: resolving: %w", syscall.ENOENT), noSource: true},
		{name: "open not permitted", open: fmt.Errorf("devlink: resolving: %w", syscall.EPERM), fails: true},
		{name: "dump not permitted", dumpErr: fmt.Errorf("devlink: listing: %w", syscall.EPERM), fails: true},
		{name: "info fails on one device", infoErr: fmt.Errorf("devlink: info: %w", syscall.EIO), reasons: []collector.ReasonCount{{Reason: "eio", Count: 1}}},
		{name: "info not supported", infoErr: fmt.Errorf("devlink: info: %w", syscall.EOPNOTSUPP)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newDevlinkFake()
			f.dumpErr = tc.dumpErr
			f.infoErr = map[devlink.Handle]error{cx7IB: tc.infoErr}
			d := New(Config{Open: func() (Source, error) {
				if tc.open != nil {
					return nil, tc.open
				}
				return f, nil
			}}, zap.NewNop())
			text, reasons, err := pollDevlink(t, d)
			switch {
			case tc.noSource:
				if !errors.Is(err, collector.ErrNoSource) {
					t.Fatalf("Update error %v, want collector.ErrNoSource", err)
				}
				if err := d.Watch(context.Background(), func(func(*collector.Poll)) {}); !errors.Is(err, collector.ErrNoSource) {
					t.Fatalf("Watch error %v, want collector.ErrNoSource", err)
				}
				return
			case tc.fails:
				if err == nil || errors.Is(err, collector.ErrNoSource) {
					t.Fatalf("Update error %v, want a failure", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.reasons, reasons, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("source errors (-want +got):\n%s", diff)
			}
			if strings.Contains(text, `nic_devlink_info{device="pci/0000:08:00.0"`) {
				t.Error("info of the failing device exported")
			}
			if !strings.Contains(text, `nic_devlink_health_reporter_healthy{device="pci/0000:08:00.0",port="",netdev="",reporter="fw"} 1`) {
				t.Errorf("the failing device's reporters are missing:\n%s", text)
			}
		})
	}
}

// TestDevlinkEvents drives the collector with health and device events
// and checks each published snapshot and the evidence written.
func TestDevlinkEvents(t *testing.T) {
	f := newDevlinkFake()
	dir := t.TempDir()
	d := newTestDevlink(t, f, collector.NameFilter{}, dir)
	published := startDevlinkWatch(t, d, 0)

	if _, _, err := pollDevlink(t, d); err != nil {
		t.Fatal(err)
	}
	// fw_fatal is in error when first seen: the poll queues a capture,
	// and the capture worker publishes once it is written.
	if text := <-published; !strings.Contains(text, `nic_devlink_health_captures_total{device="pci/0000:08:00.1",port="",netdev="",reporter="fw_fatal"} 1`+"\n") {
		t.Errorf("the poll's capture is not counted:\n%s", text)
	}
	wantCalls := []string{"info pci/0000:08:00.0", "info pci/0000:08:00.1", "diagnose pci/0000:08:00.1 fw_fatal", "dump pci/0000:08:00.1 fw_fatal"}
	if diff := cmp.Diff(wantCalls, f.calls); diff != "" {
		t.Fatalf("requests of the first poll (-want +got):\n%s", diff)
	}

	// fw goes to error and comes back (an auto-recovered error): both
	// events publish at once; the error is captured once.
	broken := devlinkReporter(cx7IB, nil, "fw", devlink.HealthStateError, 1, 0)
	f.events <- devlink.Event{Kind: devlink.EventHealth, Reporter: &broken}
	text := <-published
	for _, want := range []string{
		`nic_devlink_health_reporter_healthy{device="pci/0000:08:00.0",port="",netdev="",reporter="fw"} 0`,
		`nic_devlink_health_reporter_errors_total{device="pci/0000:08:00.0",port="",netdev="",reporter="fw"} 1`,
		`nic_devlink_health_events_total{device="pci/0000:08:00.0",port="",netdev="",reporter="fw",state="error"} 1`,
		`nic_devlink_health_captures_total{device="pci/0000:08:00.0",port="",netdev="",reporter="fw"} 0`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("after the error event, missing %s in:\n%s", want, text)
		}
	}
	text = <-published // after the capture
	if !strings.Contains(text, `nic_devlink_health_captures_total{device="pci/0000:08:00.0",port="",netdev="",reporter="fw"} 1`+"\n") {
		t.Errorf("capture not counted:\n%s", text)
	}
	recovered := devlinkReporter(cx7IB, nil, "fw", devlink.HealthStateHealthy, 1, 1)
	f.events <- devlink.Event{Kind: devlink.EventHealth, Reporter: &recovered}
	text = <-published
	for _, want := range []string{
		`nic_devlink_health_reporter_healthy{device="pci/0000:08:00.0",port="",netdev="",reporter="fw"} 1`,
		`nic_devlink_health_events_total{device="pci/0000:08:00.0",port="",netdev="",reporter="fw",state="error"} 1`,
		`nic_devlink_health_events_total{device="pci/0000:08:00.0",port="",netdev="",reporter="fw",state="healthy"} 1`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("after the recovery event, missing %s in:\n%s", want, text)
		}
	}
	if all, _ := filepath.Glob(filepath.Join(dir, "*"+captureSuffix)); len(all) != 2 {
		t.Errorf("evidence files %v, want fw_fatal's from the poll and fw's from the event", all)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*_pci_0000_08_00.0_fw"+captureSuffix))
	if len(files) != 1 {
		t.Fatalf("fw evidence files %v, want one", files)
	}
	var ev struct {
		Device, Reporter, Trigger string
		Attributes                struct{ State string }
		Diagnose                  map[string]any
		DumpError                 string `json:"dump_error"`
	}
	b, _ := os.ReadFile(files[0])
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Device != "pci/0000:08:00.0" || ev.Reporter != "fw" || ev.Trigger != "event" || ev.Attributes.State != "error" ||
		ev.DumpError != "not supported by the driver" || ev.Diagnose["Syndrome"] != 1.0 {
		t.Errorf("evidence:\n%s", b)
	}

	// The IB function is removed: its series go at once.
	f.devices = f.devices[1:]
	f.events <- devlink.Event{Kind: devlink.EventDeviceDel, Device: &devlink.Device{Handle: cx7IB}}
	text = <-published
	if strings.Contains(text, "0000:08:00.0") {
		t.Errorf("removed device still exported:\n%s", text)
	}
}

func TestCaptureStoreBounds(t *testing.T) {
	dir := t.TempDir()
	foreign := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(foreign, []byte("operator notes"), 0o644); err != nil {
		t.Fatal(err)
	}
	clock := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	s := newCaptureStore(CaptureConfig{Dir: dir, MaxFiles: 3, MaxBytes: 1 << 20, Now: func() time.Time {
		clock = clock.Add(time.Second)
		return clock
	}})
	var written []string
	for i := 0; i < 5; i++ {
		p, err := s.write(&Evidence{Device: "pci/0000:08:00.1", Reporter: fmt.Sprintf("r%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		written = append(written, filepath.Base(p))
	}
	left := func() []string {
		entries, _ := os.ReadDir(dir)
		var out []string
		for _, e := range entries {
			out = append(out, e.Name())
		}
		sort.Strings(out)
		return out
	}
	want := append(append([]string(nil), written[2:]...), "notes.txt")
	if diff := cmp.Diff(want, left()); diff != "" {
		t.Errorf("files after 5 writes with 3 allowed (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(written[0], "nic_exporter-20261122T000001.000000000Z-0001_pci_0000_08_00.1_r0") {
		t.Errorf("file name %s", written[0])
	}

	// A byte bound smaller than one file keeps only the newest.
	s.cfg.MaxBytes = 10
	p, err := s.write(&Evidence{Device: "pci/0000:08:00.1", Reporter: "big"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{filepath.Base(p), "notes.txt"}, left()); diff != "" {
		t.Errorf("files with a 10 byte bound (-want +got):\n%s", diff)
	}
}

// bigFake returns n ConnectX functions with mlx5's five reporters each.
func bigDevlinkFake(n int) *fakeDevlink {
	f := &fakeDevlink{infos: map[devlink.Handle]devlink.Info{}, events: make(chan devlink.Event)}
	fw := []devlink.Version{{Name: "fw.version", Value: "28.45.4028"}}
	for i := 0; i < n; i++ {
		h := devlink.Handle{Bus: "pci", Device: fmt.Sprintf("0000:%02x:00.%d", 8+i/2, i%2)}
		port := uint32(i<<16 | 0xffff)
		f.devices = append(f.devices, devlink.Device{Handle: h})
		f.ports = append(f.ports, devlink.Port{Handle: h, Index: port, Netdev: fmt.Sprintf("enp%ds0f%dnp%d", 8+i/2, i%2, i%2)})
		for _, name := range []string{"fw", "fw_fatal", "vnic"} {
			f.reporters = append(f.reporters, devlinkReporter(h, nil, name, devlink.HealthStateHealthy, 0, 0))
		}
		for _, name := range []string{"tx", "rx"} {
			r := devlinkReporter(h, &port, name, devlink.HealthStateHealthy, 3, 3)
			r.GracefulPeriod, r.AutoRecover = devlinkPtr(500*time.Millisecond), devlinkPtr(true)
			f.reporters = append(f.reporters, r)
		}
		f.infos[h] = devlink.Info{Handle: h, Driver: "mlx5_core", SerialNumber: "MT2347X01938", Running: fw, Stored: fw}
	}
	return f
}

// BenchmarkDevlinkPoll is one poll of 16 functions (80 reporters) from
// an in-memory source: the collector's own cost without netlink.
func BenchmarkDevlinkPoll(b *testing.B) {
	d := New(Config{Open: func() (Source, error) { return bigDevlinkFake(16), nil }}, zap.NewNop())
	errs := collector.NewSourceErrors(zap.NewNop(), time.Minute)
	bld := exposition.NewBuilder()
	b.ReportAllocs()
	for b.Loop() {
		bld.Reset()
		if err := d.Update(context.Background(), collector.NewPoll(bld, errs)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDevlinkHealthEvent applies one health notification and
// renders the new snapshot, as the event path does between polls, on a
// host with 16 functions (80 reporters).
func BenchmarkDevlinkHealthEvent(b *testing.B) {
	f := bigDevlinkFake(16)
	d := New(Config{Open: func() (Source, error) { return f, nil }}, zap.NewNop())
	if err := d.Update(context.Background(), collector.NewPoll(exposition.NewBuilder(), nil)); err != nil {
		b.Fatal(err)
	}
	src, _ := d.source()
	ev := f.reporters[3] // the second function's fw reporter
	publish := func(render func(*collector.Poll)) {
		bld := exposition.NewBuilder()
		render(collector.NewPoll(bld, nil))
		_ = bld.Snapshot()
	}
	b.ReportAllocs()
	for b.Loop() {
		d.handleEvent(context.Background(), src, devlink.Event{Kind: devlink.EventHealth, Reporter: &ev}, publish)
	}
}

// TestDevlinkOverrunRefresh checks that lost notifications (a socket
// buffer overrun) make the collector read the kernel's state at once.
func TestDevlinkOverrunRefresh(t *testing.T) {
	f := newDevlinkFake()
	d := newTestDevlink(t, f, collector.NameFilter{}, "")
	published := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		_ = d.Watch(ctx, func(render func(*collector.Poll)) {
			b := exposition.NewBuilder()
			render(collector.NewPoll(b, nil))
			published <- b.Snapshot().String()
		})
	}()
	if _, _, err := pollDevlink(t, d); err != nil {
		t.Fatal(err)
	}
	// Errors the exporter was not told about, then an overrun.
	f.reporters[0] = devlinkReporter(cx7IB, nil, "fw", devlink.HealthStateError, 4, 3)
	f.events <- devlink.Event{Kind: devlink.EventOverrun}
	text := <-published
	for _, want := range []string{
		`nic_devlink_health_reporter_healthy{device="pci/0000:08:00.0",port="",netdev="",reporter="fw"} 0`,
		`nic_devlink_health_reporter_errors_total{device="pci/0000:08:00.0",port="",netdev="",reporter="fw"} 4`,
		`nic_devlink_health_reporter_recoveries_total{device="pci/0000:08:00.0",port="",netdev="",reporter="fw"} 3`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("after the overrun, missing %s in:\n%s", want, text)
		}
	}
}

// TestCaptureStorePermissions checks that evidence, which holds firmware
// and driver internals, is readable by the exporter's user only: the
// directory it creates and the files it writes.
func TestCaptureStorePermissions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "evidence")
	s := newCaptureStore(CaptureConfig{Dir: dir})
	p, err := s.write(&Evidence{Device: "pci/0000:08:00.1", Reporter: "fw_fatal"})
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, p: 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s has mode %v, want %v", path, got, want)
		}
	}
}

// TestDevlinkEventBeforeFirstPoll checks that a reporter that goes to
// error between the start of Watch and the first poll still gets its
// evidence captured: the event sets the baseline error count, so the
// first poll no longer sees a rise.
func TestDevlinkEventBeforeFirstPoll(t *testing.T) {
	f := newDevlinkFake()
	d := newTestDevlink(t, f, collector.NameFilter{}, t.TempDir())
	published := startDevlinkWatch(t, d, 16)

	broken := devlinkReporter(cx7IB, nil, "fw", devlink.HealthStateError, 1, 0)
	f.events <- devlink.Event{Kind: devlink.EventHealth, Reporter: &broken}
	// Wait until the event loop has taken the event in.
	for {
		d.mu.Lock()
		_, seen := d.state.reporters[keyOf(broken.ReporterID)]
		d.mu.Unlock()
		if seen {
			break
		}
		time.Sleep(time.Millisecond)
	}
	f.reporters[0] = broken // the kernel's state when the poll reads it
	if _, _, err := pollDevlink(t, d); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`nic_devlink_health_captures_total{device="pci/0000:08:00.0",port="",netdev="",reporter="fw"} 1`,
		`nic_devlink_health_captures_total{device="pci/0000:08:00.1",port="",netdev="",reporter="fw_fatal"} 1`,
	}
	guard := time.After(testenv.HangGuard) // a hang guard, not a timing assert
	var text string
	for {
		select {
		case text = <-published:
		case <-guard:
			t.Fatalf("captures never published; last publication:\n%s", text)
		}
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(text, w+"\n")
		}
		if ok {
			return
		}
	}
}

// slowInfoDevlink is a fakeDevlink whose Info runs a hook: it is the
// moment a poll has read the reporter list but not yet applied it.
type slowInfoDevlink struct {
	*fakeDevlink
	hook func()
}

func (s *slowInfoDevlink) Info(ctx context.Context, h devlink.Handle) (devlink.Info, error) {
	if s.hook != nil {
		s.hook()
	}
	return s.fakeDevlink.Info(ctx, h)
}

// TestDevlinkPollEventOrder checks that the error and recovery counters
// never go backwards when a poll and health events interleave: a poll
// that read the reporters before an event must not undo the event, and an
// event that was queued while a poll read newer counts must not undo the
// poll.
func TestDevlinkPollEventOrder(t *testing.T) {
	f := newDevlinkFake()
	src := &slowInfoDevlink{fakeDevlink: f}
	d := New(Config{Open: func() (Source, error) { return src, nil }}, zap.NewNop())
	published := startDevlinkWatch(t, d, 16)
	if _, _, err := pollDevlink(t, d); err != nil {
		t.Fatal(err)
	}
	const fwErrors = `nic_devlink_health_reporter_errors_total{device="pci/0000:08:00.0",port="",netdev="",reporter="fw"} `
	const fwHealthy = `nic_devlink_health_reporter_healthy{device="pci/0000:08:00.0",port="",netdev="",reporter="fw"} `

	// The poll reads fw healthy with no errors; before it applies that,
	// fw goes to error and the event is handled.
	broken := devlinkReporter(cx7IB, nil, "fw", devlink.HealthStateError, 1, 0)
	once := false
	src.hook = func() {
		if once {
			return
		}
		once = true
		f.events <- devlink.Event{Kind: devlink.EventHealth, Reporter: &broken}
		<-published
	}
	text, _, err := pollDevlink(t, d)
	if err != nil {
		t.Fatal(err)
	}
	src.hook = nil
	for _, want := range []string{fwErrors + "1", fwHealthy + "0"} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("a poll that read before the error event undid it: missing %s in:\n%s", want, text)
		}
	}

	// The next poll reads newer counts (a second error, recovered); an
	// older notification handled after it must not take them back.
	f.reporters[0] = devlinkReporter(cx7IB, nil, "fw", devlink.HealthStateHealthy, 2, 2)
	if text, _, err = pollDevlink(t, d); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, fwErrors+"2\n") {
		t.Fatalf("poll: missing %s2 in:\n%s", fwErrors, text)
	}
	stale := devlinkReporter(cx7IB, nil, "fw", devlink.HealthStateHealthy, 1, 1)
	f.events <- devlink.Event{Kind: devlink.EventHealth, Reporter: &stale}
	text = <-published
	for _, want := range []string{
		fwErrors + "2",
		`nic_devlink_health_reporter_recoveries_total{device="pci/0000:08:00.0",port="",netdev="",reporter="fw"} 2`,
		`nic_devlink_health_events_total{device="pci/0000:08:00.0",port="",netdev="",reporter="fw",state="healthy"} 1`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("a stale event undid a newer poll: missing %s in:\n%s", want, text)
		}
	}
}

// TestDevlinkObserveRecreated checks evidence capture for a reporter that
// is destroyed and created again (devlink reload, netdevsim's dummy or
// mlx5's port reporters), whose error count restarts from zero: its next
// error is captured even though the count stays below the old one.
func TestDevlinkObserveRecreated(t *testing.T) {
	s := devlinkState{reporters: map[reporterKey]*reporterState{}}
	k := reporterKey{h: cx7Eth, name: "tx"}
	for i, step := range []struct {
		state       devlink.HealthState
		errs, recov uint64
		capture     bool
	}{
		{devlink.HealthStateError, 3, 2, true}, // first sighting, in error
		{devlink.HealthStateHealthy, 3, 3, false},
		{devlink.HealthStateHealthy, 0, 0, false}, // re-created
		{devlink.HealthStateError, 1, 0, true},
		{devlink.HealthStateHealthy, 1, 1, false},
		{devlink.HealthStateError, 2, 1, true},
	} {
		_, capture := s.observe(k, devlinkReporter(cx7Eth, nil, "tx", step.state, step.errs, step.recov))
		if capture != step.capture {
			t.Errorf("step %d (%v, %d errors): capture %v, want %v", i, step.state, step.errs, capture, step.capture)
		}
	}
}

// TestDevlinkPollRefreshOrder checks that a poll's read does not undo a
// newer read: a refresh after an event (here an overrun) that started
// and finished while the poll was still reading.
func TestDevlinkPollRefreshOrder(t *testing.T) {
	f := newDevlinkFake()
	src := &slowInfoDevlink{fakeDevlink: f}
	d := New(Config{Open: func() (Source, error) { return src, nil }}, zap.NewNop())
	published := startDevlinkWatch(t, d, 16)
	if _, _, err := pollDevlink(t, d); err != nil {
		t.Fatal(err)
	}
	// The poll has read fw healthy; then fw breaks, the event is lost
	// in an overrun, and the refresh reads and publishes the error.
	var mu sync.Mutex
	once := false
	src.hook = func() {
		mu.Lock()
		first := !once
		once = true
		mu.Unlock()
		if !first {
			return // the refresh's own Info calls
		}
		f.reporters[0] = devlinkReporter(cx7IB, nil, "fw", devlink.HealthStateError, 1, 0)
		f.events <- devlink.Event{Kind: devlink.EventOverrun}
		<-published
	}
	text, _, err := pollDevlink(t, d)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`nic_devlink_health_reporter_errors_total{device="pci/0000:08:00.0",port="",netdev="",reporter="fw"} 1`,
		`nic_devlink_health_reporter_healthy{device="pci/0000:08:00.0",port="",netdev="",reporter="fw"} 0`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("the poll undid the newer refresh: missing %s in:\n%s", want, text)
		}
	}
}

// startDevlinkWatch runs d.Watch until the test ends and returns the
// snapshots it publishes, rendered as text, on a channel with room for
// buffer of them. At the end of the test it checks that Watch returned
// because of the cancellation.
func startDevlinkWatch(t *testing.T, d *Collector, buffer int) <-chan string {
	t.Helper()
	published := make(chan string, buffer)
	ctx, cancel := context.WithCancel(context.Background())
	watchErr := make(chan error, 1)
	go func() {
		watchErr <- d.Watch(ctx, func(render func(*collector.Poll)) {
			b := exposition.NewBuilder()
			render(collector.NewPoll(b, nil))
			published <- b.Snapshot().String()
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-watchErr; !errors.Is(err, context.Canceled) {
			t.Errorf("Watch returned %v", err)
		}
	})
	return published
}
