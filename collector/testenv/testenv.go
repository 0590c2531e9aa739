// Package testenv lets tests that need something the machine may lack (a
// tool such as promtool or qemu, root, a kernel feature) skip locally but
// fail in CI, where NIC_EXPORTER_REQUIRE_ALL=1 turns every such skip into
// a failure.
package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// RequireAllVar is the environment variable CI sets.
const RequireAllVar = "NIC_EXPORTER_REQUIRE_ALL"

// Strict reports whether missing prerequisites are failures.
func Strict() bool { return os.Getenv(RequireAllVar) == "1" }

// Require skips the test when ok is false, or fails it when Strict.
func Require(t testing.TB, ok bool, what string) {
	t.Helper()
	if ok {
		return
	}
	if Strict() {
		t.Fatalf("prerequisite missing: %s (%s=1 makes this a failure)", what, RequireAllVar)
	}
	t.Skipf("prerequisite missing: %s", what)
}

// LookPath returns the path of the named tool, or skips (fails in CI).
func LookPath(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	Require(t, err == nil, name+" in $PATH")
	return p
}

// Root skips unless the test runs as root (fails in CI).
func Root(t testing.TB) {
	t.Helper()
	Require(t, os.Geteuid() == 0, "root")
}
