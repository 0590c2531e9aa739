package rtnl

import (
	"slices"
	"testing"
)

// TestWatcherDumpsOnlyAfterAChange runs a Watcher on a namespace the test
// creates and checks that it dumps the links at the first call and after
// a link was added, renamed or removed, and answers from its last dump
// otherwise, always with the namespace's current interfaces.
func TestWatcherDumpsOnlyAfterAChange(t *testing.T) {
	a, _ := newNet(t, 0)
	w, err := NewWatcher("/run/netns/" + a)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	check := func(when string, wantDumps uint64, want ...string) {
		t.Helper()
		ifs, err := w.Interfaces()
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		var names []string
		for _, i := range ifs {
			if i.Index <= 0 {
				t.Errorf("%s: %s has index %d", when, i.Name, i.Index)
			}
			names = append(names, i.Name)
		}
		slices.Sort(names)
		if !slices.Equal(names, want) {
			t.Errorf("%s: interfaces %v, want %v", when, names, want)
		}
		if got := w.Dumps(); got != wantDumps {
			t.Errorf("%s: %d link dumps in all, want %d", when, got, wantDumps)
		}
	}
	check("first call", 1, "lo", "va")
	check("no change", 1, "lo", "va")
	check("still no change", 1, "lo", "va")
	run(t, "ip", "-n", a, "link", "add", "wx", "type", "veth", "peer", "name", "wy")
	check("after an add", 2, "lo", "va", "wx", "wy")
	check("no change after the add", 2, "lo", "va", "wx", "wy")
	run(t, "ip", "-n", a, "link", "set", "wy", "name", "wz")
	check("after a rename", 3, "lo", "va", "wx", "wz")
	run(t, "ip", "-n", a, "link", "del", "wx")
	check("after a removal", 4, "lo", "va")
	check("no change after the removal", 4, "lo", "va")
}
