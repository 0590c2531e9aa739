package ethtoolioctl

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// TestModuleVeth asks this machine's kernel for the module of a veth in
// a namespace the test creates and removes: veth has no module, so both
// legacy ioctls fail with EOPNOTSUPP, and a missing interface with ENODEV.
func TestModuleVeth(t *testing.T) {
	testenv.Root(t)
	testenv.LookPath(t, "ip")
	ns := fmt.Sprintf("nicexp-ioctlmod-%d", os.Getpid())
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	ip("netns", "add", ns)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	ip("-n", ns, "link", "add", "mod0", "type", "veth", "peer", "name", "mod1")

	s, err := New("/run/netns/" + ns)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	if _, err := s.ModuleInfo("mod0"); !IsNotSupported(err) || IsModuleIO(err) {
		t.Errorf("ModuleInfo on veth: %v, want EOPNOTSUPP", err)
	}
	if _, err := s.ModuleEEPROM("mod0", 256); !IsNotSupported(err) {
		t.Errorf("ModuleEEPROM on veth: %v, want EOPNOTSUPP", err)
	}
	if _, err := s.ModuleInfo("nosuchdev0"); !errors.Is(err, syscall.ENODEV) {
		t.Errorf("ModuleInfo of a missing device: %v, want ENODEV", err)
	}
	if _, err := s.ModuleEEPROM("mod0", 0); err == nil {
		t.Error("ModuleEEPROM of 0 bytes accepted")
	}
	// The veth lives only in the test's namespace.
	if _, err := os.Stat("/sys/class/net/mod0"); err == nil {
		t.Error("mod0 leaked into the host namespace")
	}
}
