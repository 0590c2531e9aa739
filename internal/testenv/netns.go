package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Netns creates a network namespace for the test, named prefix-<pid> so
// that the leak check of MainCheckingLeaks recognises it, and deletes it
// when the test ends, failed or not (deleting a namespace deletes the
// veths inside it). It requires root and iproute2's ip (skips locally,
// fails in CI). It returns the namespace's name and its path under
// /run/netns, which the exporter's namespace options take.
func Netns(t testing.TB, prefix string) (name, path string) {
	t.Helper()
	Root(t)
	LookPath(t, "ip")
	name = fmt.Sprintf("%s-%d", prefix, os.Getpid())
	// Registered before the namespace exists: a failed add leaves
	// nothing, and a half-made one is still removed.
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	Run(t, "ip", "netns", "add", name)
	return name, "/run/netns/" + name
}

// Run runs a command and fails the test with its output if it fails.
func Run(t testing.TB, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
