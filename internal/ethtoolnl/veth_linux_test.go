package ethtoolnl_test

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/nic-exporter/nic_exporter/internal/ethtoolnl"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

func run(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestVeth talks to this machine's kernel: a veth pair in a network
// namespace the test creates (and removes, also on failure).
func TestVeth(t *testing.T) {
	testenv.Root(t)
	testenv.LookPath(t, "ip")
	ns := fmt.Sprintf("nicexp-ethnl-%d", os.Getpid())
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() }) // before the add: nothing stays if it fails
	run(t, "ip", "netns", "add", ns)
	run(t, "ip", "-n", ns, "link", "add", "nl0", "type", "veth", "peer", "name", "nl1")

	c, err := ethtoolnl.New(ethtoolnl.Config{Netns: "/run/netns/" + ns}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	link := func() bool {
		t.Helper()
		ls, err := c.LinkState("nl0")
		if err != nil {
			t.Fatal(err)
		}
		if ls.Link == nil {
			t.Fatal("veth reported no link attribute")
		}
		if ls.ExtState != nil || ls.SQI != nil {
			t.Errorf("veth reported %+v; it implements neither extended state nor SQI", ls)
		}
		return *ls.Link
	}
	if link() {
		t.Error("link up while both ends are down")
	}
	run(t, "ip", "-n", ns, "link", "set", "nl0", "up")
	if link() {
		t.Error("link up while the peer is down")
	}
	run(t, "ip", "-n", ns, "link", "set", "nl1", "up")
	if !link() {
		t.Error("link down with both ends up")
	}

	if _, err := c.FEC("nl0"); !ethtoolnl.IsNotSupported(err) {
		t.Errorf("FEC on veth: %v, want EOPNOTSUPP", err)
	}
	if _, err := c.LinkState("nosuchdev0"); err == nil || !strings.Contains(err.Error(), "nosuchdev0") {
		t.Errorf("LinkState of a missing device: %v", err)
	}
	// The interface lives only in the test's namespace.
	if _, err := os.Stat("/sys/class/net/nl0"); err == nil {
		t.Error("nl0 leaked into the host namespace")
	}
}
