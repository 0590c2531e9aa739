package infiniband

import "testing"

// TestListings checks the listing memory: a listing is used for
// relistEvery polls, drop forgets one directory, and retain forgets the
// devices that were not seen, so the memory follows the devices present.
func TestListings(t *testing.T) {
	var l listings
	l.next()
	cd := &counterDir{}
	l.put("mlx5_0#a", "counters", cd)
	l.put("mlx5_1#b", "counters", &counterDir{})
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
	l.put("mlx5_0#a", "hw_counters", &counterDir{})
	l.drop("mlx5_0#a", "hw_counters")
	if l.get("mlx5_0#a", "hw_counters") != nil {
		t.Errorf("dropped listing still used")
	}
	l.retain(map[string]bool{"mlx5_0#a": true})
	if len(l.byID) != 1 || l.byID["mlx5_1#b"] != nil {
		t.Errorf("after retain the memory holds %d devices, want only mlx5_0#a", len(l.byID))
	}
}
