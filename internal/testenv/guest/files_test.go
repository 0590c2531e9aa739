package guest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// TestInitramfsFiles checks that Config.Files puts each host file at its
// guest path with its content and mode, next to the test binary.
func TestInitramfsFiles(t *testing.T) {
	_, err := os.Stat(busyboxPath)
	testenv.Require(t, err == nil, "busybox-static ("+busyboxPath+")")
	dir := t.TempDir()
	host := filepath.Join(dir, "nic_exporter")
	if err := os.WriteFile(host, []byte("exporter"), 0o755); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	if err := os.WriteFile(data, []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	testBin := filepath.Join(dir, "guest.test")
	if err := os.WriteFile(testBin, []byte("test"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "initrd.cpio")
	cfg := Config{Run: "^TestX$", Files: map[string]string{"/nic_exporter": host, "/etc/x/data": data}}
	if err := buildInitramfs(out, &Kernel{}, testBin, cfg); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	_, got := readArchive(t, b)
	for name, want := range map[string]entry{
		"nic_exporter":    {mode: modeFile | 0o755, data: []byte("exporter")},
		"etc/x/data":      {mode: modeFile | 0o600, data: []byte("data")},
		guestTestPath[1:]: {mode: modeFile | 0o755, data: []byte("test")},
	} {
		if e, ok := got[name]; !ok || e.mode != want.mode || string(e.data) != string(want.data) {
			t.Errorf("%s: entry %o %q (present %v), want %o %q", name, e.mode, e.data, ok, want.mode, want.data)
		}
	}
}
