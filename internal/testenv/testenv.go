// Package testenv lets tests that need something the machine may lack (a
// tool such as promtool or qemu, root, a kernel feature) skip locally but
// fail in CI, where NIC_EXPORTER_REQUIRE_ALL=1 turns every such skip into
// a failure.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// HangGuard bounds a test's wait for something a working program does in
// milliseconds (a poll, a log line, an exit): it only keeps a broken build
// from hanging until go test's timeout, and is no measure of speed, which
// tests never assert (benchmarks measure it). It is long because CI runs
// on two cores that may be busy with other work, and a wait that
// succeeds ends as soon as its condition holds.
const HangGuard = 2 * time.Minute

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

// HostKernelLogVar is the environment variable that lets a test do, on
// the host, something after which the kernel itself logs a line (renaming
// an interface prints "renamed from"). CI sets it on its throwaway
// machines; a developer's make test leaves it unset, skips those tests and
// leaves the host's kernel log as it was.
const HostKernelLogVar = "NIC_EXPORTER_HOST_KERNEL_LOG"

// HostKernelLog skips the test unless HostKernelLogVar is 1, and fails it
// instead when Strict: CI sets both.
func HostKernelLog(t testing.TB, why string) {
	t.Helper()
	Require(t, os.Getenv(HostKernelLogVar) == "1", fmt.Sprintf("%s=1 (%s: the kernel logs a line on this host)", HostKernelLogVar, why))
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

// BuildExporter builds the nic_exporter command in pkgDir (a path such as
// "../cmd/nic_exporter", relative to the test's package) as a static
// binary in a new temporary directory. It is meant for TestMain; cleanup
// removes the directory. The build runs in pkgDir, so it uses the module
// that holds the command (its go.mod and go.sum, the versions the release
// binary gets) even when the caller is a test of another module, such as
// the deploy tests.
func BuildExporter(pkgDir string) (binary string, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "nic_exporter-test-")
	if err != nil {
		return "", nil, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	binary = filepath.Join(dir, "nic_exporter")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Dir = pkgDir
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("building %s: %w\n%s", pkgDir, err, out)
	}
	return binary, cleanup, nil
}
