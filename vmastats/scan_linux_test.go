package vmastats_test

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nic-exporter/nic_exporter/vmastats"
)

// fakeLive is a Liveness whose live pids are fixed; it records the pids
// it was asked about. With lister set it is also a PIDLister.
type fakeLive struct {
	live  map[int]bool
	asked []int
}

func (f *fakeLive) Verify(int, vmastats.FileInfo) (vmastats.Process, error) {
	return vmastats.Process{}, vmastats.ErrStale
}

func (f *fakeLive) Alive(pid int) bool { f.asked = append(f.asked, pid); return f.live[pid] }

type fakeLister struct{ *fakeLive }

func (f fakeLister) LivePIDs() ([]int, error) {
	var out []int
	for pid := range f.live {
		out = append(out, pid)
	}
	return out, nil
}

func scanFixture(t *testing.T, names ...string) (proc, dir string) {
	t.Helper()
	proc, dir = t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(proc, "sys", "kernel"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proc, "sys", "kernel", "pid_max"), []byte("1000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return proc, dir
}

// TestScannerBoundedPass reads a directory three names per scan: every
// scan stays within the bound, the pass resumes where the last scan
// stopped, names above pid_max (read through the configured procfs) are
// stale without a liveness query, and the stale count is published when
// the pass is complete.
func TestScannerBoundedPass(t *testing.T) {
	proc, dir := scanFixture(t, "vmastat.1", "vmastat.2", "vmastat.3", "vmastat.4", "vmastat.5", "vmastat.2000", "vmastat.3000", "notes.txt")
	live := &fakeLive{live: map[int]bool{1: true, 2: true}}
	s := vmastats.NewScanner(vmastats.ScannerConfig{Dirs: []string{dir}, ProcPath: proc, Liveness: live, MaxNames: 3})
	var found []int
	for i := 0; ; i++ {
		if i > 4 {
			t.Fatal("no complete pass in 5 scans of 3 names over 8 names")
		}
		sc, err := s.Scan(nil)
		if err != nil {
			t.Fatal(err)
		}
		if sc.NamesRead > 3 {
			t.Errorf("scan %d read %d names, want at most 3", i, sc.NamesRead)
		}
		for _, c := range sc.Candidates {
			found = append(found, c.PID)
		}
		if sc.PassComplete {
			if sc.Stale != 5 {
				t.Errorf("stale = %d after the pass, want 5 (3, 4, 5 dead; 2000, 3000 above pid_max)", sc.Stale)
			}
			break
		}
	}
	sort.Ints(found)
	if diff := cmp.Diff([]int{1, 2}, found); diff != "" {
		t.Errorf("candidates over the pass (-want +got):\n%s", diff)
	}
	for _, pid := range live.asked {
		if pid > 1000 {
			t.Errorf("asked whether pid %d above pid_max is alive", pid)
		}
	}
}

// TestScannerLooksUpLivePIDs gives the scanner a PIDLister and a budget
// of one name: the files of live pids are candidates at the first scan,
// wherever they are in the directory.
func TestScannerLooksUpLivePIDs(t *testing.T) {
	proc, dir := scanFixture(t, "vmastat.9", "vmastat.8", "vmastat.7", "vmastat.2", "vmastat.4")
	s := vmastats.NewScanner(vmastats.ScannerConfig{Dirs: []string{dir}, ProcPath: proc, Liveness: fakeLister{&fakeLive{live: map[int]bool{2: true, 4: true, 6: true}}}, MaxNames: 1})
	sc, err := s.Scan(nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, c := range sc.Candidates {
		got = append(got, c.PID)
	}
	if diff := cmp.Diff([]int{2, 4}, got); diff != "" {
		t.Errorf("candidates (-want +got):\n%s", diff)
	}
	if sc.NamesRead > 1 || sc.Lookups != 3 {
		t.Errorf("read %d names and looked up %d, want at most 1 and 3", sc.NamesRead, sc.Lookups)
	}
}
