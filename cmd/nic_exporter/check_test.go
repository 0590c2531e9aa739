package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/nic-exporter/nic_exporter/nodehealth"
)

// runCheckBinary runs the built exporter's check subcommand.
func runCheckBinary(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"check"}, args...)...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return o.String(), e.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), 0
}

// TestCheckFormats runs nic_exporter check against a healthy demo
// exporter, one with a firmware fault and none at all, in each format.
func TestCheckFormats(t *testing.T) {
	healthy := start(t, "--demo", "--health.interval=200ms")
	healthy.waitVerdict(t, "a verdict", func(v *nodehealth.Verdict) bool { return v.Status != nodehealth.VerdictUnknown })
	sick := start(t, "--demo", "--demo.faults=fw_fatal@0s", "--health.interval=200ms")
	sick.waitVerdict(t, "a verdict", func(v *nodehealth.Verdict) bool { return v.Status != nodehealth.VerdictUnknown })
	gone := freePort(t)
	const sickReason = "NICFirmwareFatal (FirmwareFatalError) on pci/0000:08:00.0, pci/0000:08:00.1"
	for _, tc := range []struct {
		name string
		args []string
		want string
		code int
	}{
		{"text ok", []string{"--url=http://" + healthy.addr}, "OK: no NIC condition is true\n", 0},
		{"nhc ok", []string{"--url=http://" + healthy.addr + "/health", "--format=nhc"}, "OK\n", 0},
		{"npd ok", []string{"--url=http://" + healthy.addr, "--format=npd"}, "no NIC condition is true\n", 0},
		{"text sick", []string{"--url=http://" + sick.addr}, "UNHEALTHY: " + sickReason + "\n  NICFirmwareFatal (FirmwareFatalError, page): ", 1},
		{"nhc sick", []string{"--url=http://" + sick.addr, "--format=nhc"}, "UNHEALTHY: " + sickReason + "\n", 1},
		{"npd sick", []string{"--url=http://" + sick.addr, "--format=npd"}, sickReason + "\n", 1},
		{"npd sick, short", []string{"--url=http://" + sick.addr, "--format=npd", "--npd.max-output-length=30"}, "NICFirmwareFatal (FirmwareF...\n", 1},
		{"one condition, true", []string{"--url=http://" + sick.addr, "--format=npd", "--condition=NICFirmwareFatal"}, sickReason + "\n", 1},
		{"one condition, false", []string{"--url=http://" + sick.addr, "--format=nhc", "--condition=NICLinkDown"}, "OK\n", 0},
		{"a condition that does not exist", []string{"--url=http://" + sick.addr, "--condition=NICFirmwareFatl"}, "UNKNOWN: no node condition NICFirmwareFatl; the verdict has NICFirmwareFatal, ", 2},
		{"no daemon", []string{"--url=http://" + gone, "--format=npd"}, "reading the node health: Get ", 2},
		{"not the exporter", []string{"--url=http://" + healthy.addr + "/metrics"}, "UNKNOWN: the node health answer (HTTP 200 OK) is not a verdict", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runCheckBinary(t, tc.args...)
			if !strings.HasPrefix(out, tc.want) || code != tc.code {
				t.Errorf("got %q, exit %d; want %q..., exit %d\nstderr: %s", out, code, tc.want, tc.code, errOut)
			}
		})
	}
	if _, errOut, code := runCheckBinary(t, "--url=ftp://x"); code != 2 || !strings.Contains(errOut, "want an http") {
		t.Errorf("--url=ftp://x: exit %d, %q", code, errOut)
	}
}
