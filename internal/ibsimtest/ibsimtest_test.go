//go:build linux

package ibsimtest

import (
	"strings"
	"testing"
)

// TestStart brings the small fabric up and checks with ibnetdiscover
// that OpenSM gave every node a LID.
func TestStart(t *testing.T) {
	f := Start(t, Small)
	out := f.Run(t, "", "ibnetdiscover")
	t.Log(out)
	for _, name := range []string{"leaf1", "leaf2", "spine1", "hca8"} {
		if !strings.Contains(out, "\""+name+"\"") {
			t.Errorf("ibnetdiscover does not list %s", name)
		}
	}
	for _, args := range [][]string{{"2", "35"}, {"-x", "2", "35"}, {"-E", "2", "2"}, {"-D", "2", "2"}} {
		t.Log(f.Run(t, "hca2", "perfquery", args...))
	}
	t.Log(f.Run(t, "", "smpquery", "-D", "nodeinfo", "0,1"))
	t.Log(f.Run(t, "", "smpquery", "portinfo", "2", "3"))
	t.Log(f.Console(t, "Attached"))
}
