package ethtoolnl_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/nic-exporter/nic_exporter/internal/errclass"
	"github.com/nic-exporter/nic_exporter/internal/ethtoolnl"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// TestVeth talks to this machine's kernel: a veth pair in a network
// namespace the test creates (and removes, also on failure).
func TestVeth(t *testing.T) {
	ns, nsPath := testenv.Netns(t, "nicexp-ethnl")
	testenv.Run(t, "ip", "-n", ns, "link", "add", "nl0", "type", "veth", "peer", "name", "nl1")

	c, err := ethtoolnl.New(ethtoolnl.Config{Netns: nsPath}, zaptest.NewLogger(t))
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
	testenv.Run(t, "ip", "-n", ns, "link", "set", "nl0", "up")
	if link() {
		t.Error("link up while the peer is down")
	}
	testenv.Run(t, "ip", "-n", ns, "link", "set", "nl1", "up")
	if !link() {
		t.Error("link down with both ends up")
	}

	if _, err := c.FEC("nl0"); !errclass.IsUnsupported(err) {
		t.Errorf("FEC on veth: %v, want EOPNOTSUPP", err)
	}
	if _, err := c.LinkState("nosuchdev0"); err == nil || !strings.Contains(err.Error(), "nosuchdev0") {
		t.Errorf("LinkState of a missing device: %v", err)
	}

	// STATS: veth implements none of the standard groups; the kernel
	// still answers, with every group present and no counter in it.
	st, err := c.Stats("nl0")
	if err != nil {
		t.Fatalf("Stats on veth: %v", err)
	}
	if len(st.Groups) != 0 || st.RxHist != nil || st.TxHist != nil {
		t.Errorf("Stats on veth = %+v, want no counters", st)
	}
	if _, err := c.Stats("nosuchdev0"); !errclass.IsNoDevice(err) {
		t.Errorf("Stats of a missing device: %v, want ENODEV", err)
	}
	if ethtoolnl.Update() {
		raw, err := c.RawStats("nl0")
		if err != nil {
			t.Fatal(err)
		}
		writeTestdata(t, "stats-veth.bin", raw)
		// The string sets of the four groups: ETH_SS_STATS_ETH_PHY (17)
		// to ETH_SS_STATS_RMON (20) in include/uapi/linux/ethtool.h.
		raw, err = c.RawStringSets(17, 18, 19, 20)
		if err != nil {
			t.Fatal(err)
		}
		writeTestdata(t, "strset-stats-std.bin", raw)
	}

	// MODULE_EEPROM: veth has no module; the kernel's fallback to the
	// legacy driver callbacks finds none either.
	req := ethtoolnl.ModuleEEPROMRequest{Addr: 0x50, Length: 128}
	_, err = c.ModuleEEPROM("nl0", req)
	if !errclass.IsUnsupported(err) || errclass.IsIO(err) {
		t.Errorf("ModuleEEPROM on veth: %v, want EOPNOTSUPP", err)
	}
	if _, err := c.ModuleEEPROM("nosuchdev0", req); !errclass.IsNoDevice(err) {
		t.Errorf("ModuleEEPROM of a missing device: %v, want ENODEV", err)
	}
	bad := req
	bad.Offset = 64 // crosses offset 128: refused before it reaches the kernel
	if _, err := c.ModuleEEPROM("nl0", bad); err == nil || errclass.IsUnsupported(err) {
		t.Errorf("ModuleEEPROM %v: %v, want a validation error", bad, err)
	}
	// The interface lives only in the test's namespace.
	if _, err := os.Stat("/sys/class/net/nl0"); err == nil {
		t.Error("nl0 leaked into the host namespace")
	}
}

func writeTestdata(t *testing.T, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join("testdata", name), b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote testdata/%s (%d bytes)", name, len(b))
}
