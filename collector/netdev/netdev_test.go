package netdev

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/collectortest"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
)

// sysfsFixture writes a small sysfs tree: a ConnectX-7 port trained at x8
// on an x16 card, an interface that is administratively down, a virtual
// interface, and files that fail in the ways real sysfs files do.
func sysfsFixture(t testing.TB) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		// mlx5 PF, degraded PCIe link.
		"devices/pci0000:00/0000:00:01.1/0000:08:00.1/net/enp8s0f1np1/ifindex":               "4",
		"devices/pci0000:00/0000:00:01.1/0000:08:00.1/net/enp8s0f1np1/address":               "fc:4c:ea:f9:42:35",
		"devices/pci0000:00/0000:00:01.1/0000:08:00.1/net/enp8s0f1np1/operstate":             "up",
		"devices/pci0000:00/0000:00:01.1/0000:08:00.1/net/enp8s0f1np1/flags":                 "0x1003",
		"devices/pci0000:00/0000:00:01.1/0000:08:00.1/net/enp8s0f1np1/carrier":               "1",
		"devices/pci0000:00/0000:00:01.1/0000:08:00.1/net/enp8s0f1np1/carrier_changes":       "7",
		"devices/pci0000:00/0000:00:01.1/0000:08:00.1/net/enp8s0f1np1/speed":                 "400000",
		"devices/pci0000:00/0000:00:01.1/0000:08:00.1/net/enp8s0f1np1/mtu":                   "9000",
		"devices/pci0000:00/0000:00:01.1/0000:08:00.1/net/enp8s0f1np1/statistics/rx_packets": "123456789",
		"devices/pci0000:00/0000:00:01.1/0000:08:00.1/net/enp8s0f1np1/statistics/rx_bytes":   "18446744073709551615",
		"devices/pci0000:00/0000:00:01.1/0000:08:00.1/net/enp8s0f1np1/statistics/rx_dropped": "not a number",
		"devices/pci0000:00/0000:00:01.1/0000:08:00.1/current_link_speed":                    "16.0 GT/s PCIe",
		"devices/pci0000:00/0000:00:01.1/0000:08:00.1/max_link_speed":                        "32.0 GT/s PCIe",
		"devices/pci0000:00/0000:00:01.1/0000:08:00.1/current_link_width":                    "8",
		"devices/pci0000:00/0000:00:01.1/0000:08:00.1/max_link_width":                        "16",
		"devices/pci0000:00/0000:00:01.1/0000:08:00.1/numa_node":                             "1",
		// The function's hwmon device as mlx5's hwmon.c (kernel 6.6+)
		// lays it out: name "mlx5"; per channel input, highest, crit
		// and label; the labels are the kernel's "sensor<index>" for
		// sensors the firmware does not name (ASIC sensor 0, the
		// module at index 64); values in millidegrees, multiples of
		// the firmware's 0.125 °C. No public dump of a real one was
		// found: the layout is the driver's, the values ours.
		"devices/pci0000:00/0000:00:01.1/0000:08:00.1/hwmon/hwmon3/name":          "mlx5",
		"devices/pci0000:00/0000:00:01.1/0000:08:00.1/hwmon/hwmon3/temp1_input":   "56000",
		"devices/pci0000:00/0000:00:01.1/0000:08:00.1/hwmon/hwmon3/temp1_highest": "61250",
		"devices/pci0000:00/0000:00:01.1/0000:08:00.1/hwmon/hwmon3/temp1_crit":    "105000",
		"devices/pci0000:00/0000:00:01.1/0000:08:00.1/hwmon/hwmon3/temp1_label":   "sensor0",
		"devices/pci0000:00/0000:00:01.1/0000:08:00.1/hwmon/hwmon3/temp2_input":   "48125",
		"devices/pci0000:00/0000:00:01.1/0000:08:00.1/hwmon/hwmon3/temp2_highest": "50000",
		"devices/pci0000:00/0000:00:01.1/0000:08:00.1/hwmon/hwmon3/temp2_crit":    "75000",
		"devices/pci0000:00/0000:00:01.1/0000:08:00.1/hwmon/hwmon3/temp2_label":   "sensor64",
		// Administratively down: carrier and speed are not read (the
		// kernel answers EINVAL for them).
		"devices/pci0000:00/0000:00:05.0/net/ens5/ifindex":         "2",
		"devices/pci0000:00/0000:00:05.0/net/ens5/address":         "0a:1b:2c:3d:4e:5f",
		"devices/pci0000:00/0000:00:05.0/net/ens5/operstate":       "down",
		"devices/pci0000:00/0000:00:05.0/net/ens5/flags":           "0x1002",
		"devices/pci0000:00/0000:00:05.0/net/ens5/carrier_changes": "1",
		"devices/pci0000:00/0000:00:05.0/net/ens5/mtu":             "9001",
		"devices/pci0000:00/0000:00:05.0/current_link_speed":       "Unknown",
		"devices/pci0000:00/0000:00:05.0/max_link_speed":           "Unknown",
		"devices/pci0000:00/0000:00:05.0/numa_node":                "-1",
		// Virtual interface without a device.
		"devices/virtual/net/lo/ifindex":               "1",
		"devices/virtual/net/lo/address":               "00:00:00:00:00:00",
		"devices/virtual/net/lo/operstate":             "unknown",
		"devices/virtual/net/lo/flags":                 "0x9",
		"devices/virtual/net/lo/carrier":               "1",
		"devices/virtual/net/lo/mtu":                   "65536",
		"devices/virtual/net/lo/statistics/rx_packets": "42",
		// An excluded interface whose every file is unreadable.
		"devices/virtual/net/docker0/ifindex": "",
	}
	for rel, content := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A directory where a file should be: reading it fails with EISDIR,
	// standing in for an attribute the driver refuses.
	if err := os.MkdirAll(filepath.Join(root, "devices/virtual/net/lo/statistics/tx_packets"), 0o755); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"class/net/enp8s0f1np1": "../../devices/pci0000:00/0000:00:01.1/0000:08:00.1/net/enp8s0f1np1",
		"class/net/ens5":        "../../devices/pci0000:00/0000:00:05.0/net/ens5",
		"class/net/lo":          "../../devices/virtual/net/lo",
		"class/net/docker0":     "../../devices/virtual/net/docker0",
		// An interface deleted between the listing and the reads.
		"class/net/gone0": "../../devices/virtual/net/gone0",
		"devices/pci0000:00/0000:00:01.1/0000:08:00.1/net/enp8s0f1np1/device": "../../../0000:08:00.1",
		"devices/pci0000:00/0000:00:01.1/0000:08:00.1/subsystem":              "../../../../bus/pci",
		"devices/pci0000:00/0000:00:01.1/0000:08:00.1/driver":                 "../../../../bus/pci/drivers/mlx5_core",
		"devices/pci0000:00/0000:00:05.0/net/ens5/device":                     "../../../0000:00:05.0",
		"devices/pci0000:00/0000:00:05.0/subsystem":                           "../../../bus/pci",
		"devices/pci0000:00/0000:00:05.0/driver":                              "../../../bus/pci/drivers/ena",
	}
	for rel, target := range links {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func pollOnce(t testing.TB, c collector.Collector) (*exposition.Snapshot, *collector.SourceErrors) {
	t.Helper()
	r := collectortest.MustPoll(t, c, nil)
	return r.Snapshot, r.Errors
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	collectortest.Golden(t, filepath.Join("testdata", name), got)
}

func TestNetdevFixture(t *testing.T) {
	root := sysfsFixture(t)
	f, err := collector.NewNameFilter("collector.netdev.device", "", "docker.*")
	if err != nil {
		t.Fatal(err)
	}
	c := New(Config{SysfsPath: root, Filter: f}, zap.NewNop())
	snap, errs := pollOnce(t, c)
	golden(t, "netdev.prom", snap.String())
	if got, want := snap.Devices(), 3; got != want {
		t.Errorf("devices = %d, want %d (excluded and vanished interfaces do not count)", got, want)
	}
	// rx_dropped is unparsable and lo's tx_packets is a directory: both
	// are dropped and counted; nothing else fails.
	got := map[string]uint64{}
	for _, rc := range errs.Counts() {
		got[rc.Reason] = rc.Count
	}
	if diff := cmp.Diff(map[string]uint64{"parse": 1, "other": 1}, got); diff != "" {
		t.Errorf("source errors (-want +got):\n%s", diff)
	}
	for _, absent := range []string{"docker0", "gone0", `nic_netdev_carrier{device="ens5"}`, `nic_netdev_speed_bytes_per_second{device="ens5"}`, `nic_netdev_rx_dropped_total{device="enp8s0f1np1"}`} {
		if strings.Contains(snap.String(), absent) {
			t.Errorf("snapshot contains %q", absent)
		}
	}
}

func TestNetdevRealSysfs(t *testing.T) {
	if _, err := os.Stat("/sys/class/net/lo"); err != nil {
		t.Skipf("no sysfs: %v", err) // not Linux with sysfs; nothing to compare against
	}
	c := New(Config{SysfsPath: "/sys"}, zap.NewNop())
	snap, errs := pollOnce(t, c)
	out := snap.String()
	mtu, err := os.ReadFile("/sys/class/net/lo/mtu")
	if err != nil {
		t.Fatal(err)
	}
	if want := `nic_netdev_mtu_bytes{device="lo"} ` + strings.TrimSpace(string(mtu)); !strings.Contains(out, want) {
		t.Errorf("scrape lacks %q", want)
	}
	entries, err := os.ReadDir("/sys/class/net")
	if err != nil {
		t.Fatal(err)
	}
	if snap.Devices() != len(entries) {
		t.Errorf("devices = %d, want %d", snap.Devices(), len(entries))
	}
	for _, e := range entries {
		if !strings.Contains(out, `nic_netdev_info{device="`+e.Name()+`"`) {
			t.Errorf("no info series for %s", e.Name())
		}
	}
	// lo answers EINVAL for speed on a real kernel: that means "no speed",
	// so the series is absent, nothing is counted or logged, and the
	// attribute is remembered and not read again.
	if strings.Contains(out, `nic_netdev_speed_bytes_per_second{device="lo"}`) {
		t.Errorf("lo has a speed series")
	}
	if got := errs.Counts(); len(got) != 0 {
		t.Errorf("source errors on a healthy real host: %v", got)
	}
	ifindex, err := os.ReadFile("/sys/class/net/lo/ifindex")
	if err != nil {
		t.Fatal(err)
	}
	if !c.unsupported.Has("lo#"+strings.TrimSpace(string(ifindex)), "speed") {
		t.Errorf("lo's speed EINVAL was not remembered")
	}
}

func TestNetdevMissingSysfsFails(t *testing.T) {
	c := New(Config{SysfsPath: filepath.Join(t.TempDir(), "nope")}, zap.NewNop())
	err := c.Update(context.Background(), collector.NewPoll(exposition.NewBuilder(), nil))
	if err == nil || !strings.Contains(err.Error(), "listing network interfaces") {
		t.Errorf("err = %v, want a listing error", err)
	}
}

func BenchmarkNetdevPoll(b *testing.B) {
	root := sysfsFixture(b)
	c := New(Config{SysfsPath: root}, zap.NewNop())
	errs := collector.NewSourceErrors(zap.NewNop(), time.Hour)
	bld := exposition.NewBuilder()
	b.ReportAllocs()
	for b.Loop() {
		bld.Reset()
		if err := c.Update(context.Background(), collector.NewPoll(bld, errs)); err != nil {
			b.Fatal(err)
		}
		_ = bld.Snapshot()
	}
}
