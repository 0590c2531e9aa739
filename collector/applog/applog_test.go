package applog

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/collectortest"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/internal/logrules"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// VMA log lines as libvma writes them to VMA_LOG_FILE.
const (
	vmaMemlock  = "VMA WARNING: Your current max locked memory is: 65536. Please change it to unlimited.\n"
	vmaHugepage = "VMA WARNING: * Not enough hugepage resources for VMA memory allocation.    \n"
	vmaInfoLine = "VMA INFO: VMA_VERSION: 9.8.84-1 Release built on Oct 1 2024\n"
)

func newTestApplog(t *testing.T, fromStart bool, globs ...string) *Collector {
	t.Helper()
	e, err := logrules.Compile(logrules.VMARules())
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(Config{Globs: globs, Rules: e, FromStart: fromStart}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func wantSeries(t *testing.T, out string, want map[string]string) {
	t.Helper()
	for series, v := range want {
		if !strings.Contains(out, series+" "+v+"\n") {
			t.Errorf("want %s %s in:\n%s", series, v, out)
		}
	}
}

// TestApplogRotationTruncation follows a VMA log through a rename
// rotation with a line split across it, a truncation, and a file that
// disappears, checking every matching line is counted exactly once.
func TestApplogRotationTruncation(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "app.log")
	// History present at start is skipped by default.
	appendFile(t, log, vmaMemlock+vmaMemlock)
	a := newTestApplog(t, false, filepath.Join(dir, "*.log"))
	mem := fmt.Sprintf(`nic_app_log_events_total{file=%q,event="vma_memlock_limit"}`, log)
	huge := fmt.Sprintf(`nic_app_log_events_total{file=%q,event="vma_hugepages_unavailable"}`, log)
	lines := fmt.Sprintf(`nic_app_log_lines_total{file=%q}`, log)

	out := pollText(t, a)
	if strings.Contains(out, "vma_memlock_limit") {
		t.Fatalf("history before the start was counted:\n%s", out)
	}

	// Appended lines, one of them incomplete.
	appendFile(t, log, vmaMemlock+vmaInfoLine+vmaHugepage[:20])
	wantSeries(t, pollText(t, a), map[string]string{mem: "1", lines: "2"})

	// The application finishes the line, writes one more, and the file is
	// rotated by rename before the next poll; the new file gets a line.
	appendFile(t, log, vmaHugepage[20:]+vmaMemlock)
	if err := os.Rename(log, log+".1"); err != nil {
		t.Fatal(err)
	}
	appendFile(t, log, vmaHugepage)
	wantSeries(t, pollText(t, a), map[string]string{mem: "2", huge: "2", lines: "5"})

	// More unrelated lines, then truncation in place (copytruncate) and
	// a write shorter than what was read before.
	appendFile(t, log, vmaInfoLine+vmaInfoLine+vmaInfoLine)
	wantSeries(t, pollText(t, a), map[string]string{mem: "2", huge: "2", lines: "8"})
	if err := os.Truncate(log, 0); err != nil {
		t.Fatal(err)
	}
	appendFile(t, log, vmaMemlock)
	wantSeries(t, pollText(t, a), map[string]string{mem: "3", huge: "2", lines: "9"})

	// A new file appearing after the start is read from its beginning.
	other := filepath.Join(dir, "other.log")
	appendFile(t, other, vmaHugepage+vmaHugepage)
	wantSeries(t, pollText(t, a), map[string]string{
		fmt.Sprintf(`nic_app_log_events_total{file=%q,event="vma_hugepages_unavailable"}`, other): "2",
	})

	// A file that disappears keeps its counts (counters never go back).
	if err := os.Remove(other); err != nil {
		t.Fatal(err)
	}
	out = pollText(t, a)
	wantSeries(t, out, map[string]string{
		fmt.Sprintf(`nic_app_log_events_total{file=%q,event="vma_hugepages_unavailable"}`, other): "2",
		mem: "3",
	})
}

func TestApplogFromStart(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "vma.log")
	appendFile(t, log, vmaMemlock+vmaInfoLine+vmaMemlock)
	a := newTestApplog(t, true, log)
	wantSeries(t, pollText(t, a), map[string]string{
		fmt.Sprintf(`nic_app_log_events_total{file=%q,event="vma_memlock_limit"}`, log): "2",
	})
}

func TestApplogNoSource(t *testing.T) {
	a := newTestApplog(t, false)
	if err := a.Update(context.Background(), collector.NewPoll(exposition.NewBuilder(), nil)); !errors.Is(err, collector.ErrNoSource) {
		t.Errorf("no globs: %v, want collector.ErrNoSource", err)
	}
	a = newTestApplog(t, false, filepath.Join(t.TempDir(), "*.log"))
	if err := a.Update(context.Background(), collector.NewPoll(exposition.NewBuilder(), nil)); !errors.Is(err, collector.ErrNoSource) {
		t.Errorf("no files: %v, want collector.ErrNoSource", err)
	}
	if _, err := New(Config{Globs: []string{"[unclosed"}}, zap.NewNop()); err == nil {
		t.Error("a bad glob must be a startup error")
	}
}

// TestApplogUnreadable checks that a matched path that cannot be read as
// a file (here a directory) is a source error, not a failed poll, and that
// the other files are still read.
func TestApplogUnreadable(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "dir.log"), 0o755); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "vma.log")
	appendFile(t, log, vmaMemlock)
	errs := collector.NewSourceErrors(zap.NewNop(), 0)
	a := newTestApplog(t, true, filepath.Join(dir, "*.log"))
	b := exposition.NewBuilder()
	if err := a.Update(context.Background(), collector.NewPoll(b, errs)); err != nil {
		t.Fatal(err)
	}
	if c := errs.Counts(); len(c) != 1 {
		t.Errorf("source errors %v, want one", c)
	}
	wantSeries(t, b.Snapshot().String(), map[string]string{
		fmt.Sprintf(`nic_app_log_events_total{file=%q,event="vma_memlock_limit"}`, log): "1",
	})
}

// TestApplogConcurrentRotation appends to a log in random-sized chunks
// (splitting lines) while another goroutine polls, and rotates it by
// rename every 40 lines. The only ordering is that two rotations are
// separated by at least one poll (logrotate rotates daily, polls run every
// few seconds). Every matching line must be counted exactly once.
func TestApplogConcurrentRotation(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "vma.log")
	appendFile(t, log, "")
	a := newTestApplog(t, false, log)
	pollText(t, a)

	var polls atomic.Int64 // completed polls
	// pollAfter waits until a poll that started after this call has ended.
	pollAfter := func() {
		n := polls.Load()
		for polls.Load() < n+2 {
			time.Sleep(time.Millisecond)
		}
	}
	stop := make(chan struct{})
	pollErr := make(chan error, 1)
	go func() {
		defer close(pollErr)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := tryPoll(t, a); err != nil {
				pollErr <- err
				return
			}
			polls.Add(1)
		}
	}()

	rng := rand.New(rand.NewPCG(1, 2))
	const lines = 400
	var pending string
	rotations := 0
	for i := 1; i <= lines; i++ {
		if i%2 == 0 {
			pending += vmaMemlock
		} else {
			pending += vmaInfoLine
		}
		// Write a random prefix of what is pending, often mid-line.
		n := rng.IntN(len(pending) + 1)
		appendFile(t, log, pending[:n])
		pending = pending[n:]
		if i%40 == 0 {
			appendFile(t, log, pending)
			pending = ""
			if err := os.Rename(log, fmt.Sprintf("%s.%d", log, rotations)); err != nil {
				t.Fatal(err)
			}
			rotations++
			appendFile(t, log, "")
			pollAfter() // the new file is open before the next rotation
		}
	}
	appendFile(t, log, pending)
	close(stop)
	if err := <-pollErr; err != nil {
		t.Fatal(err)
	}
	wantSeries(t, pollText(t, a), map[string]string{
		fmt.Sprintf(`nic_app_log_events_total{file=%q,event="vma_memlock_limit"}`, log): fmt.Sprint(lines / 2),
		fmt.Sprintf(`nic_app_log_lines_total{file=%q}`, log):                            fmt.Sprint(lines),
	})
}

// TestApplogRotatedNameAlsoMatched rotates a log by rename to a name the
// globs also match (as /var/log/vma/* or vma.log* do). The rotated file
// is the file already read, under a new name: its lines must not be
// counted a second time, whether its name sorts after the live name
// (vma.log.1) or before it (vma.1.log).
func TestApplogRotatedNameAlsoMatched(t *testing.T) {
	for _, tc := range []struct{ live, rotated, glob string }{
		{live: "vma.log", rotated: "vma.log.1", glob: "vma.log*"},
		{live: "vma.log", rotated: "vma.1.log", glob: "*.log"},
	} {
		t.Run(tc.rotated, func(t *testing.T) {
			dir := t.TempDir()
			live := filepath.Join(dir, tc.live)
			appendFile(t, live, "")
			a := newTestApplog(t, false, filepath.Join(dir, tc.glob))
			pollText(t, a)

			appendFile(t, live, vmaMemlock+vmaInfoLine)
			pollText(t, a)
			// The application writes one more line and half of another,
			// then the file is rotated; the application still holds the
			// old file and finishes the line there before reopening.
			appendFile(t, live, vmaMemlock+vmaHugepage[:20])
			rotated := filepath.Join(dir, tc.rotated)
			if err := os.Rename(live, rotated); err != nil {
				t.Fatal(err)
			}
			appendFile(t, rotated, vmaHugepage[20:])
			appendFile(t, live, vmaHugepage)
			out := pollText(t, a)

			total := func(event string) int {
				n := 0
				for _, line := range strings.Split(out, "\n") {
					if !strings.HasPrefix(line, "nic_app_log_events_total{") || !strings.Contains(line, `event="`+event+`"`) {
						continue
					}
					var v int
					if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err != nil {
						t.Fatalf("%q: %v", line, err)
					}
					n += v
				}
				return n
			}
			if got := total("vma_memlock_limit"); got != 2 {
				t.Errorf("vma_memlock_limit counted %d times over all files, want 2:\n%s", got, out)
			}
			if got := total("vma_hugepages_unavailable"); got != 2 {
				t.Errorf("vma_hugepages_unavailable counted %d times over all files, want 2:\n%s", got, out)
			}
		})
	}
}

// TestApplogSkipsNonRegularFiles checks that a named pipe the globs match
// is a source error instead of a poll blocked forever in open(2) (a FIFO
// without a writer) or read(2) (one whose writer is idle), and that the
// other files are still read.
func TestApplogSkipsNonRegularFiles(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe.log"), 0o644); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "vma.log")
	appendFile(t, log, vmaMemlock)
	errs := collector.NewSourceErrors(zap.NewNop(), 0)
	a := newTestApplog(t, true, filepath.Join(dir, "*.log"))
	b := exposition.NewBuilder()
	done := make(chan error, 1)
	go func() { done <- a.Update(context.Background(), collector.NewPoll(b, errs)) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(testenv.HangGuard):
		t.Fatal("the poll blocked on a named pipe")
	}
	if c := errs.Counts(); len(c) != 1 {
		t.Errorf("source errors %v, want one", c)
	}
	wantSeries(t, b.Snapshot().String(), map[string]string{
		fmt.Sprintf(`nic_app_log_events_total{file=%q,event="vma_memlock_limit"}`, log): "1",
	})
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
