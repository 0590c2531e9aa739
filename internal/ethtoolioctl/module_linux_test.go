package ethtoolioctl

import (
	"errors"
	"os"
	"syscall"
	"testing"

	"github.com/nic-exporter/nic_exporter/internal/errclass"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// TestModuleVeth asks this machine's kernel for the module of a veth in
// a namespace the test creates and removes: veth has no module, so both
// legacy ioctls fail with EOPNOTSUPP, and a missing interface with ENODEV.
func TestModuleVeth(t *testing.T) {
	ns, nsPath := testenv.Netns(t, "nicexp-ioctlmod")
	testenv.Run(t, "ip", "-n", ns, "link", "add", "mod0", "type", "veth", "peer", "name", "mod1")

	s, err := New(nsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	if _, err := s.ModuleInfo("mod0"); !errclass.IsUnsupported(err) || errclass.IsIO(err) {
		t.Errorf("ModuleInfo on veth: %v, want EOPNOTSUPP", err)
	}
	if _, err := s.ModuleEEPROM("mod0", 256); !errclass.IsUnsupported(err) {
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
