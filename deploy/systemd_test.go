package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

const systemdUnit = "systemd/nic_exporter.service"

// TestSystemdUnitVerifies runs systemd-analyze verify on the shipped unit.
// verify checks that ExecStart's program exists and is executable, so the
// test points ExecStart at the binary it built; every other line is
// verified as shipped, and the flags are checked by running the exporter
// with them.
func TestSystemdUnitVerifies(t *testing.T) {
	analyze := testenv.LookPath(t, "systemd-analyze")
	b, err := os.ReadFile(systemdUnit)
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	var lines []string
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "ExecStart="); ok {
			fields := strings.Fields(rest)
			if len(fields) == 0 || fields[0] != "/usr/local/bin/nic_exporter" {
				t.Fatalf("ExecStart=%s: want /usr/local/bin/nic_exporter, where the README installs it", rest)
			}
			args = fields[1:]
			line = "ExecStart=" + strings.Join(append([]string{exporterBinary}, args...), " ")
		}
		lines = append(lines, line)
	}
	if args == nil {
		t.Fatal("no ExecStart line")
	}
	unit := filepath.Join(t.TempDir(), "nic_exporter.service")
	if err := os.WriteFile(unit, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", unit).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) != 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	checkArgs(t, args)
}
