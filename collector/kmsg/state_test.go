package kmsg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/collectortest"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
)

// stateRecords returns the kernel log records with sequence numbers from
// first to last: every third one a matching ena line, every fifth an
// mlx5 one, every seventh unparsable, the others noise.
func stateRecords(first, last int) []string {
	var out []string
	for i := first; i <= last; i++ {
		ts := i * 1000000
		switch {
		case i%7 == 0:
			out = append(out, fmt.Sprintf("garbage %d", i))
		case i%3 == 0:
			out = append(out, fmt.Sprintf("3,%d,%d,-;ena 0000:00:05.0 ens5: Trigger reset is on", i, ts))
		case i%5 == 0:
			out = append(out, fmt.Sprintf("3,%d,%d,-;mlx5_core 0000:08:00.0: poll_health:801:(pid 0): device's health compromised - reached miss count", i, ts))
		default:
			out = append(out, fmt.Sprintf("6,%d,%d,-;EXT4-fs (vda): mounted filesystem %d", i, ts, i))
		}
	}
	return out
}

// stateCollector returns a collector over a fake kernel log holding
// records, saving to stateFile (none if empty) under bootID.
func stateCollector(t *testing.T, records []string, stateFile, bootID string, log *zap.Logger) *Collector {
	t.Helper()
	dev := newFakeKmsg(records...)
	return New(Config{
		Open: func() (Device, error) { return dev, nil }, Rules: kernelEngine(t), Replay: true,
		BootTime: time.Unix(1700000000, 0), StateFile: stateFile,
		BootID: func() (string, error) { return bootID, nil },
	}, log)
}

// statePoll polls c once and returns its exposition and the source
// errors the poll counted, by reason.
func statePoll(t *testing.T, c *Collector) (string, map[string]uint64) {
	t.Helper()
	b := exposition.NewBuilder()
	errs := collector.NewSourceErrors(zap.NewNop(), 0)
	if err := c.Update(context.Background(), collector.NewPoll(b, errs)); err != nil {
		t.Fatal(err)
	}
	reasons := map[string]uint64{}
	for _, rc := range errs.Counts() {
		reasons[rc.Reason] = rc.Count
	}
	return b.Snapshot().String(), reasons
}

// eventLines returns the nic_kernel_log_events_total and records lines
// of an exposition.
func eventLines(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "nic_kernel_log_events_total{") || strings.HasPrefix(l, "nic_kernel_log_last_event_timestamp_seconds{") ||
			strings.HasPrefix(l, "nic_kernel_log_records_total ") || strings.HasPrefix(l, "nic_kernel_log_unparsable_records_total ") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// stateValue returns the value of the sample line that starts with prefix.
func stateValue(t *testing.T, s, prefix string) float64 {
	t.Helper()
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix+" ") {
			var v float64
			if _, err := fmt.Sscan(strings.TrimPrefix(l, prefix+" "), &v); err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("no %s in\n%s", prefix, s)
	return 0
}

const enaReset = `nic_kernel_log_events_total{driver="ena",device="ens5",event="ena_reset_triggered"}`

// TestStateRestartRotated is the case the state file exists for: records
// 1..100 counted and saved, the exporter restarted after the kernel
// rotated 1..59 out and logged 101..150. The totals must be those of all
// 150 records, exactly as an exporter that never restarted would show.
func TestStateRestartRotated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kmsg.state")
	first, _ := statePoll(t, stateCollector(t, stateRecords(1, 100), path, "boot-a", zap.NewNop()))
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("state file mode %v, want 0600", st.Mode().Perm())
	}

	after, reasons := statePoll(t, stateCollector(t, stateRecords(60, 150), path, "boot-a", zap.NewNop()))
	never, _ := statePoll(t, stateCollector(t, stateRecords(1, 150), "", "", zap.NewNop()))
	if got, want := eventLines(after), eventLines(never); got != want {
		t.Errorf("after the restart:\n%s\nwant (never restarted):\n%s", got, want)
	}
	if len(reasons) != 0 {
		t.Errorf("source errors %v, want none", reasons)
	}
	if !strings.Contains(after, "nic_kernel_log_overruns_total 0\n") {
		t.Errorf("an overrun counted although 101 followed the saved 100:\n%s", after)
	}
	// Never lower than before the restart; what replay alone would give is.
	if a, b := stateValue(t, after, enaReset), stateValue(t, first, enaReset); a < b {
		t.Errorf("ena resets went from %v down to %v", b, a)
	}
	replayOnly, _ := statePoll(t, stateCollector(t, stateRecords(60, 150), "", "", zap.NewNop()))
	if a, b := stateValue(t, replayOnly, enaReset), stateValue(t, first, enaReset); a >= b {
		t.Fatalf("the test's rotation does not lower the replayed count (%v ≥ %v), so it shows nothing", a, b)
	}

	// The next restart goes on from 150.
	again, _ := statePoll(t, stateCollector(t, stateRecords(120, 160), path, "boot-a", zap.NewNop()))
	never160, _ := statePoll(t, stateCollector(t, stateRecords(1, 160), "", "", zap.NewNop()))
	if got, want := eventLines(again), eventLines(never160); got != want {
		t.Errorf("after a second restart:\n%s\nwant:\n%s", got, want)
	}
}

// TestStateLostRecords checks that records rotated out before the
// exporter could read them are counted as an overrun.
func TestStateLostRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kmsg.state")
	statePoll(t, stateCollector(t, stateRecords(1, 100), path, "boot-a", zap.NewNop()))
	out, _ := statePoll(t, stateCollector(t, stateRecords(121, 150), path, "boot-a", zap.NewNop()))
	if !strings.Contains(out, "nic_kernel_log_overruns_total 1\n") {
		t.Errorf("records 101..120 lost without an overrun:\n%s", out)
	}
}

// TestStateNoReplay checks that a restored state counts the records
// after the saved one even with Replay off: they were logged while the
// exporter was down.
func TestStateNoReplay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kmsg.state")
	statePoll(t, stateCollector(t, stateRecords(1, 100), path, "boot-a", zap.NewNop()))
	k := stateCollector(t, stateRecords(60, 150), path, "boot-a", zap.NewNop())
	k.cfg.Replay = false
	out, _ := statePoll(t, k)
	never, _ := statePoll(t, stateCollector(t, stateRecords(1, 150), "", "", zap.NewNop()))
	if got, want := eventLines(out), eventLines(never); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// TestStateIgnored checks the files that must not be restored: from
// another boot, corrupt, foreign, not a regular file. Each is logged
// once, the buffer is replayed as without a state file, a corrupt one is
// counted as a source error, and the next save replaces it.
func TestStateIgnored(t *testing.T) {
	valid, err := os.ReadFile(filepath.Join("testdata", "state.golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		content string // "DIR" makes a directory
		reason  string // source error counted; empty for none
		log     string
	}{
		{"other boot", string(valid), "", "from another boot"},
		{"garbage", "\x00\x01not json", "parse", "cannot be used"},
		{"truncated", string(valid[:len(valid)/2]), "parse", "cannot be used"},
		{"empty", "", "parse", "cannot be used"},
		{"foreign format", strings.Replace(string(valid), stateFormat, "something/else", 1), "parse", "cannot be used"},
		{"future version", strings.Replace(string(valid), `"version": 1`, `"version": 2`, 1), "parse", "cannot be used"},
		{"unknown field", strings.Replace(string(valid), `"version": 1,`, `"version": 1, "extra": 1,`, 1), "parse", "cannot be used"},
		{"trailing data", string(valid) + "{}", "parse", "cannot be used"},
		{"repeated series", strings.NewReplacer("mlx5_core", "ena", "0000:08:00.0", "ens5", "mlx5_health_compromised", "ena_reset_triggered").Replace(string(valid)), "parse", "cannot be used"},
		{"zero count", strings.Replace(string(valid), `"count": 9`, `"count": 0`, 1), "parse", "cannot be used"},
		// Read as a file and then as the target of the rename, both fail.
		{"directory", "DIR", "other", "cannot be used"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "kmsg.state")
			if tc.content == "DIR" {
				if err := os.Mkdir(path, 0o700); err != nil {
					t.Fatal(err)
				}
			} else if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			core, logs := observer.New(zap.InfoLevel)
			// The golden file's boot id is "golden-boot".
			k := stateCollector(t, stateRecords(60, 150), path, "boot-b", zap.New(core))
			out, reasons := statePoll(t, k)
			replay, _ := statePoll(t, stateCollector(t, stateRecords(60, 150), "", "", zap.NewNop()))
			if got, want := eventLines(out), eventLines(replay); got != want {
				t.Errorf("got:\n%s\nwant the plain replay:\n%s", got, want)
			}
			if n := logs.FilterMessageSnippet(tc.log).Len(); n != 1 {
				t.Errorf("%d log lines with %q, want 1: %v", n, tc.log, logs.All())
			}
			want := map[string]uint64{}
			if tc.reason != "" {
				want[tc.reason] = 1
			}
			if tc.content == "DIR" {
				want[tc.reason] = 2
			}
			if fmt.Sprint(reasons) != fmt.Sprint(want) {
				t.Errorf("source errors %v, want %v", reasons, want)
			}
			if tc.content == "DIR" {
				return // a directory is not replaced
			}
			s, err := readState(path)
			if err != nil {
				t.Fatalf("not replaced by a valid state: %v", err)
			}
			if s.BootID != "boot-b" || s.LastSeq != 150 {
				t.Errorf("saved boot id %q, last_seq %d; want boot-b, 150", s.BootID, s.LastSeq)
			}
			// A second poll counts nothing more.
			_, reasons = statePoll(t, k)
			if len(reasons) != 0 {
				t.Errorf("second poll counted %v", reasons)
			}
		})
	}
}

// TestStateMissingDir checks that a state file that cannot be written
// changes nothing but the source error count: the collector is up and
// counts as without a state file.
func TestStateMissingDir(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "kmsg.state")
	core, logs := observer.New(zap.InfoLevel)
	k := stateCollector(t, stateRecords(1, 50), path, "boot-a", zap.New(core))
	out, reasons := statePoll(t, k)
	replay, _ := statePoll(t, stateCollector(t, stateRecords(1, 50), "", "", zap.NewNop()))
	if got, want := eventLines(out), eventLines(replay); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if reasons["enoent"] != 1 || len(reasons) != 1 {
		t.Errorf("source errors %v, want enoent 1", reasons)
	}
	_, reasons = statePoll(t, k)
	if reasons["enoent"] != 1 {
		t.Errorf("second poll: source errors %v, want enoent 1 (the save is retried)", reasons)
	}
	if n := logs.FilterMessageSnippet("saving the kernel log state failed").Len(); n != 1 {
		t.Errorf("the same save failure logged %d times, want once", n)
	}
	if _, err := os.Stat(filepath.Dir(path)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the directory was created: %v", err)
	}
}

// TestStateUnknownBootID checks that without a boot id the state file is
// neither read nor written, and that this is counted once.
func TestStateUnknownBootID(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kmsg.state")
	dev := newFakeKmsg(stateRecords(1, 10)...)
	k := New(Config{
		Open: func() (Device, error) { return dev, nil }, Rules: kernelEngine(t), Replay: true, StateFile: path,
		BootID: ReadBootID(t.TempDir()),
	}, zap.NewNop())
	_, reasons := statePoll(t, k)
	if reasons["enoent"] != 1 {
		t.Errorf("source errors %v, want enoent 1", reasons)
	}
	_, reasons = statePoll(t, k)
	if len(reasons) != 0 {
		t.Errorf("second poll counted %v", reasons)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state written without a boot id: %v", err)
	}
}

// TestReadBootID reads the real boot id of this machine.
func TestReadBootID(t *testing.T) {
	id, err := ReadBootID("/proc")()
	if err != nil {
		t.Fatal(err)
	}
	if len(id) != 36 || strings.Count(id, "-") != 4 {
		t.Errorf("boot id %q is no UUID", id)
	}
	again, _ := ReadBootID("/proc")()
	if again != id {
		t.Errorf("boot id changed from %q to %q", id, again)
	}
}

// TestStateCrashSafety checks that a temporary file a crash left behind
// is ignored, and that a reader never sees a partial file while records
// arrive and polls save concurrently.
func TestStateCrashSafety(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "kmsg.state")
	statePoll(t, stateCollector(t, stateRecords(1, 100), path, "boot-a", zap.NewNop()))
	// A crash between the write and the rename.
	if err := os.WriteFile(filepath.Join(dir, ".kmsg.state.tmp-123"), []byte(`{"format": "nic_exporter/kmsg-st`), 0o600); err != nil {
		t.Fatal(err)
	}
	dev := newFakeKmsg(stateRecords(60, 150)...)
	k := New(Config{
		Open: func() (Device, error) { return dev, nil }, Rules: kernelEngine(t), Replay: true,
		BootTime: time.Unix(1700000000, 0), StateFile: path, PublishInterval: time.Millisecond,
		BootID: func() (string, error) { return "boot-a", nil },
	}, zap.NewNop())
	_, reasons := statePoll(t, k)
	if len(reasons) != 0 {
		t.Fatalf("source errors %v", reasons)
	}
	_, stop := runWatch(t, k)
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(3)
	go func() { // the kernel logs
		defer wg.Done()
		for _, r := range stateRecords(151, 400) {
			dev.add(r)
		}
	}()
	go func() { // polls save
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			b := exposition.NewBuilder()
			errs := collector.NewSourceErrors(zap.NewNop(), 0)
			if err := k.Update(context.Background(), collector.NewPoll(b, errs)); err != nil {
				t.Error(err)
				return
			}
			if c := errs.Counts(); len(c) != 0 {
				t.Errorf("save failed: %v", c)
				return
			}
		}
	}()
	var reads int
	go func() { // a restarting exporter reads
		defer wg.Done()
		var last uint64
		for {
			select {
			case <-done:
				return
			default:
			}
			s, err := readState(path)
			if err != nil {
				t.Errorf("read %d: %v", reads, err)
				return
			}
			if s.LastSeq < last {
				t.Errorf("last_seq went back from %d to %d", last, s.LastSeq)
			}
			last = s.LastSeq
			reads++
		}
	}()
	waitFor(t, k, "nic_kernel_log_records_total 343") // 400 less the 57 unparsable
	close(done)
	wg.Wait()
	stop()
	statePoll(t, k)
	if reads == 0 {
		t.Error("the state file was never read concurrently")
	}
	after, _ := statePoll(t, stateCollector(t, stateRecords(300, 400), path, "boot-a", zap.NewNop()))
	never, _ := statePoll(t, stateCollector(t, stateRecords(1, 400), "", "", zap.NewNop()))
	if got, want := eventLines(after), eventLines(never); got != want {
		t.Errorf("after the concurrent run:\n%s\nwant:\n%s", got, want)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if fmt.Sprint(names) != "[.kmsg.state.tmp-123 kmsg.state]" {
		t.Errorf("files %v: a save left a temporary file", names)
	}
}

// TestStateGolden pins the documented format of the state file.
func TestStateGolden(t *testing.T) {
	k := stateCollector(t, stateRecords(1, 30), "", "golden-boot", zap.NewNop())
	statePoll(t, k)
	s, _ := k.snapshotState("golden-boot")
	got, err := encodeState(s)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "state.golden.json")
	if collectortest.Update() {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("state file:\n%s\nwant (go test -update to accept):\n%s", got, want)
	}
	parsed, err := parseState(want)
	if err != nil {
		t.Fatal(err)
	}
	again, err := encodeState(parsed)
	if err != nil || !bytes.Equal(again, want) {
		t.Errorf("the golden file does not round-trip: %v\n%s", err, again)
	}
}

// FuzzParseState checks that no input panics the state parser and that
// what it accepts encodes and parses again to the same state.
func FuzzParseState(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join("testdata", "state.golden.json")); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"format":"nic_exporter/kmsg-state","version":1,"boot_id":"x","events":[]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := parseState(b)
		if err != nil {
			return
		}
		enc, err := encodeState(s)
		if err != nil {
			return
		}
		if _, err := parseState(enc); err != nil {
			t.Errorf("re-encoded state does not parse: %v\n%s", err, enc)
		}
	})
}
