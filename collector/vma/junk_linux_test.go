package vma

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
	"github.com/nic-exporter/nic_exporter/vmastats"
	"github.com/nic-exporter/nic_exporter/vmastats/vmastatstest"
)

// pollGuarded runs one poll under a deadline that only guards against a
// hang: it is far longer than any poll takes, and no test asserts on time.
func pollGuarded(t *testing.T, c collector.Collector) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
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

// idleProcesses starts n processes (sleep) in process groups of their
// own, which the test's cleanup kills, and returns their pids: they live
// for the whole test whatever else the machine runs.
func idleProcesses(t *testing.T, n int) []int {
	t.Helper()
	sleep := testenv.LookPath(t, "sleep")
	pids := make([]int, 0, n)
	for i := 0; i < n; i++ {
		cmd := exec.Command(sleep, "infinity")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting %s: %v", sleep, err)
		}
		t.Cleanup(func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
		})
		pids = append(pids, cmd.Process.Pid)
	}
	return pids
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

// deadPids returns n pids that name no process now, from the top of the
// kernel's range down: most are above this host's pid_max, the rest below
// it unless pid_max is 2^22.
func deadPids(t *testing.T, n int) []int {
	t.Helper()
	live := livePids(t)
	var pids []int
	for pid := 1 << 22; len(pids) < n && pid > 0; pid-- {
		if !live[pid] {
			pids = append(pids, pid)
		}
	}
	return pids
}

// countLoads makes c count the files it opens per poll.
func countLoads(c *Collector) *int {
	opened := new(int)
	c.load = func(cand vmastats.Candidate, opts vmastats.LoadOptions) (*vmastats.Loaded, error) {
		*opened++
		return vmastats.Load(cand, opts)
	}
	return opened
}

// checkJunk plants junk files of dead pids beside one genuine publisher
// (the test process) and polls until a whole pass over the directory is
// done. Every poll must read at most maxNames directory entries and open
// nothing but the genuine file; the genuine process must be exported
// from the first poll on; the junk must be counted stale once the pass is
// complete; and no goroutine may be left behind. Work is bounded, time is
// not asserted: the poll's deadline only guards against a hang.
func checkJunk(t *testing.T, junk, maxNames int) {
	dir := t.TempDir()
	pids := deadPids(t, junk)
	start := time.Now()
	plant(t, dir, pids)
	genuine := publish(t, dir)
	t.Logf("planted %d files in %v", junk, time.Since(start))

	goroutines := runtime.NumGoroutine()
	c := New(Config{Dirs: []string{dir}, ProcPath: "/proc", MaxNames: maxNames}, zap.NewNop())
	opened := countLoads(c)
	names := junk + 1
	polls := (names+maxNames-1)/maxNames + 1
	complete := -1
	for i := 0; i < polls && complete < 0; i++ {
		*opened = 0
		start := time.Now()
		text, err := pollGuarded(t, c)
		scan := c.lastScan
		t.Logf("poll %d: %d names read, %d looked up, %d files opened, in %v", i, scan.NamesRead, scan.Lookups, *opened, time.Since(start))
		if err != nil {
			t.Fatalf("poll %d: %v", i, err)
		}
		if scan.NamesRead > maxNames {
			t.Errorf("poll %d read %d directory entries, more than the %d allowed", i, scan.NamesRead, maxNames)
		}
		if *opened > DefaultMaxFiles || *opened != 1 {
			t.Errorf("poll %d opened %d files, want only the genuine one (and at most %d)", i, *opened, DefaultMaxFiles)
		}
		for _, want := range []string{genuine, `nic_vma_files{state="live"} 1`, `nic_vma_files{state="skipped"} 0`} {
			if !strings.Contains(text, want) {
				t.Errorf("poll %d: scrape lacks %s", i, want)
			}
		}
		if scan.PassComplete {
			complete = i
			if want := fmt.Sprintf(`nic_vma_files{state="stale"} %d`, junk); !strings.Contains(text, want) {
				t.Errorf("poll %d completed the pass, but the scrape lacks %s", i, want)
			}
		}
	}
	if complete < 0 {
		t.Errorf("no pass over the %d names completed within %d polls of %d names", names, polls, maxNames)
	}
	for i := 0; runtime.NumGoroutine() > goroutines && i < 100; i++ {
		runtime.Gosched()
	}
	if n := runtime.NumGoroutine(); n > goroutines {
		t.Errorf("%d goroutines after the polls, %d before", n, goroutines)
	}
}

// TestVMAJunkOfDeadPids fills a statistics directory, as any local user
// can fill /tmp, with 20,000 empty vmastat.<pid> files of pids that name
// no process, beside one genuine publisher, and reads 4,096 names per
// poll: see checkJunk. (It asserted the poll's duration once, and failed
// on a busy CI host when the poll took 5.17 s.)
func TestVMAJunkOfDeadPids(t *testing.T) {
	checkJunk(t, 20000, 4096)
}

// floodEnv runs TestVMAJunkFlood: creating and removing 1.2 million files
// takes minutes and a lot of inodes.
const floodEnv = "NIC_EXPORTER_VMA_FLOOD"

// TestVMAJunkFlood is TestVMAJunkOfDeadPids at the scale of the attack:
// 1.2 million names (any local user plants them in /tmp in under half a
// minute; pids up to 2^22 are accepted whatever pid_max says), with the
// default limits. Run it with NIC_EXPORTER_VMA_FLOOD=1.
func TestVMAJunkFlood(t *testing.T) {
	if os.Getenv(floodEnv) == "" {
		t.Skipf("set %s=1 to plant 1.2 million files", floodEnv)
	}
	checkJunk(t, 1200000, vmastats.DefaultMaxNames)
}

// TestVMAJunkOfLivePids plants more files than a poll opens under the
// pids of live processes that write no libvma statistics (they are
// refused once opened): processes of its own, since any other process of
// the machine may exit during the test, and the file of a dead pid is
// counted stale, not skipped. The files over the limit are counted as skipped,
// the genuine process is exported within the polls it takes to give
// every file a turn, and once exported it is read first at every poll.
func TestVMAJunkOfLivePids(t *testing.T) {
	const limit = 8
	dir := t.TempDir()
	pids := idleProcesses(t, 3*limit)
	plant(t, dir, pids)
	genuine := publish(t, dir)
	c := New(Config{Dirs: []string{dir}, ProcPath: "/proc", MaxFiles: limit}, zap.NewNop())
	skipped := fmt.Sprintf(`nic_vma_files{state="skipped"} %d`, len(pids)+1-limit)
	turns := (len(pids) + limit) / limit
	exported := -1
	for i := 0; i < turns+3; i++ {
		text, err := pollGuarded(t, c)
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
