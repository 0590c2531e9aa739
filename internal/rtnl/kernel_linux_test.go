package rtnl

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

var capture = flag.Bool("capture", false, "rewrite testdata/dump with a link dump of a test namespace")

func run(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// newNet creates namespaces a and b, joined by veth va (in a, MTU 1400,
// 10.98.0.1/24) and vb (in b, 10.98.0.2/24), with IPv6 off so that only
// the test's packets move the counters. They are removed when the test
// ends, also when it fails.
func newNet(t testing.TB, extra int) (a, b string) {
	t.Helper()
	testenv.Root(t)
	testenv.LookPath(t, "ip")
	a = fmt.Sprintf("nicexp-rtnl-%d-a", os.Getpid())
	b = fmt.Sprintf("nicexp-rtnl-%d-b", os.Getpid())
	for _, ns := range []string{a, b} {
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() }) // before the add: nothing stays if it fails
		run(t, "ip", "netns", "add", ns)
		run(t, "ip", "netns", "exec", ns, "sh", "-c", "[ -d /proc/sys/net/ipv6 ] || exit 0; "+
			"sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1")
		run(t, "ip", "-n", ns, "link", "set", "lo", "up")
	}
	run(t, "ip", "-n", a, "link", "add", "va", "mtu", "1400", "type", "veth", "peer", "name", "vb", "netns", b)
	run(t, "ip", "-n", a, "addr", "add", "10.98.0.1/24", "dev", "va")
	run(t, "ip", "-n", b, "addr", "add", "10.98.0.2/24", "dev", "vb")
	run(t, "ip", "-n", a, "link", "set", "va", "up")
	run(t, "ip", "-n", b, "link", "set", "vb", "up")
	for i := range extra {
		run(t, "ip", "-n", a, "link", "add", fmt.Sprintf("x%d", i), "type", "veth", "peer", "name", fmt.Sprintf("y%d", i))
	}
	return a, b
}

// udpIn opens a UDP socket bound to addr inside namespace ns; the socket
// stays in ns whatever namespace later uses it.
func udpIn(t testing.TB, ns, addr string) *net.UDPConn {
	t.Helper()
	type res struct {
		c   *net.UDPConn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		// The thread is never returned to the pool: it dies with the
		// goroutine, so nothing else runs in ns.
		runtime.LockOSThread()
		fd, err := unix.Open("/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			ch <- res{err: err}
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			ch <- res{err: err}
			return
		}
		c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort(addr)))
		ch <- res{c, err}
	}()
	r := <-ch
	if r.err != nil {
		t.Fatalf("UDP socket on %s in %s: %v", addr, ns, r.err)
	}
	t.Cleanup(func() { r.c.Close() })
	return r.c
}

// traffic sends count datagrams from one socket to the other and waits
// until all have arrived.
func traffic(t testing.TB, from, to *net.UDPConn, count int) {
	t.Helper()
	buf := make([]byte, 2048)
	for i := range count {
		if _, err := from.WriteToUDP(make([]byte, 100+i), to.LocalAddr().(*net.UDPAddr)); err != nil {
			t.Fatal(err)
		}
		to.SetReadDeadline(time.Now().Add(testenv.HangGuard))
		if _, _, err := to.ReadFromUDP(buf); err != nil {
			t.Fatalf("datagram %d: %v", i, err)
		}
	}
}

// exchange moves count datagrams each way over the veth and over
// loopback in namespace a.
func exchange(t testing.TB, a, b string, count int) {
	t.Helper()
	sa, sb := udpIn(t, a, "10.98.0.1:4791"), udpIn(t, b, "10.98.0.2:4791")
	traffic(t, sa, sb, count)
	traffic(t, sb, sa, count)
	l1, l2 := udpIn(t, a, "127.0.0.1:4791"), udpIn(t, a, "127.0.0.1:4792")
	traffic(t, l1, l2, count)
}

func linksByName(t testing.TB, c *Conn) map[string]Link {
	t.Helper()
	links, err := c.Links()
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]Link)
	for _, l := range links {
		out[l.Name] = l
	}
	return out
}

// ipLink is the part of `ip -s -j link` this test compares.
type ipLink struct {
	Index int    `json:"ifindex"`
	Name  string `json:"ifname"`
	MTU   uint32 `json:"mtu"`
	Stats struct {
		RX struct {
			Bytes, Packets, Errors, Dropped, Multicast uint64
			OverErrors                                 uint64 `json:"over_errors"`
		} `json:"rx"`
		TX struct {
			Bytes, Packets, Errors, Dropped, Collisions uint64
			CarrierErrors                               uint64 `json:"carrier_errors"`
		} `json:"tx"`
	} `json:"stats64"`
}

func stat(l Link, name string) uint64 {
	for i, n := range StatNames {
		if n == name {
			return l.Stats[i]
		}
	}
	panic(name)
}

func TestLinksKernel(t *testing.T) {
	a, b := newNet(t, 0)
	c, err := Dial("/run/netns/" + a)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	exchange(t, a, b, 20)
	got := linksByName(t, c)

	// ip(8) reads the same dump; nothing moves while the test compares.
	var ip []ipLink
	if err := json.Unmarshal([]byte(run(t, "ip", "-n", a, "-s", "-j", "link", "show")), &ip); err != nil {
		t.Fatal(err)
	}
	if len(ip) != len(got) {
		t.Errorf("%d links, ip link shows %d", len(got), len(ip))
	}
	for _, w := range ip {
		l, ok := got[w.Name]
		if !ok {
			t.Errorf("%s missing", w.Name)
			continue
		}
		if l.Index != w.Index || l.MTU != w.MTU {
			t.Errorf("%s: index %d MTU %d, ip link says %d and %d", w.Name, l.Index, l.MTU, w.Index, w.MTU)
		}
		for _, c := range []struct {
			name string
			want uint64
		}{
			{"rx_bytes", w.Stats.RX.Bytes}, {"rx_packets", w.Stats.RX.Packets},
			{"rx_errors", w.Stats.RX.Errors}, {"rx_dropped", w.Stats.RX.Dropped},
			{"multicast", w.Stats.RX.Multicast}, {"rx_over_errors", w.Stats.RX.OverErrors},
			{"tx_bytes", w.Stats.TX.Bytes}, {"tx_packets", w.Stats.TX.Packets},
			{"tx_errors", w.Stats.TX.Errors}, {"tx_dropped", w.Stats.TX.Dropped},
			{"collisions", w.Stats.TX.Collisions}, {"tx_carrier_errors", w.Stats.TX.CarrierErrors},
		} {
			if g := stat(l, c.name); g != c.want {
				t.Errorf("%s %s = %d, ip link says %d", w.Name, c.name, g, c.want)
			}
		}
	}

	// sysfs of the namespace (ip netns exec mounts it) has every field.
	for _, name := range []string{"lo", "va"} {
		l := got[name]
		if l.NStats != NumStats {
			t.Errorf("%s: %d statistics, want %d from this kernel", name, l.NStats, NumStats)
		}
		var script strings.Builder
		for _, s := range StatNames {
			// sysfs lacks newer fields (rx_otherhost_dropped): "-".
			fmt.Fprintf(&script, "cat /sys/class/net/%s/statistics/%s 2>/dev/null || echo -; ", name, s)
		}
		fmt.Fprintf(&script, "cat /sys/class/net/%[1]s/mtu /sys/class/net/%[1]s/carrier_changes /sys/class/net/%[1]s/carrier_up_count /sys/class/net/%[1]s/carrier_down_count", name)
		vals := strings.Fields(run(t, "ip", "netns", "exec", a, "sh", "-c", script.String()))
		for i, s := range StatNames {
			if v := strconv.FormatUint(l.Stats[i], 10); v != vals[i] && vals[i] != "-" {
				t.Errorf("%s %s = %s, sysfs says %s", name, s, v, vals[i])
			}
		}
		rest := vals[NumStats:]
		for i, v := range []uint32{l.MTU, l.CarrierChanges, l.CarrierUp, l.CarrierDown} {
			if strconv.FormatUint(uint64(v), 10) != rest[i] {
				t.Errorf("%s: mtu/carrier_changes/up/down %d = %d, sysfs says %s", name, i, v, rest[i])
			}
		}
	}
	if lo := got["lo"]; stat(lo, "rx_packets") < 20 {
		t.Errorf("lo received %d packets, want at least the 20 of the ping", stat(lo, "rx_packets"))
	}
	va := got["va"]
	if stat(va, "tx_packets") < 20 || stat(va, "rx_packets") < 20 {
		t.Errorf("va moved %d/%d packets, want at least 20 each way", stat(va, "tx_packets"), stat(va, "rx_packets"))
	}
	if !va.HasCarrier || !va.Carrier || va.OperState != OperUp || va.Flags&unix.IFF_UP == 0 {
		t.Errorf("va = %+v, want up with carrier", va)
	}

	// Taking the peer down drops the carrier and counts a change.
	// The operational state follows the carrier through linkwatch,
	// within a second.
	run(t, "ip", "-n", b, "link", "set", "vb", "down")
	var va2 Link
	for deadline := time.Now().Add(testenv.HangGuard); ; time.Sleep(50 * time.Millisecond) {
		va2 = linksByName(t, c)["va"]
		if va2.OperState != OperUp || time.Now().After(deadline) {
			break
		}
	}
	if va2.Carrier || va2.OperState == OperUp || va2.CarrierChanges <= va.CarrierChanges ||
		!va2.HasCarrierUpDown || va2.CarrierDown <= va.CarrierDown {
		t.Errorf("after the peer went down va = %+v, before %+v", va2, va)
	}
}

// TestCapture dumps the links of TestLinksKernel's namespace and checks
// that every RTM_NEWLINK payload decodes. With -capture it rewrites
// testdata/dump with them, for TestParseCaptured and the fuzz seeds:
//
//	go test ./internal/rtnl -run TestCapture -capture
func TestCapture(t *testing.T) {
	a, b := newNet(t, 0)
	exchange(t, a, b, 5)
	c, err := Dial("/run/netns/" + a)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	msgs, err := c.dump()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if *capture {
		dir = filepath.Join("testdata", "dump")
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for _, m := range msgs {
		l, err := ParseLink(m.Data)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, l.Name)
		if err := os.WriteFile(filepath.Join(dir, l.Name+".bin"), m.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Join(names, " ") != "lo va" {
		t.Errorf("dumped %v, want lo and va", names)
	}
}

func TestDialNotNamespace(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	regular := filepath.Join(dir, "file")
	if err := os.WriteFile(regular, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fifo, regular} {
		if c, err := Dial(path); !errors.Is(err, ErrNotNamespace) {
			if c != nil {
				c.Close()
			}
			t.Errorf("Dial(%s) = %v, want ErrNotNamespace", path, err)
		}
	}
	if _, err := Dial(filepath.Join(dir, "missing")); err == nil {
		t.Error("Dial of a missing file succeeded")
	}
}
