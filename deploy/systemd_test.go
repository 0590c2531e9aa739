package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

const (
	systemdUnit   = "systemd/nic_exporter.service"
	systemdVMA    = "systemd/vma.conf"
	systemdEnv    = "systemd/nic_exporter.default"
	unitBinary    = "/usr/bin/nic_exporter"
	unitOptsVar   = "$NIC_EXPORTER_OPTS"
	unitEnvOption = "NIC_EXPORTER_OPTS"
)

// Exposure bounds of `systemd-analyze security --offline=true`, recorded
// in docs/security.md ("systemd unit"): the unit as shipped scored 2.0
// and with the VMA drop-in 2.8 on systemd 252 (the unit of the 0.1.0
// development tree scored 3.7). A change that loosens the sandbox fails
// here; a change that tightens it should lower the bounds.
const (
	maxExposure    = 2.0
	maxExposureVMA = 2.8
)

// installUnit writes the shipped unit into root's /etc/systemd/system with
// ExecStart pointing at the exporter the tests built (systemd-analyze
// verify checks that the program exists and is executable; every other
// line is as shipped), and the VMA drop-in when vma is true. It returns
// the unit's path and ExecStart's arguments after the program.
func installUnit(t *testing.T, root string, vma bool) (string, []string) {
	t.Helper()
	b, err := os.ReadFile(systemdUnit)
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	var lines []string
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "ExecStart="); ok {
			fields := strings.Fields(rest)
			if len(fields) == 0 || fields[0] != unitBinary {
				t.Fatalf("ExecStart=%s: want %s, where the packages install it", rest, unitBinary)
			}
			args = fields[1:]
			line = "ExecStart=" + strings.Join(append([]string{exporterBinary}, args...), " ")
		}
		lines = append(lines, line)
	}
	if args == nil {
		t.Fatal("no ExecStart line")
	}
	dir := filepath.Join(root, "etc/systemd/system")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	unit := filepath.Join(dir, "nic_exporter.service")
	if err := os.WriteFile(unit, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	if vma {
		dropin, err := os.ReadFile(systemdVMA)
		if err != nil {
			t.Fatal(err)
		}
		d := filepath.Join(dir, "nic_exporter.service.d")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "vma.conf"), dropin, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return unit, args
}

// TestSystemdUnitVerifies runs systemd-analyze verify on the shipped unit
// and checks its flags by running the exporter with them. The flags the
// environment file adds are empty by default; the unit passes them last
// so that they can override the unit's.
func TestSystemdUnitVerifies(t *testing.T) {
	analyze := testenv.LookPath(t, "systemd-analyze")
	unit, args := installUnit(t, t.TempDir(), false)
	out, err := exec.Command(analyze, "verify", unit).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) != 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	if len(args) == 0 || args[len(args)-1] != unitOptsVar {
		t.Errorf("ExecStart arguments %v: want %s last", args, unitOptsVar)
	}
	checkArgs(t, args[:len(args)-1])

	env, err := os.ReadFile(systemdEnv)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^` + unitEnvOption + `=""$`).Match(env) {
		t.Errorf("%s does not set %s=\"\":\n%s", systemdEnv, unitEnvOption, env)
	}
}

// TestSystemdUnitExposure scores the unit, alone and with the VMA drop-in,
// with systemd-analyze security in offline mode on a root directory that
// holds only the unit, and fails when the exposure grows above the
// recorded bound.
func TestSystemdUnitExposure(t *testing.T) {
	analyze := testenv.LookPath(t, "systemd-analyze")
	for _, tc := range []struct {
		name  string
		vma   bool
		bound float64
	}{
		{"default", false, maxExposure},
		{"vma", true, maxExposureVMA},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			installUnit(t, root, tc.vma)
			got := exposure(t, analyze, root)
			t.Logf("exposure %.1f (bound %.1f)", got, tc.bound)
			if got > tc.bound {
				t.Errorf("systemd-analyze security: exposure %.1f, want at most %.1f", got, tc.bound)
			}
		})
	}
}

var exposureRE = regexp.MustCompile(`Overall exposure level for nic_exporter\.service: ([0-9.]+)`)

// exposure returns the overall exposure level systemd-analyze security
// gives nic_exporter.service installed under root.
func exposure(t *testing.T, analyze, root string) float64 {
	t.Helper()
	cmd := exec.Command(analyze, "security", "--no-pager", "--offline=true", "--root="+root, "nic_exporter.service")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze security: %v\n%s", err, out)
	}
	m := exposureRE.FindSubmatch(out)
	if m == nil {
		t.Fatalf("systemd-analyze security printed no exposure level:\n%s", out)
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
