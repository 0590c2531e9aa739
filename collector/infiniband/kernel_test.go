package infiniband_test

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/collectortest"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/collector/infiniband"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
	"github.com/nic-exporter/nic_exporter/internal/testenv/guest"
)

// TestSoftRoCE boots a real kernel once and checks the infiniband
// collector against Soft-RoCE devices over a veth pair (rxe0) and a dummy
// interface (rxe1) through every link state they can take: ACTIVE/LinkUp,
// the veth peer down (DOWN/Polling), the interface itself down
// (DOWN/Disabled), and a device deleted. Every exported state, rate and
// hw_counters value is compared with the sysfs file it comes from.
func TestSoftRoCE(t *testing.T) {
	if guest.InGuest() {
		softRoCEChecks(t)
		return
	}
	res := guest.RunTest(t, guest.Config{
		Run:      "^TestSoftRoCE$",
		Args:     []string{"-test.v"},
		Modules:  []string{"crc32_generic", "rdma_rxe", "veth", "dummy"},
		IPRoute2: true,
	})
	if !strings.Contains(res.Output, "--- PASS: TestSoftRoCE") {
		t.Errorf("guest output lacks the passing test")
	}
}

func run(t *testing.T, tool string, args ...string) {
	t.Helper()
	out, err := exec.Command(filepath.Join(guest.ToolDir, tool), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", tool, strings.Join(args, " "), err, out)
	}
}

func sysfsFile(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/sys/class/infiniband", rel))
	if err != nil {
		t.Fatalf("reading %s: %v", rel, err)
	}
	return strings.TrimSpace(string(b))
}

// waitFor waits until the port's phys_state file reads want. The kernel
// updates rxe port state from netdev events asynchronously.
func waitFor(t *testing.T, dev, want string) {
	t.Helper()
	deadline := time.Now().Add(testenv.HangGuard)
	for {
		got := sysfsFile(t, dev+"/ports/1/phys_state")
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s phys_state is %q, want %q", dev, got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// countingFS records every name the collector touches in the real sysfs.
type countingFS struct {
	base     fs.FS
	mu       sync.Mutex
	accessed []string
}

func (c *countingFS) touch(name string) {
	c.mu.Lock()
	c.accessed = append(c.accessed, name)
	c.mu.Unlock()
}
func (c *countingFS) Open(name string) (fs.File, error) { c.touch(name); return c.base.Open(name) }
func (c *countingFS) ReadDir(name string) ([]fs.DirEntry, error) {
	c.touch(name)
	return fs.ReadDir(c.base, name)
}
func (c *countingFS) Stat(name string) (fs.FileInfo, error) {
	c.touch(name)
	return fs.Stat(c.base, name)
}
func (c *countingFS) ReadLink(name string) (string, error) {
	c.touch(name)
	return fs.ReadLink(c.base, name)
}
func (c *countingFS) Lstat(name string) (fs.FileInfo, error) {
	c.touch(name)
	return fs.Lstat(c.base, name)
}

// poll runs the collector once on the real /sys.
func poll(t *testing.T, include, exclude string, fsys fs.FS) string {
	t.Helper()
	f, err := collector.NewNameFilter("collector.infiniband.device", include, exclude)
	if err != nil {
		t.Fatal(err)
	}
	c := infiniband.New(infiniband.Config{SysfsPath: "/sys", Filter: f, FS: fsys}, zap.NewNop())
	r := collectortest.MustPoll(t, c, nil)
	if counts := r.Errors.Counts(); len(counts) != 0 {
		t.Errorf("poll reported source errors: %v", counts)
	}
	return r.Text
}

func expect(t *testing.T, scrape string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(scrape, l+"\n") {
			t.Errorf("scrape lacks %s", l)
		}
	}
}

// stateNumber returns the number of a "4: ACTIVE" state file.
func stateNumber(t *testing.T, rel string) string {
	t.Helper()
	s := sysfsFile(t, rel)
	num, _, ok := strings.Cut(s, ":")
	if !ok {
		t.Fatalf("%s = %q", rel, s)
	}
	return num
}

// checkPort compares a port's exported state, physical state, rate, link
// layer and netdev with its files, and returns the phys_state file.
func checkPort(t *testing.T, scrape, dev, netdev string) {
	t.Helper()
	labels := fmt.Sprintf(`{device=%q,port="1"}`, dev)
	expect(t, scrape,
		"nic_infiniband_port_state"+labels+" "+stateNumber(t, dev+"/ports/1/state"),
		"nic_infiniband_port_phys_state"+labels+" "+stateNumber(t, dev+"/ports/1/phys_state"),
		fmt.Sprintf(`nic_infiniband_port_info{device=%q,port="1",link_layer=%q} 1`, dev, sysfsFile(t, dev+"/ports/1/link_layer")),
		fmt.Sprintf(`nic_infiniband_port_netdev_info{device=%q,port="1",netdev=%q} 1`, dev, netdev),
	)
	if rate, err := os.ReadFile(filepath.Join("/sys/class/infiniband", dev, "ports/1/rate")); err == nil {
		gbps, _, _ := strings.Cut(strings.TrimSpace(string(rate)), " ")
		v, err := strconv.ParseFloat(gbps, 64)
		if err != nil {
			t.Fatalf("%s rate %q", dev, rate)
		}
		expect(t, scrape, "nic_infiniband_port_rate_bytes_per_second"+labels+" "+string(exposition.AppendFloat(nil, v*1e9/8)))
	}
}

// checkHWCounters compares every known hw_counters file of an idle port
// with its series; lifespan must not be exported.
func checkHWCounters(t *testing.T, scrape, dev string) {
	t.Helper()
	dir := filepath.Join("/sys/class/infiniband", dev, "ports/1/hw_counters")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("rxe hw_counters: %v", err)
	}
	n := 0
	for _, e := range entries {
		if e.Name() == "lifespan" {
			continue
		}
		v := sysfsFile(t, dev+"/ports/1/hw_counters/"+e.Name())
		expect(t, scrape, fmt.Sprintf(`nic_infiniband_hw_%s_total{device=%q,port="1"} %s`, e.Name(), dev, v))
		n++
	}
	if n < 10 {
		t.Errorf("%s has only %d hw_counters", dev, n)
	}
	if strings.Contains(scrape, "lifespan") {
		t.Errorf("lifespan exported")
	}
	// rxe handles no MADs, so it has no counters/ directory.
	if strings.Contains(scrape, "nic_infiniband_port_symbol_error_total") {
		t.Errorf("port counters exported for a device without counters/")
	}
}

func softRoCEChecks(t *testing.T) {
	run(t, "ip", "link", "add", "veth0", "type", "veth", "peer", "name", "veth1")
	for _, l := range []string{"veth0", "veth1", "dummy0"} {
		run(t, "ip", "link", "set", l, "up")
	}
	run(t, "rdma", "link", "add", "rxe0", "type", "rxe", "netdev", "veth0")
	run(t, "rdma", "link", "add", "rxe1", "type", "rxe", "netdev", "dummy0")
	waitFor(t, "rxe0", "5: LinkUp")
	waitFor(t, "rxe1", "5: LinkUp")
	for _, dev := range []string{"rxe0", "rxe1"} {
		t.Logf("%s: state %q phys_state %q rate %q", dev, sysfsFile(t, dev+"/ports/1/state"),
			sysfsFile(t, dev+"/ports/1/phys_state"), sysfsFile(t, dev+"/ports/1/rate"))
	}

	t.Run("active", func(t *testing.T) {
		scrape := poll(t, "", "", nil)
		for _, dev := range []struct{ name, netdev string }{{"rxe0", "veth0"}, {"rxe1", "dummy0"}} {
			expect(t, scrape,
				fmt.Sprintf(`nic_infiniband_port_state{device=%q,port="1"} 4`, dev.name),
				fmt.Sprintf(`nic_infiniband_port_phys_state{device=%q,port="1"} 5`, dev.name),
				fmt.Sprintf(`nic_infiniband_port_info{device=%q,port="1",link_layer="Ethernet"} 1`, dev.name),
			)
			checkPort(t, scrape, dev.name, dev.netdev)
			checkHWCounters(t, scrape, dev.name)
		}
		// veth is 10 Gb/s (1X FDR10), dummy 2.5 Gb/s (1X SDR).
		expect(t, scrape,
			`nic_infiniband_port_rate_bytes_per_second{device="rxe0",port="1"} 1250000000`,
			`nic_infiniband_port_rate_bytes_per_second{device="rxe1",port="1"} 312500000`,
		)
		if !strings.Contains(scrape, `nic_infiniband_info{device="rxe0",`) || strings.Contains(scrape, "nic_infiniband_port_lid") {
			t.Errorf("want rxe0 info and no LIDs on an Ethernet link layer:\n%s", scrape)
		}
	})

	t.Run("excluded device is never touched", func(t *testing.T) {
		cfs := &countingFS{base: os.DirFS("/sys")}
		scrape := poll(t, "", "rxe1", cfs)
		for _, n := range cfs.accessed {
			if n == "class/infiniband/rxe1" || strings.HasPrefix(n, "class/infiniband/rxe1/") {
				t.Errorf("excluded rxe1 was accessed: %s", n)
			}
		}
		if strings.Contains(scrape, `device="rxe1"`) || !strings.Contains(scrape, `device="rxe0"`) {
			t.Errorf("want rxe0 only:\n%s", scrape)
		}
	})

	t.Run("peer down", func(t *testing.T) {
		run(t, "ip", "link", "set", "veth1", "down")
		waitFor(t, "rxe0", "2: Polling")
		scrape := poll(t, "", "", nil)
		expect(t, scrape,
			`nic_infiniband_port_state{device="rxe0",port="1"} 1`,
			`nic_infiniband_port_phys_state{device="rxe0",port="1"} 2`,
		)
		checkPort(t, scrape, "rxe0", "veth0")
		checkHWCounters(t, scrape, "rxe0")
	})

	t.Run("link down", func(t *testing.T) {
		run(t, "ip", "link", "set", "veth0", "down")
		run(t, "ip", "link", "set", "dummy0", "down")
		waitFor(t, "rxe0", "3: Disabled")
		waitFor(t, "rxe1", "3: Disabled")
		scrape := poll(t, "", "", nil)
		for _, dev := range []string{"rxe0", "rxe1"} {
			expect(t, scrape,
				fmt.Sprintf(`nic_infiniband_port_state{device=%q,port="1"} 1`, dev),
				fmt.Sprintf(`nic_infiniband_port_phys_state{device=%q,port="1"} 3`, dev),
			)
			checkHWCounters(t, scrape, dev)
			// rxe counts the interface going down: a counter that moved,
			// compared exactly by checkHWCounters above.
			if v := sysfsFile(t, dev+"/ports/1/hw_counters/link_downed"); v == "0" {
				t.Errorf("%s hw_counters/link_downed is still 0 after the link went down", dev)
			}
		}
		checkPort(t, scrape, "rxe0", "veth0")
		checkPort(t, scrape, "rxe1", "dummy0")
	})

	t.Run("link back up", func(t *testing.T) {
		for _, l := range []string{"veth0", "veth1", "dummy0"} {
			run(t, "ip", "link", "set", l, "up")
		}
		waitFor(t, "rxe0", "5: LinkUp")
		scrape := poll(t, "", "", nil)
		expect(t, scrape, `nic_infiniband_port_phys_state{device="rxe0",port="1"} 5`)
		checkHWCounters(t, scrape, "rxe0")
	})

	t.Run("device deleted", func(t *testing.T) {
		run(t, "rdma", "link", "delete", "rxe1")
		scrape := poll(t, "", "", nil)
		if strings.Contains(scrape, `device="rxe1"`) || !strings.Contains(scrape, `device="rxe0"`) {
			t.Errorf("want rxe0 only after deleting rxe1:\n%s", scrape)
		}
	})
}
