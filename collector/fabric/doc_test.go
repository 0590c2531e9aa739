package fabric

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFabricDocumented checks that every metric family the fabric
// collector can emit is in the fabric section of docs/metrics.md.
func TestFabricDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut("\n"+string(b), "\n## fabric\n")
	if !ok {
		t.Fatal("docs/metrics.md has no \"## fabric\" section")
	}
	if next := strings.Index(section, "\n## "); next >= 0 {
		section = section[:next]
	}
	for _, d := range descs() {
		if !strings.Contains(section, "`"+d.Name()+"`") {
			t.Errorf("docs/metrics.md, fabric section, does not document %s", d.Name())
		}
	}
}
