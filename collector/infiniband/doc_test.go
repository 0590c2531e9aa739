package infiniband

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nic-exporter/nic_exporter/collector/exposition"
)

// TestInfiniBandDocumented checks that every metric family the infiniband
// collector can emit is named in the infiniband section of
// docs/metrics.md, so the reference cannot drift from the code.
func TestInfiniBandDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut("\n"+string(b), "\n## infiniband\n")
	if !ok {
		t.Fatal("docs/metrics.md has no \"## infiniband\" section")
	}
	if next := strings.Index(section, "\n## "); next >= 0 {
		section = section[:next]
	}
	descs := []*exposition.Desc{ibInfo, ibPortState, ibPortPhysState, ibPortRate, ibPortInfo, ibPortNetdev, ibPortLID, ibPortSMLID, ibCounterSaturated}
	for _, c := range ibPortCounters {
		descs = append(descs, c.desc)
	}
	for _, d := range ibHWCounters {
		descs = append(descs, d)
	}
	for _, d := range descs {
		if !strings.Contains(section, "`"+d.Name()+"`") {
			t.Errorf("docs/metrics.md does not document %s", d.Name())
		}
	}
	for n, name := range ibPhysStates {
		if !strings.Contains(section, fmt.Sprintf("| %d | %s |", n, name)) {
			t.Errorf("docs/metrics.md does not list the physical state %d %s", n, name)
		}
	}
	for n, name := range ibPortStates {
		if !strings.Contains(section, fmt.Sprintf("%d %s", n, name)) {
			t.Errorf("docs/metrics.md does not list the port state %d %s", n, name)
		}
	}
}
