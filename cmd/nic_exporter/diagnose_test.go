package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestDiagnoseSubcommand runs `nic_exporter diagnose` over the fixture
// bundles of diagnose and checks the exit statuses and help.
func TestDiagnoseSubcommand(t *testing.T) {
	bundles := filepath.Join("..", "..", "diagnose", "testdata", "bundles")
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{filepath.Join(bundles, "mlx5_healthy")}, 0, "0 finding(s)"},
		{[]string{filepath.Join(bundles, "ena_fault")}, 1, "NICENAWatchdogExpired"},
		{[]string{"--format=json", filepath.Join(bundles, "mlx5_fault")}, 1, `"alert": "NICInfiniBandPortNotLinkUp"`},
		{[]string{"--format=openmetrics", filepath.Join(bundles, "ena_fault")}, 1, "# EOF"},
		{[]string{filepath.Join(bundles, "missing")}, 2, ""},
		{[]string{"--format=xml", filepath.Join(bundles, "ena_fault")}, 2, ""},
		{[]string{"--help"}, 0, "EXIT STATUS"},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		code := runDiagnose(tt.args, &out, &errb)
		if code != tt.code {
			t.Errorf("%v: exit %d, want %d (stderr %q)", tt.args, code, tt.code, errb.String())
		}
		if !strings.Contains(out.String(), tt.want) {
			t.Errorf("%v: stdout lacks %q:\n%s", tt.args, tt.want, out.String())
		}
		if code == 2 && strings.Count(errb.String(), "\n") != 1 {
			t.Errorf("%v: stderr %q, want one line", tt.args, errb.String())
		}
	}
}

// TestDiagnoseEscapesArgumentErrors checks that an argument a shell glob
// took from a hostile file name ("--" and a terminal escape) is reported
// escaped, in one line.
func TestDiagnoseEscapesArgumentErrors(t *testing.T) {
	var out, errb bytes.Buffer
	code := runDiagnose([]string{"--\x1b[2J\nbundle x: 0 finding(s)"}, &out, &errb)
	if code != 2 || strings.Count(errb.String(), "\n") != 1 || strings.ContainsAny(errb.String(), "\x1b") {
		t.Errorf("exit %d, stderr %q: want 2 and one escaped line", code, errb.String())
	}
}
