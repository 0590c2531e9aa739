package ethtoolnl

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.bin from the running kernel (TestVeth)")

// readReply returns a reply recorded from a real kernel by TestVeth
// -update.
func readReply(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
