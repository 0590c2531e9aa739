package infiniband_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/infiniband"
)

// TestInfiniBandListsCounterDirectories checks when the counter
// directories of a port are listed: once for relistEvery polls, again
// after them (a counter file added in between appears then), at the next
// poll after a listed file disappeared (which is neither an error nor a
// series), and at once for a re-created device (a new node GUID).
func TestInfiniBandListsCounterDirectories(t *testing.T) {
	sysfs := fixture(t)
	rfs := newRecordFS(sysfs)
	c := newIB(t, sysfs, rfs, "mlx5_0", "")
	errs := collector.NewSourceErrors(zap.NewNop(), time.Hour)
	const (
		hwDir   = "class/infiniband/mlx5_0/ports/1/hw_counters"
		cntDir  = "class/infiniband/mlx5_0/ports/1/counters"
		added   = `nic_infiniband_hw_np_cnp_sent_total{device="mlx5_0",port="1"} 7`
		removed = `nic_infiniband_hw_out_of_sequence_total{device="mlx5_0",port="1"}`
	)
	host := func(rel string) string {
		dir, err := filepath.EvalSymlinks(filepath.Join(sysfs, "class/infiniband/mlx5_0"))
		if err != nil {
			t.Fatal(err)
		}
		return filepath.Join(dir, rel)
	}
	poll := func() string {
		t.Helper()
		snap, err := ibPoll(t, c, errs)
		if err != nil {
			t.Fatal(err)
		}
		return snap.String()
	}
	lists := func(when string, want int) {
		t.Helper()
		for _, dir := range []string{hwDir, cntDir} {
			if got := rfs.lists(dir); got != want {
				t.Errorf("%s: %s listed %d times, want %d", when, dir, got, want)
			}
		}
	}

	for i := 0; i < infiniband.RelistEvery; i++ {
		out := poll()
		if i == 0 && !strings.Contains(out, removed) {
			t.Fatalf("first poll lacks %s", removed)
		}
		if i == 1 {
			// Added after the listing: not read until the next one.
			if err := os.WriteFile(host("ports/1/hw_counters/np_cnp_sent"), []byte("7\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if strings.Contains(out, added) {
			t.Fatalf("poll %d reads np_cnp_sent before the directory was listed again", i+1)
		}
	}
	lists("after relistEvery polls", 1)
	if out := poll(); !strings.Contains(out, added+"\n") {
		t.Errorf("the poll after relistEvery polls lacks %s", added)
	}
	lists("after relistEvery+1 polls", 2)

	// A listed file that disappears: no series, no error, listed again.
	before := reasons(errs)
	if err := os.Remove(host("ports/1/hw_counters/out_of_sequence")); err != nil {
		t.Fatal(err)
	}
	if out := poll(); strings.Contains(out, removed) {
		t.Errorf("series of a removed counter file still exported")
	}
	if got := reasons(errs); !equalCounts(got, before) {
		t.Errorf("source errors after a counter file went away = %v, want %v", got, before)
	}
	if got := rfs.lists(hwDir); got != 2 {
		t.Errorf("hw_counters listed %d times in the poll that found a file gone, want 2", got)
	}
	poll()
	if got := rfs.lists(hwDir); got != 3 {
		t.Errorf("hw_counters listed %d times in the poll after a file was gone, want 3", got)
	}

	// A re-created device (new node GUID) is listed at once.
	if err := os.WriteFile(host("node_guid"), []byte("58a2:e103:00da:e627\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	poll()
	if got := rfs.lists(cntDir); got != 3 {
		t.Errorf("counters/ of a re-created device listed %d times in all, want 3", got)
	}
}
