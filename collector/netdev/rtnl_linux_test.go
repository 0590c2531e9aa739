package netdev

import (
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/nic-exporter/nic_exporter/internal/rtnl"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

func TestStatOrder(t *testing.T) {
	for i, st := range netStats {
		if st.file != rtnl.StatNames[i] {
			t.Errorf("netStats[%d] = %s, rtnl.StatNames[%d] = %s", i, st.file, i, rtnl.StatNames[i])
		}
	}
}

// loopbackTraffic sends count datagrams over loopback inside the
// namespace file netns.
func loopbackTraffic(t *testing.T, netns string, count int) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		// The thread is never unlocked: it dies with the goroutine, so
		// nothing else runs in the namespace.
		runtime.LockOSThread()
		fd, err := unix.Open(netns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- err
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			errc <- err
			return
		}
		rx, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			errc <- err
			return
		}
		defer rx.Close()
		tx, err := net.DialUDP("udp4", nil, rx.LocalAddr().(*net.UDPAddr))
		if err != nil {
			errc <- err
			return
		}
		defer tx.Close()
		buf := make([]byte, 2048)
		for i := range count {
			if _, err := tx.Write(make([]byte, 100+i)); err != nil {
				errc <- err
				return
			}
			rx.SetReadDeadline(time.Now().Add(testenv.HangGuard))
			if _, err := rx.Read(buf); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	if err := <-errc; err != nil {
		t.Fatalf("loopback traffic: %v", err)
	}
}

// TestNetdevRtnlKernel polls a test namespace with veth pairs twice, once
// with the rtnetlink link source and once with the sysfs one (the
// namespace's own sysfs), and requires the same series, except
// rx_otherhost_dropped, which sysfs does not have.
func TestNetdevRtnlKernel(t *testing.T) {
	netns, root := vethHost(t, 4)
	loopbackTraffic(t, netns, 50)
	links, err := NewRtnlLinks(netns)
	if err != nil {
		t.Fatal(err)
	}
	defer links.Close()

	viaRtnl, errs := pollOnce(t, New(Config{SysfsPath: root, Links: links}, zap.NewNop()))
	if got := errs.Counts(); len(got) != 0 {
		t.Errorf("source errors with rtnetlink: %v", got)
	}
	viaSysfs, errs := pollOnce(t, New(Config{SysfsPath: root}, zap.NewNop()))
	if got := errs.Counts(); len(got) != 0 {
		t.Errorf("source errors with sysfs: %v", got)
	}
	if viaRtnl.Devices() != 9 || viaSysfs.Devices() != 9 {
		t.Errorf("devices %d (rtnl) and %d (sysfs), want 9", viaRtnl.Devices(), viaSysfs.Devices())
	}
	var rtnlLines []string
	for _, l := range strings.Split(viaRtnl.String(), "\n") {
		if !strings.Contains(l, "rx_otherhost_dropped") {
			rtnlLines = append(rtnlLines, l)
		}
	}
	if d := cmp.Diff(strings.Split(viaSysfs.String(), "\n"), rtnlLines); d != "" {
		t.Errorf("sysfs (-) and rtnetlink (+) polls differ:\n%s", d)
	}
	out := viaRtnl.String()
	for _, want := range []string{
		`nic_netdev_rx_otherhost_dropped_total{device="lo"} 0`,
		`nic_netdev_mtu_bytes{device="lo"} 65536`,
		`nic_netdev_carrier{device="x0"} 1`,
		`nic_netdev_oper_state{device="x0"} 1`,
		`nic_netdev_rx_packets_total{device="lo"} 50`, // the 50 datagrams
		`nic_netdev_tx_packets_total{device="lo"} 50`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("rtnetlink poll lacks %q", want)
		}
	}
}
