package modread

import (
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/nic-exporter/nic_exporter/internal/errclass"
	"github.com/nic-exporter/nic_exporter/internal/ethtoolioctl"
	"github.com/nic-exporter/nic_exporter/internal/ethtoolnl"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// TestVethFallback runs Reader over this machine's kernel, both real
// paths, on a veth in a namespace the test creates and removes: netlink
// answers EOPNOTSUPP, so Reader tries the ioctls, which answer
// EOPNOTSUPP too, and it remembers that.
func TestVethFallback(t *testing.T) {
	ns, nsPath := testenv.Netns(t, "nicexp-modread")
	testenv.Run(t, "ip", "-n", ns, "link", "add", "mr0", "type", "veth", "peer", "name", "mr1")

	log := zaptest.NewLogger(t)
	nl, err := ethtoolnl.New(ethtoolnl.Config{Netns: nsPath}, log)
	if err != nil {
		t.Fatal(err)
	}
	defer nl.Close()
	legacy, err := ethtoolioctl.New(nsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer legacy.Close()

	r := New(nl, legacy, log)
	for poll := 0; poll < 2; poll++ {
		if _, err := r.Module("mr0"); !errclass.IsUnsupported(err) || errclass.IsIO(err) {
			t.Fatalf("poll %d: %v, want EOPNOTSUPP", poll, err)
		}
	}
	if p := r.Path("mr0"); p != PathNone {
		t.Errorf("path %v, want none", p)
	}
	if _, err := r.Module("nosuchdev0"); !errclass.IsNoDevice(err) {
		t.Errorf("missing interface: %v, want ENODEV", err)
	}
	if _, err := ReadLegacy(legacy, "mr0"); !errclass.IsUnsupported(err) {
		t.Errorf("ReadLegacy on veth: %v, want EOPNOTSUPP", err)
	}
}
