package scalehost

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/ethtool"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/collector/infiniband"
	"github.com/nic-exporter/nic_exporter/collector/netdev"
	"github.com/nic-exporter/nic_exporter/collector/vma"
	"github.com/nic-exporter/nic_exporter/internal/ethtooldump"
	"github.com/nic-exporter/nic_exporter/vmastats"
)

// poll runs one poll of c and fails the test on an error or on any
// source error: a generated host must read cleanly.
func poll(t *testing.T, c collector.Collector) *exposition.Snapshot {
	t.Helper()
	errs := collector.NewSourceErrors(zap.NewNop(), time.Hour)
	b := exposition.NewBuilder()
	if err := c.Update(context.Background(), collector.NewPoll(b, errs)); err != nil {
		t.Fatalf("%s poll: %v", c.Name(), err)
	}
	if counts := errs.Counts(); len(counts) > 0 {
		t.Fatalf("%s poll: source errors %v", c.Name(), counts)
	}
	if b.Invalid() > 0 {
		t.Fatalf("%s poll: %d invalid samples", c.Name(), b.Invalid())
	}
	return b.Snapshot()
}

// count returns how many samples of the named family s has.
func count(s *exposition.Snapshot, family string) int {
	n := 0
	for _, line := range strings.Split(s.String(), "\n") {
		if strings.HasPrefix(line, family+"{") || strings.HasPrefix(line, family+" ") {
			n++
		}
	}
	return n
}

func TestSmallHostNetdev(t *testing.T) {
	c := Small()
	l, err := Write(t.TempDir(), c)
	if err != nil {
		t.Fatal(err)
	}
	snap := poll(t, netdev.New(netdev.Config{SysfsPath: l.Sysfs}, zap.NewNop()))
	ifaces := c.Ifaces()
	if got := snap.Devices(); got != len(ifaces) {
		t.Errorf("netdev found %d devices, want %d", got, len(ifaces))
	}
	tests := []struct {
		family string
		want   int
	}{
		{"nic_netdev_info", len(ifaces)},
		{"nic_netdev_up", len(ifaces)},
		{"nic_netdev_rx_bytes_total", len(ifaces)},
		{"nic_netdev_rx_nohandler_total", len(ifaces)},
		// Only the mlx5 functions have a PCIe link; every function has a
		// NUMA node.
		{"nic_pcie_link_width_lanes", c.Netdevs},
		{"nic_pcie_link_degraded", c.Netdevs},
		{"nic_pcie_numa_node", len(ifaces)},
	}
	for _, tt := range tests {
		if got := count(snap, tt.family); got != tt.want {
			t.Errorf("%s: %d series, want %d", tt.family, got, tt.want)
		}
	}
	text := snap.String()
	for _, ifc := range ifaces {
		want := `nic_netdev_info{device="` + ifc.Name + `",address=`
		if !strings.Contains(text, want) || !strings.Contains(text, `driver="`+ifc.Driver+`",pci_address="`+ifc.PCIAddress+`"`) {
			t.Errorf("no info series for %s (%s at %s)", ifc.Name, ifc.Driver, ifc.PCIAddress)
		}
	}
}

func TestStatNames(t *testing.T) {
	tests := []struct {
		name     string
		names    []string
		min, max int
	}{
		// 64 channels are the large host's ports: 304 + 64 × 89 statistics.
		{"mlx5/64", Mlx5StatNames(64), 6000, 6000},
		{"mlx5/1", Mlx5StatNames(1), 393, 393},
		{"ena/8", ENAStatNames(8), 280, 300},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if n := len(tt.names); n < tt.min || n > tt.max {
				t.Errorf("%d statistics, want %d..%d", n, tt.min, tt.max)
			}
			seen := map[string]bool{}
			for _, n := range tt.names {
				if seen[n] {
					t.Errorf("duplicate statistic %q", n)
				}
				seen[n] = true
				if n == "" || len(n) >= 32 { // ETH_GSTRING_LEN includes the NUL
					t.Errorf("statistic %q does not fit ETH_GSTRING_LEN", n)
				}
			}
		})
	}
}

// TestMlx5StatNamesMatchFixture checks that the generator writes the
// names, in the order, of the collector's 4-channel mlx5 fixture, whose
// names were verified against the driver's en_stats.c (the collector's
// TestMlx5DumpsUseDriverNames checks the fixture against the driver's
// name formats).
func TestMlx5StatNamesMatchFixture(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "..", "collector", "ethtool", "testdata", "mlx5.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := ethtooldump.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	got := Mlx5StatNames(4)
	if len(got) != len(d.Names) {
		t.Errorf("%d statistics, the fixture has %d", len(got), len(d.Names))
	}
	for i := 0; i < len(got) && i < len(d.Names); i++ {
		if got[i] != d.Names[i] {
			t.Fatalf("statistic %d is %q, the fixture has %q", i, got[i], d.Names[i])
		}
	}
}

func TestPCIAddressesAreUnique(t *testing.T) {
	c := Config{Netdevs: 200, ENANetdevs: 26, IBPorts: 40}
	seen := map[string]string{}
	add := func(addr, who string) {
		if other, ok := seen[addr]; ok {
			t.Errorf("%s and %s share PCI address %s", who, other, addr)
		}
		seen[addr] = who
	}
	for _, ifc := range c.Ifaces() {
		add(ifc.PCIAddress, ifc.Name)
	}
	for _, d := range c.IBDevices() {
		add(d.PCIAddress, d.Name)
	}
	if len(seen) != 266 {
		t.Errorf("%d addresses, want 266", len(seen))
	}
}

func TestWriteIsDeterministic(t *testing.T) {
	c := Small()
	a, b := t.TempDir(), t.TempDir()
	if _, err := Write(a, c); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(b, c); err != nil {
		t.Fatal(err)
	}
	files := 0
	err := filepath.Walk(a, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(a, p)
		files++
		if info.Mode()&os.ModeSymlink != 0 {
			ta, _ := os.Readlink(p)
			tb, err := os.Readlink(filepath.Join(b, rel))
			if err != nil || ta != tb {
				t.Errorf("%s: link %q vs %q (%v)", rel, ta, tb, err)
			}
			return nil
		}
		ca, _ := os.ReadFile(p)
		cb, err := os.ReadFile(filepath.Join(b, rel))
		if err != nil || string(ca) != string(cb) {
			t.Errorf("%s differs between two writes (%v)", rel, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Errorf("only %d files written", files)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		c    Config
		ok   bool
	}{
		{"large", Large(), true},
		{"small", Small(), true},
		{"names", Config{Netdevs: 2, NetdevNames: []string{"veth0", "veth1"}}, true},
		{"too few names", Config{Netdevs: 2, NetdevNames: []string{"veth0"}}, false},
		{"path in name", Config{Netdevs: 1, NetdevNames: []string{"../x"}}, false},
		{"long name", Config{Netdevs: 1, NetdevNames: []string{"abcdefghijklmnop"}}, false},
		{"negative", Config{Netdevs: -1}, false},
		{"too many functions", Config{Netdevs: 200, IBPorts: 100}, false},
		{"many functions", Config{Netdevs: 200, IBPorts: 40}, true},
	}
	for _, tt := range tests {
		if err := tt.c.Validate(); (err == nil) != tt.ok {
			t.Errorf("%s: Validate() = %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}

// perDevice counts the samples of s whose device label is dev.
func perDevice(s *exposition.Snapshot, dev string) int {
	return strings.Count(s.String(), `{device="`+dev+`"`)
}

func TestSmallHostInfiniBand(t *testing.T) {
	c := Small()
	l, err := Write(t.TempDir(), c)
	if err != nil {
		t.Fatal(err)
	}
	snap := poll(t, infiniband.New(infiniband.Config{SysfsPath: l.Sysfs}, zap.NewNop()))
	if got := snap.Devices(); got != c.IBPorts {
		t.Errorf("infiniband found %d devices, want %d", got, c.IBPorts)
	}
	for _, fam := range []string{"nic_infiniband_info", "nic_infiniband_port_state", "nic_infiniband_port_phys_state", "nic_infiniband_port_rate_bytes_per_second"} {
		if got := count(snap, fam); got != c.IBPorts {
			t.Errorf("%s: %d series, want %d", fam, got, c.IBPorts)
		}
	}
	text := snap.String()
	for _, d := range c.IBDevices() {
		// Every counters/ file and every hw_counters/ file but the
		// lifespan setting is a series of the port.
		want := len(ibPortCounterFiles) + len(ibHWCounterFiles) - 1
		if got := perDevice(snap, d.Name); got < want {
			t.Errorf("%s: %d series, want at least %d", d.Name, got, want)
		}
		if !strings.Contains(text, `pci_address="`+d.PCIAddress+`"`) {
			t.Errorf("%s: PCI address %s not exported", d.Name, d.PCIAddress)
		}
	}
}

// queueNumber finds a queue, channel or priority number left in a metric
// family name.
var queueNumber = regexp.MustCompile(`(rx|tx|ch|queue_|prio)[0-9]`)

func TestSmallHostEthtool(t *testing.T) {
	c := Small()
	l, err := Write(t.TempDir(), c)
	if err != nil {
		t.Fatal(err)
	}
	src, err := EthtoolSource(l, c)
	if err != nil {
		t.Fatal(err)
	}
	// keep: the checks below read per-queue series in the default part.
	e, err := ethtool.New(ethtool.Config{Source: src, QueueMode: ethtool.QueueKeep}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	snap := poll(t, e)
	if got := snap.Devices(); got != len(c.Ifaces()) {
		t.Errorf("ethtool found %d devices, want %d", got, len(c.Ifaces()))
	}
	text := snap.String()
	if strings.Contains(text, "nic_ethtool_stats_skipped{") && !regexp.MustCompile(`nic_ethtool_stats_skipped\{[^}]*\} 0\n`).MatchString(text) {
		t.Errorf("statistics skipped:\n%s", grepLines(text, "nic_ethtool_stats_skipped{"))
	}
	for _, ifc := range c.Ifaces() {
		names := Mlx5StatNames(ifc.Queues)
		if ifc.Driver == "ena" {
			names = ENAStatNames(ifc.Queues)
		}
		want := fmt.Sprintf("nic_ethtool_stats{device=%q} %d\n", ifc.Name, len(names))
		if !strings.Contains(text, want) {
			t.Errorf("no %q in %s", want, grepLines(text, "nic_ethtool_stats{"))
		}
		// One series per statistic, plus info, link settings and the
		// table size.
		if got := perDevice(snap, ifc.Name); got < len(names) {
			t.Errorf("%s: %d series for %d statistics", ifc.Name, got, len(names))
		}
	}
	for _, fam := range snap.Families() {
		if queueNumber.MatchString(fam) {
			t.Errorf("metric family %s has a queue number in its name", fam)
		}
	}
	for _, want := range []string{
		`nic_ethtool_queue_rx_packets_total{device="enp16s0np0",queue="3"}`,
		`nic_ethtool_priority_rx_pause_total{device="enp16s0np0",priority="7"}`,
		`nic_ethtool_rx_out_of_buffer_total{device="enp16s0np0"}`,
		`nic_ethtool_wd_expired_total{device="ens5"}`,
		`nic_ethtool_conntrack_allowance_available{device="ens5"} 500000`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("no %s", want)
		}
	}
}

func TestSmallHostVMA(t *testing.T) {
	c := Small()
	l, err := Write(t.TempDir(), c)
	if err != nil {
		t.Fatal(err)
	}
	v := vma.New(vma.Config{Dirs: []string{l.VMA}, Liveness: c.VMALiveness()}, zap.NewNop())
	snap := poll(t, v)
	if got := count(snap, "nic_vma_process_info"); got != c.VMAProcesses {
		t.Errorf("nic_vma_process_info: %d series, want %d\n%s", got, c.VMAProcesses, snap)
	}
	text := snap.String()
	for _, want := range []string{
		`nic_vma_files{state="live"} 1`,
		`version="9.8.84.0"`,
		`nic_vma_sockets{`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("no %s in\n%s", want, text)
		}
	}
	// The per-process socket counters are sums over the offloaded
	// sockets: check one against the generator's values.
	var sum uint64
	for _, sk := range c.VMAStats(0).Sockets {
		sum += uint64(sk.Counters[vmastats.RxPackets])
	}
	if sum == 0 {
		t.Fatal("generator wrote no rx packets")
	}
	want := fmt.Sprintf(`direction="rx",path="offload"} %d`+"\n", sum)
	if !strings.Contains(text, want) {
		t.Errorf("no %s in\n%s", want, grepLines(text, "nic_vma_socket_packets_total{"))
	}
}

func grepLines(text, substr string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, substr) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
