package collect

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/nic-exporter/nic_exporter/vmastats"
	"github.com/nic-exporter/nic_exporter/vmastats/vmastatstest"
)

// TestStatsSample copies libvma statistics files as collect does on a
// host: the file of this test process, published and mapped as libvma
// maps it and verified through the real procfs, is copied with its
// writer in the manifest; a file planted under the pid of init (which
// does not map it) is refused and noted; a file of a pid that names no
// process is passed over, as the vma collector passes over it; and the
// size and process limits leave files out with a note, and a file
// over the size limit is not written to (no handshake); once the
// collection's time is up, the files left are noted, not read.
func TestStatsSample(t *testing.T) {
	dir := t.TempDir()
	pub, err := vmastatstest.NewPublisher(dir, os.Getpid(), vmastatstest.Sample(vmastats.LayoutB))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pub.Close() })
	mine, err := os.ReadFile(pub.Path())
	if err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(dir, vmastats.FilePrefix+"1")
	if err := os.WriteFile(planted, mine, 0o644); err != nil {
		t.Fatal(err)
	}
	// pid_max is at most 2^22: no process has this pid.
	if err := os.WriteFile(filepath.Join(dir, vmastats.FilePrefix+"4194303"), mine, 0o644); err != nil {
		t.Fatal(err)
	}
	runCtx := func(ctx context.Context, lim StatsLimits) *Bundle {
		b := &Bundle{Files: map[string][]byte{}, limits: DefaultLimits, Manifest: Manifest{Files: []FileEntry{}, Unreadable: []Unreadable{}}}
		c := &collector{cfg: Config{Stats: lim}, src: Sources{ProcPath: "/proc", VMADirs: []string{dir}, XLIODirs: []string{filepath.Join(dir, "absent")}}, b: b}
		c.statsSample(ctx, EarlierDir)
		return b
	}
	run := func(lim StatsLimits) *Bundle { return runCtx(context.Background(), lim) }
	reasons := func(b *Bundle) string {
		var s []string
		for _, u := range b.Manifest.Unreadable {
			s = append(s, u.Source+": "+u.Reason)
		}
		return strings.Join(s, "\n")
	}

	b := run(DefaultStatsLimits)
	name := EarlierDir + "/" + VMADir + "/" + vmastats.FilePrefix + strconv.Itoa(os.Getpid())
	got, ok := b.Files[name]
	if !ok || len(b.Files) != 1 {
		t.Fatalf("files %v, want only %s; unreadable:\n%s", keys(b.Files), name, reasons(b))
	}
	if _, err := vmastats.Parse(got); err != nil {
		t.Errorf("the copy does not decode: %v", err)
	}
	if pub.ReaderCounter() != 1 {
		t.Errorf("reader_counter %d after the copy, want 1 (the handshake)", pub.ReaderCounter())
	}
	p := b.Manifest.Files[0].Process
	if p == nil || p.PID != os.Getpid() || p.Comm == "" || !p.Handshake || p.Start == "" {
		t.Errorf("manifest process %+v", p)
	}
	if len(b.Manifest.Unreadable) != 1 || b.Manifest.Unreadable[0].Source != planted || !strings.Contains(b.Manifest.Unreadable[0].Reason, vmastats.ErrRefused.Error()) {
		t.Errorf("unreadable, want only the planted file refused:\n%s", reasons(b))
	}

	b = run(StatsLimits{MaxFileSize: int64(len(mine)) - 1, MaxProcesses: 32})
	if len(b.Files) != 0 || !strings.Contains(reasons(b), "more than the limit of "+strconv.Itoa(len(mine)-1)) {
		t.Errorf("over the size limit: files %v, unreadable:\n%s", keys(b.Files), reasons(b))
	}
	if pub.ReaderCounter() != 1 {
		t.Errorf("reader_counter %d: a file over the size limit was written to", pub.ReaderCounter())
	}
	// The candidates are in pid order: init's planted file takes the
	// one place.
	b = run(StatsLimits{MaxFileSize: 1 << 20, MaxProcesses: 1})
	if len(b.Files) != 0 || !strings.Contains(reasons(b), "left out: 1 files over the limit of 1 processes") {
		t.Errorf("over the process limit: files %v, unreadable:\n%s", keys(b.Files), reasons(b))
	}
	// The collection's time is up: nothing more is read.
	done, cancel := context.WithCancel(context.Background())
	cancel()
	b = runCtx(done, DefaultStatsLimits)
	if len(b.Files) != 0 || !strings.Contains(reasons(b), "left out: 2 files not read: context canceled") {
		t.Errorf("after the deadline: files %v, unreadable:\n%s", keys(b.Files), reasons(b))
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
