package infiniband

import (
	"testing"

	"github.com/nic-exporter/nic_exporter/internal/sysfs"
)

// TestListings checks the listing memory: a listing is used for
// relistEvery polls, drop forgets one directory, and retain forgets the
// devices that were not seen, so the memory follows the devices present.
func TestListings(t *testing.T) {
	var l listings
	l.next()
	dir := func() []*sysfs.Dir {
		d, err := sysfs.OpenDir(sysfs.DirFS(t.TempDir()), ".")
		if err != nil {
			t.Fatal(err)
		}
		return []*sysfs.Dir{d}
	}
	cd := &counterDir{dirs: dir()}
	l.put("mlx5_0#a", "counters", cd)
	other := &counterDir{dirs: dir()}
	l.put("mlx5_1#b", "counters", other)
	for i := 1; i < relistEvery; i++ {
		l.next()
		if l.get("mlx5_0#a", "counters") != cd {
			t.Fatalf("listing not used %d polls after it was made", i)
		}
	}
	l.next()
	if l.get("mlx5_0#a", "counters") != nil {
		t.Errorf("listing used %d polls after it was made", relistEvery)
	}
	hw := &counterDir{dirs: dir()}
	l.put("mlx5_0#a", "hw_counters", hw)
	l.drop("mlx5_0#a", "hw_counters")
	if l.get("mlx5_0#a", "hw_counters") != nil || hw.dirs != nil {
		t.Errorf("dropped listing still used, or its directory open")
	}
	next := &counterDir{dirs: dir()}
	l.put("mlx5_0#a", "counters", next)
	if cd.dirs != nil {
		t.Errorf("a replaced listing's directory is still open")
	}
	l.retain(map[string]bool{"mlx5_0#a": true})
	if len(l.byID) != 1 || l.byID["mlx5_1#b"] != nil || other.dirs != nil {
		t.Errorf("after retain the memory holds %d devices, want only mlx5_0#a, with the others' directories closed", len(l.byID))
	}
	l.closeAll()
	if len(l.byID) != 0 || next.dirs != nil {
		t.Errorf("closeAll left %d devices or an open directory", len(l.byID))
	}
}
