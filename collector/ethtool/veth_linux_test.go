package ethtool_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"golang.org/x/sys/unix"

	"github.com/nic-exporter/nic_exporter/collector/ethtool"
	"github.com/nic-exporter/nic_exporter/internal/ethtooldump"
	"github.com/nic-exporter/nic_exporter/internal/ethtoolioctl"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// vethNet is a pair of network namespaces joined by veth pairs with
// several queues, created by the test and removed at its end.
type vethNet struct {
	a, b string // namespace names; the collector watches a
}

func run(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// vethPair is one veth pair: dev in namespace a with address ipA, its
// peer in namespace b with ipB.
type vethPair struct {
	dev, peer string
	queues    int
	ipA, ipB  string
}

func newVethNet(t *testing.T, pairs []vethPair) *vethNet {
	t.Helper()
	testenv.Root(t)
	testenv.LookPath(t, "ip")
	testenv.LookPath(t, "ethtool")
	n := &vethNet{a: fmt.Sprintf("nicexp-eth-%d-a", os.Getpid()), b: fmt.Sprintf("nicexp-eth-%d-b", os.Getpid())}
	// Registered before the adds, so a failed add leaves nothing either.
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", n.a).Run() })
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", n.b).Run() })
	run(t, "ip", "netns", "add", n.a)
	run(t, "ip", "netns", "add", n.b)
	// Keep the namespaces quiet, so that only the test's datagrams move
	// the counters while it compares them: no IPv6 (router solicitations,
	// MLD reports) and static neighbours (no ARP).
	for _, ns := range []string{n.a, n.b} {
		run(t, "ip", "netns", "exec", ns, "sh", "-c", "[ -d /proc/sys/net/ipv6 ] || exit 0; "+
			"echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6 && echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6")
	}
	for i, p := range pairs {
		q := fmt.Sprint(p.queues)
		macA, macB := fmt.Sprintf("02:00:00:00:%02x:0a", i), fmt.Sprintf("02:00:00:00:%02x:0b", i)
		run(t, "ip", "-n", n.a, "link", "add", p.dev, "address", macA, "numrxqueues", q, "numtxqueues", q,
			"type", "veth", "peer", "name", p.peer, "address", macB, "netns", n.b, "numrxqueues", q, "numtxqueues", q)
		run(t, "ip", "-n", n.a, "addr", "add", p.ipA+"/24", "dev", p.dev)
		run(t, "ip", "-n", n.b, "addr", "add", p.ipB+"/24", "dev", p.peer)
		run(t, "ip", "-n", n.a, "neigh", "add", p.ipB, "lladdr", macB, "dev", p.dev, "nud", "permanent")
		run(t, "ip", "-n", n.b, "neigh", "add", p.ipA, "lladdr", macA, "dev", p.peer, "nud", "permanent")
		run(t, "ip", "-n", n.a, "link", "set", p.dev, "up")
		run(t, "ip", "-n", n.b, "link", "set", p.peer, "up")
		// GRO with UDP GRO forwarding puts veth in NAPI mode, where it
		// counts received packets per queue (rx_queue_N_xdp_packets).
		run(t, "ip", "netns", "exec", n.a, "ethtool", "-K", p.dev, "gro", "on", "rx-udp-gro-forwarding", "on")
		run(t, "ip", "netns", "exec", n.b, "ethtool", "-K", p.peer, "gro", "on", "rx-udp-gro-forwarding", "on")
	}
	return n
}

func (n *vethNet) path(ns string) string { return "/run/netns/" + ns }

// inNS runs f on a locked OS thread inside namespace ns. Sockets f
// opens stay in ns when the thread goes back.
func inNS(t *testing.T, ns string, f func()) {
	t.Helper()
	target, err := unix.Open("/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(target)
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			done <- err
			return
		}
		defer unix.Close(orig)
		if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- err
			return
		}
		f()
		if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
			done <- err // the thread stays locked and dies with the goroutine
			return
		}
		runtime.UnlockOSThread()
		done <- nil
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// traffic sends count datagrams from namespace b to ipA, each from a new
// socket (a new source port, so the flows hash to different queues), and
// waits until all arrived: veth counts a packet before it delivers it, so
// afterwards the counters are settled.
func (n *vethNet) traffic(t *testing.T, ipA string, count int) {
	t.Helper()
	var rx *net.UDPConn
	inNS(t, n.a, func() {
		var err error
		rx, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(ipA)})
		if err != nil {
			t.Error(err)
		}
	})
	if rx == nil {
		t.FailNow()
	}
	defer rx.Close()
	dst := rx.LocalAddr().(*net.UDPAddr)
	var senders []*net.UDPConn
	inNS(t, n.b, func() {
		for i := 0; i < count; i++ {
			c, err := net.DialUDP("udp4", nil, dst)
			if err != nil {
				t.Error(err)
				return
			}
			senders = append(senders, c)
		}
	})
	for i, c := range senders {
		if _, err := c.Write([]byte(fmt.Sprintf("datagram %d", i))); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	// The deadline only bounds a broken setup; it asserts no timing.
	_ = rx.SetReadDeadline(time.Now().Add(testenv.HangGuard))
	buf := make([]byte, 64)
	for i := 0; i < count; i++ {
		if _, _, err := rx.ReadFromUDP(buf); err != nil {
			t.Fatalf("received %d of %d datagrams: %v", i, count, err)
		}
	}
}

// ethtoolS returns `ethtool -S dev` in namespace ns.
func (n *vethNet) ethtoolS(t *testing.T, ns, dev string) *ethtooldump.Dump {
	t.Helper()
	out := run(t, "ip", "netns", "exec", ns, "ethtool", "-S", dev)
	d, err := ethtooldump.Parse(strings.NewReader(out))
	if err != nil {
		t.Fatalf("parsing ethtool -S %s: %v\n%s", dev, err, out)
	}
	return d
}

// vethSeries maps a veth statistic to the series the documented naming
// rules give it: per-queue rx_queue_N_X and tx_queue_N_X become
// nic_ethtool_queue_{rx,tx}_X_total{queue="N"}; peer_ifindex is a gauge.
var vethQueueRE = regexp.MustCompile(`^(rx|tx)_queue_([0-9]+)_(.+)$`)

func vethSeries(dev, stat string) string {
	if m := vethQueueRE.FindStringSubmatch(stat); m != nil {
		return fmt.Sprintf(`nic_ethtool_queue_%s_%s_total{device="%s",queue="%s"}`, m[1], m[3], dev, m[2])
	}
	if stat == "peer_ifindex" {
		return fmt.Sprintf(`nic_ethtool_peer_ifindex{device="%s"}`, dev)
	}
	return fmt.Sprintf(`nic_ethtool_%s_total{device="%s"}`, stat, dev)
}

// compare checks every statistic ethtool -S prints for dev in namespace
// ns against the scraped series got, queue labels included. traffic says
// the test sent datagrams to dev, so its receive queues must count them.
func (n *vethNet) compare(t *testing.T, got map[string]float64, ns, dev string, queues int, traffic bool) {
	t.Helper()
	d := n.ethtoolS(t, ns, dev)
	queueSeries := 0
	var rxPackets float64
	for i, stat := range d.Names {
		key := vethSeries(dev, stat)
		v, ok := got[key]
		if !ok {
			t.Errorf("%s: ethtool -S has %s, the collector has no %s", dev, stat, key)
			continue
		}
		if v != float64(d.Values[i]) {
			t.Errorf("%s = %v, ethtool -S %s says %d", key, v, stat, d.Values[i])
		}
		if m := vethQueueRE.FindStringSubmatch(stat); m != nil {
			queueSeries++
			if m[1] == "rx" && m[3] == "xdp_packets" {
				rxPackets += v
			}
		}
	}
	// Every queue of the device shows up, rx and tx.
	for q := 0; q < queues; q++ {
		for _, k := range []string{
			fmt.Sprintf(`nic_ethtool_queue_rx_xdp_packets_total{device="%s",queue="%d"}`, dev, q),
			fmt.Sprintf(`nic_ethtool_queue_tx_xdp_xmit_total{device="%s",queue="%d"}`, dev, q),
		} {
			if _, ok := got[k]; !ok {
				t.Errorf("missing %s", k)
			}
		}
	}
	perQueue := 0
	for k := range got {
		if strings.HasPrefix(k, "nic_ethtool_queue_") && strings.Contains(k, `device="`+dev+`"`) {
			perQueue++
		}
	}
	if perQueue != queueSeries {
		t.Errorf("%s: %d per-queue series, ethtool -S has %d per-queue statistics", dev, perQueue, queueSeries)
	}
	if traffic && rxPackets < 64 {
		t.Errorf("%s: %v packets counted on its receive queues, want at least the 64 sent", dev, rxPackets)
	}
	if v := got[fmt.Sprintf(`nic_ethtool_stats{device="%s"}`, dev)]; v != float64(len(d.Names)) {
		t.Errorf("%s: nic_ethtool_stats = %v, ethtool -S lists %d", dev, v, len(d.Names))
	}
	info := fmt.Sprintf(`nic_ethtool_info{bus_info="",device="%s",driver="veth",driver_version="1.0",firmware_version=""}`, dev)
	if got[info] != 1 {
		t.Errorf("missing %s", info)
	}
	for k, want := range map[string]float64{
		"nic_ethtool_link_speed_bytes_per_second": 10000e6 / 8,
		"nic_ethtool_link_full_duplex":            1,
		"nic_ethtool_link_detected":               1,
	} {
		if v, ok := got[fmt.Sprintf(`%s{device="%s"}`, k, dev)]; !ok || v != want {
			t.Errorf("%s{device=%q} = %v (present %v), want %v", k, dev, v, ok, want)
		}
	}
}

// countingSource counts the calls the collector makes and can run a hook
// right after the interface list was taken, to change the host mid-poll.
type countingSource struct {
	ethtool.Source
	afterList func()
	names     int
	stats     int
}

func (s *countingSource) Interfaces() ([]ethtoolioctl.Interface, error) {
	l, err := s.Source.Interfaces()
	if s.afterList != nil {
		s.afterList()
		s.afterList = nil
	}
	return l, err
}

func (s *countingSource) StatNames(name string, n int) ([]string, error) {
	s.names++
	return s.Source.StatNames(name, n)
}

func (s *countingSource) Stats(name string, dst []uint64) error {
	s.stats++
	return s.Source.Stats(name, dst)
}

// TestEthtoolVeth runs the collector on real veth devices in a namespace
// the test creates and checks every series against ethtool -S.
func TestEthtoolVeth(t *testing.T) {
	pairs := []vethPair{
		{dev: "va0", peer: "vb0", queues: 4, ipA: "10.201.0.1", ipB: "10.201.0.2"},
		{dev: "va1", peer: "vb1", queues: 2, ipA: "10.201.1.1", ipB: "10.201.1.2"},
		{dev: "va2", peer: "vb2", queues: 3, ipA: "10.201.2.1", ipB: "10.201.2.2"},
		{dev: "va3", peer: "vb3", queues: 32, ipA: "10.201.3.1", ipB: "10.201.3.2"},
	}
	n := newVethNet(t, pairs)
	for _, p := range pairs[:3] {
		n.traffic(t, p.ipA, 64)
	}

	src, err := ethtoolioctl.New(n.path(n.a))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	cs := &countingSource{Source: src}
	core, logs := observer.New(zapcore.DebugLevel)
	log := zap.New(core)
	c, err := ethtool.New(ethtool.Config{Source: cs, QueueMode: ethtool.QueueKeep}, log)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("series match ethtool -S", func(t *testing.T) {
		snap, errs := pollOnce(t, c, log)
		if len(errs) != 0 {
			t.Errorf("source errors: %v", errs)
		}
		got := series(t, snap.String())
		for _, p := range pairs {
			n.compare(t, got, n.a, p.dev, p.queues, p.dev != "va3")
		}
		for k := range got {
			if strings.Contains(k, `device="lo"`) {
				t.Errorf("the loopback device has no ethtool statistics, yet %s", k)
			}
		}
	})

	t.Run("peer namespace", func(t *testing.T) {
		// The peers' tx_queue_N_* statistics are read from the other end's
		// receive queues; a second source opened in namespace b sees them.
		srcB, err := ethtoolioctl.New(n.path(n.b))
		if err != nil {
			t.Fatal(err)
		}
		defer srcB.Close()
		cb, err := ethtool.New(ethtool.Config{Source: srcB, QueueMode: ethtool.QueueKeep}, log)
		if err != nil {
			t.Fatal(err)
		}
		snap, errs := pollOnce(t, cb, log)
		if len(errs) != 0 {
			t.Errorf("source errors: %v", errs)
		}
		got := series(t, snap.String())
		for _, p := range pairs {
			n.compare(t, got, n.b, p.peer, p.queues, false)
		}
		for k := range got {
			if strings.Contains(k, `device="va`) {
				t.Errorf("namespace b shows a device of namespace a: %s", k)
			}
		}
	})

	t.Run("string table fetched once", func(t *testing.T) {
		names, stats := cs.names, cs.stats
		pollOnce(t, c, log)
		pollOnce(t, c, log)
		if cs.names != names {
			t.Errorf("StatNames called %d more times in two polls of unchanged devices", cs.names-names)
		}
		if cs.stats-stats != 2*len(pairs) {
			t.Errorf("%d stats reads in two polls of %d devices, want one per device per poll", cs.stats-stats, len(pairs))
		}
	})

	t.Run("summed queues", func(t *testing.T) {
		sc, err := ethtool.New(ethtool.Config{Source: src, QueueMode: ethtool.QueueSum}, log)
		if err != nil {
			t.Fatal(err)
		}
		snap, _ := pollOnce(t, sc, log)
		got := series(t, snap.String())
		d := n.ethtoolS(t, n.a, "va0")
		var want float64
		for i, stat := range d.Names {
			if m := vethQueueRE.FindStringSubmatch(stat); m != nil && m[1] == "rx" && m[3] == "xdp_packets" {
				want += float64(d.Values[i])
			}
		}
		if v := got[`nic_ethtool_queue_rx_xdp_packets_total{device="va0"}`]; v != want || want == 0 {
			t.Errorf("summed rx_xdp_packets of va0 = %v, ethtool -S queues add up to %v", v, want)
		}
		for k := range got {
			if strings.Contains(k, "queue=") {
				t.Errorf("sum mode exports per-queue series %s", k)
			}
		}
		// The detail part has each queue's own counter, from the same
		// poll, adding up to the sum.
		var detailSum float64
		detail := series(t, snap.Detail().String())
		for k, v := range detail {
			if strings.HasPrefix(k, `nic_ethtool_per_queue_rx_xdp_packets_total{device="va0",queue="`) {
				detailSum += v
			}
		}
		if detailSum != want {
			t.Errorf("detail per-queue rx_xdp_packets of va0 add up to %v, ethtool -S queues to %v", detailSum, want)
		}

		// Reduce va0 to one channel (ethtool -L): the statistics of
		// queues 1-3 leave the table. The summed counter must not go
		// back, and growing back must not count a queue twice.
		const key = `nic_ethtool_queue_rx_xdp_packets_total{device="va0"}`
		for _, ch := range []string{"1", "4"} {
			run(t, "ip", "netns", "exec", n.a, "ethtool", "-L", "va0", "rx", ch, "tx", ch)
			snap, errs := pollOnce(t, sc, log)
			if len(errs) != 0 {
				t.Errorf("source errors: %v", errs)
			}
			got := series(t, snap.String())
			d := n.ethtoolS(t, n.a, "va0")
			var inTable float64
			for i, stat := range d.Names {
				if m := vethQueueRE.FindStringSubmatch(stat); m != nil && m[1] == "rx" && m[3] == "xdp_packets" {
					inTable += float64(d.Values[i])
				}
			}
			if got[`nic_ethtool_stats{device="va0"}`] != float64(len(d.Names)) {
				t.Errorf("%s channels: the table was not refreshed: nic_ethtool_stats = %v, ethtool -S lists %d",
					ch, got[`nic_ethtool_stats{device="va0"}`], len(d.Names))
			}
			if ch == "1" && inTable >= want {
				t.Fatalf("one channel: the remaining queue holds %v of %v packets; the test needs traffic on the removed queues", inTable, want)
			}
			if v := got[key]; v != want {
				t.Errorf("%s channels: summed rx_xdp_packets = %v, want %v as before (the queues in the table add up to %v)", ch, v, want, inTable)
			}
		}
	})

	t.Run("guard page", func(t *testing.T) {
		// A fresh source's scratch memory is one page before its guard
		// page. Asking va3 (32 queues, 289 names of 32 bytes) for one
		// name makes the kernel write past it: the call must fail with
		// ethtoolioctl.ErrStatCountChanged instead of overwriting memory.
		fresh, err := ethtoolioctl.New(n.path(n.a))
		if err != nil {
			t.Fatal(err)
		}
		defer fresh.Close()
		info, err := fresh.DriverInfo("va3")
		if err != nil {
			t.Fatal(err)
		}
		if info.NStats*32 <= os.Getpagesize() {
			t.Fatalf("va3 has only %d statistics; the test needs more than a page of names", info.NStats)
		}
		if _, err := fresh.StatNames("va3", 1); !errors.Is(err, ethtoolioctl.ErrStatCountChanged) {
			t.Errorf("StatNames with a short count: %v, want ethtoolioctl.ErrStatCountChanged", err)
		}
		if err := fresh.Stats("va3", make([]uint64, 1)); !errors.Is(err, ethtoolioctl.ErrStatCountChanged) {
			t.Errorf("Stats with a short count: %v, want ethtoolioctl.ErrStatCountChanged", err)
		}
		names, err := fresh.StatNames("va3", info.NStats)
		if err != nil || len(names) != info.NStats || names[0] != "peer_ifindex" {
			t.Errorf("StatNames after the fault: %d names, %v", len(names), err)
		}
		if err := fresh.Stats("va3", make([]uint64, info.NStats)); err != nil {
			t.Errorf("Stats after the fault: %v", err)
		}
	})

	t.Run("device deleted mid-poll", func(t *testing.T) {
		cs.afterList = func() { run(t, "ip", "-n", n.a, "link", "del", "va2") }
		before := logs.Len()
		snap, errs := pollOnce(t, c, log)
		if len(errs) != 0 {
			t.Errorf("a vanished device caused source errors: %v", errs)
		}
		text := snap.String()
		if strings.Contains(text, `device="va2"`) {
			t.Errorf("series of the deleted va2 remain:\n%s", text)
		}
		if !strings.Contains(text, `device="va0"`) || !strings.Contains(text, `device="va1"`) {
			t.Errorf("the other devices are missing:\n%s", text)
		}
		var lines []string
		for _, e := range logs.All()[before:] {
			lines = append(lines, e.Level.String()+" "+e.Message)
		}
		if len(lines) != 1 || lines[0] != "debug interface vanished during the poll" {
			t.Errorf("logged %q, want exactly one debug line", lines)
		}
	})

	t.Run("device renamed mid-poll", func(t *testing.T) {
		testenv.HostKernelLog(t, "renaming an interface")
		cs.afterList = func() {
			run(t, "ip", "-n", n.a, "link", "set", "va1", "down")
			run(t, "ip", "-n", n.a, "link", "set", "va1", "name", "vr1")
		}
		before := logs.Len()
		snap, errs := pollOnce(t, c, log)
		if len(errs) != 0 {
			t.Errorf("a renamed device caused source errors: %v", errs)
		}
		if text := snap.String(); strings.Contains(text, `device="va1"`) || strings.Contains(text, `device="vr1"`) {
			t.Errorf("the device renamed after the listing is exported:\n%s", text)
		}
		if got := logs.Len() - before; got != 1 {
			t.Errorf("%d log lines, want one debug line", got)
		}
		// The next poll finds it under its new name.
		snap, _ = pollOnce(t, c, log)
		got := series(t, snap.String())
		d := n.ethtoolS(t, n.a, "vr1")
		if v := got[`nic_ethtool_stats{device="vr1"}`]; v != float64(len(d.Names)) {
			t.Errorf("vr1: nic_ethtool_stats = %v, ethtool -S lists %d", v, len(d.Names))
		}
	})
}
