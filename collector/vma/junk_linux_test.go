package vma

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/vmastats"
	"github.com/nic-exporter/nic_exporter/vmastats/vmastatstest"
)

// pollWithin runs one poll with the collector's default timeout (4 s).
func pollWithin(t *testing.T, c collector.Collector) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	b := exposition.NewBuilder()
	err := c.Update(ctx, collector.NewPoll(b, collector.NewSourceErrors(zap.NewNop(), time.Hour)))
	return b.Snapshot().String(), err
}

// plant creates empty vmastat.<pid> files in dir, one for each pid.
func plant(t *testing.T, dir string, pids []int) {
	t.Helper()
	for _, pid := range pids {
		fd, err := syscall.Open(dir+"/vmastat."+strconv.Itoa(pid), syscall.O_CREAT|syscall.O_EXCL|syscall.O_WRONLY|syscall.O_CLOEXEC, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		syscall.Close(fd)
	}
}

// livePids returns the pids in /proc now.
func livePids(t *testing.T) map[int]bool {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	live := make(map[int]bool)
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			live[pid] = true
		}
	}
	return live
}

// publish makes the test process a genuine libvma publisher in dir.
func publish(t *testing.T, dir string) string {
	t.Helper()
	pub, err := vmastatstest.NewPublisher(dir, os.Getpid(), vmastatstest.Sample(vmastats.LayoutB))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pub.Close() })
	return `nic_vma_process_info{pid="` + strconv.Itoa(os.Getpid()) + `"`
}

// TestVMAJunkOfDeadPids fills a statistics directory, as any local user
// can fill /tmp, with 150,000 empty vmastat.<pid> files of pids that name
// no process, beside one genuine publisher (the test process). The
// genuine process must be exported at the first poll, the poll must end
// within its timeout, and the junk must be counted stale without being
// opened.
func TestVMAJunkOfDeadPids(t *testing.T) {
	const junk = 150000
	dir := t.TempDir()
	live := livePids(t)
	var pids []int
	for pid := 1 << 22; len(pids) < junk; pid-- {
		if !live[pid] {
			pids = append(pids, pid)
		}
	}
	start := time.Now()
	plant(t, dir, pids)
	genuine := publish(t, dir)
	t.Logf("planted %d files in %v", junk, time.Since(start))

	c := New(Config{Dirs: []string{dir}, ProcPath: "/proc"}, zap.NewNop())
	start = time.Now()
	text, err := pollWithin(t, c)
	t.Logf("poll took %v", time.Since(start))
	if err != nil {
		t.Fatalf("poll: %v", err)
	}
	for _, want := range []string{
		genuine,
		`nic_vma_files{state="live"} 1`,
		fmt.Sprintf(`nic_vma_files{state="stale"} %d`, junk),
		`nic_vma_files{state="skipped"} 0`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("scrape lacks %s", want)
		}
	}
}

// TestVMAJunkOfLivePids plants more files than a poll opens under the
// pids of live processes that write no libvma statistics (they are
// refused once opened). The files over the limit are counted as skipped,
// the genuine process is exported within the polls it takes to give
// every file a turn, and once exported it is read first at every poll.
func TestVMAJunkOfLivePids(t *testing.T) {
	const limit = 8
	dir := t.TempDir()
	var pids []int
	for pid := range livePids(t) {
		if pid != os.Getpid() && len(pids) < 3*limit {
			pids = append(pids, pid)
		}
	}
	if len(pids) < 2*limit {
		t.Fatalf("only %d processes to plant files for", len(pids))
	}
	plant(t, dir, pids)
	genuine := publish(t, dir)
	c := New(Config{Dirs: []string{dir}, ProcPath: "/proc", MaxFiles: limit}, zap.NewNop())
	skipped := fmt.Sprintf(`nic_vma_files{state="skipped"} %d`, len(pids)+1-limit)
	turns := (len(pids) + limit) / limit
	exported := -1
	for i := 0; i < turns+3; i++ {
		text, err := pollWithin(t, c)
		if err != nil {
			t.Fatalf("poll %d: %v", i, err)
		}
		if !strings.Contains(text, skipped) {
			t.Errorf("poll %d: scrape lacks %s", i, skipped)
		}
		if strings.Contains(text, genuine) {
			if exported < 0 {
				exported = i
			}
		} else if exported >= 0 {
			t.Errorf("poll %d: the genuine process, exported at poll %d, is missing", i, exported)
		}
	}
	if exported < 0 || exported >= turns {
		t.Errorf("genuine process first exported at poll %d, want before poll %d", exported, turns)
	}
}
