package netdev

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/internal/rtnl"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// vethHost creates a network namespace with lo and pairs veth pairs
// (both ends inside it) and a sysfs mounted by a process in that
// namespace, so its class/net lists the namespace's interfaces. It
// returns the namespace file and the sysfs mount point; the mount and the
// namespace are removed when the test ends, also when it fails.
func vethHost(b testing.TB, pairs int) (netns, sysfsRoot string) {
	b.Helper()
	testenv.Root(b)
	testenv.LookPath(b, "ip")
	testenv.LookPath(b, "nsenter")
	run := func(args ...string) {
		b.Helper()
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			b.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	ns := fmt.Sprintf("nicexp-ndb-%d", os.Getpid())
	// Registered first, so a failed add leaves nothing either.
	b.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	run("ip", "netns", "add", ns)
	// No IPv6, so that only the test's packets move the counters.
	run("ip", "netns", "exec", ns, "sh", "-c", "[ -d /proc/sys/net/ipv6 ] || exit 0; "+
		"sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1")
	var batch strings.Builder
	batch.WriteString("link set lo up\n")
	for i := range pairs {
		fmt.Fprintf(&batch, "link add x%d type veth peer name y%d\nlink set x%d up\nlink set y%d up\n", i, i, i, i)
	}
	f := filepath.Join(b.TempDir(), "batch")
	if err := os.WriteFile(f, []byte(batch.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	run("ip", "-n", ns, "-batch", f)
	root := b.TempDir()
	// nsenter enters only the network namespace: the mount lands in the
	// test's mount namespace, and sysfs shows the mounter's interfaces.
	b.Cleanup(func() {
		// Only if the mount happened: umount of a plain directory fails.
		_ = exec.Command("umount", "-l", root).Run()
	})
	run("nsenter", "--net=/run/netns/"+ns, "mount", "-t", "sysfs", "sysfs", root)
	// The kernel moves a veth to operstate "up" some time after "link
	// set up" (its link watch runs deferred, later on a busy machine):
	// two polls taken while it does would differ.
	deadline := time.Now().Add(testenv.HangGuard)
	for i := range pairs {
		for _, name := range []string{fmt.Sprintf("x%d", i), fmt.Sprintf("y%d", i)} {
			for {
				state, err := os.ReadFile(filepath.Join(root, "class", "net", name, "operstate"))
				if err == nil && strings.TrimSpace(string(state)) == "up" {
					break
				}
				if time.Now().After(deadline) {
					b.Fatalf("%s not operationally up within the hang guard: %q, %v", name, state, err)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	return "/run/netns/" + ns, root
}

// BenchmarkNetdevVeth measures the netdev poll cost per interface on 64
// veth pairs (129 interfaces with lo) in a test namespace whose sysfs is
// mounted from inside it: "sysfs-poll" is the full poll with SysfsLinks
// (the code path before rtnetlink: state, MTU, carrier, 25 statistics
// files and more per interface), "rtnl-poll" the full poll with RtnlLinks
// (one RTM_GETLINK dump, then sysfs only for address, speed and device
// links), and "rtnl-dump" the dump alone. All report ns/interface.
func BenchmarkNetdevVeth(b *testing.B) {
	netns, root := vethHost(b, 64)
	const ifaces = 129
	poll := func(b *testing.B, links LinkSource) {
		c := New(Config{SysfsPath: root, Links: links}, zap.NewNop())
		errs := collector.NewSourceErrors(zap.NewNop(), time.Hour)
		bld := exposition.NewBuilder()
		b.ReportAllocs()
		for b.Loop() {
			bld.Reset()
			if err := c.Update(context.Background(), collector.NewPoll(bld, errs)); err != nil {
				b.Fatal(err)
			}
			if n := bld.Snapshot().Devices(); n != ifaces {
				b.Fatalf("polled %d interfaces, want %d", n, ifaces)
			}
		}
		if got := errs.Counts(); len(got) != 0 {
			b.Fatalf("source errors: %v", got)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/ifaces, "ns/interface")
	}
	b.Run("sysfs-poll", func(b *testing.B) { poll(b, nil) })
	b.Run("rtnl-poll", func(b *testing.B) {
		links, err := NewRtnlLinks(netns)
		if err != nil {
			b.Fatal(err)
		}
		defer links.Close()
		poll(b, links)
	})
	b.Run("rtnl-dump", func(b *testing.B) {
		c, err := rtnl.Dial(netns)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		b.ReportAllocs()
		for b.Loop() {
			links, err := c.Links()
			if err != nil {
				b.Fatal(err)
			}
			if len(links) != ifaces {
				b.Fatalf("dumped %d interfaces, want %d", len(links), ifaces)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/ifaces, "ns/interface")
	})
}
