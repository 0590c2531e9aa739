package collect

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/diagnose"
	"github.com/nic-exporter/nic_exporter/internal/ethtoolioctl"
)

// fakeEthtool is an ethtool source with one interface whose statistics
// the test sets.
type fakeEthtool struct {
	names []string
	vals  []uint64
	err   error
}

func (f *fakeEthtool) Interfaces() ([]ethtoolioctl.Interface, error) {
	return []ethtoolioctl.Interface{{Name: "eth0", Index: 2}}, f.err
}
func (f *fakeEthtool) DriverInfo(string) (ethtoolioctl.DriverInfo, error) {
	return ethtoolioctl.DriverInfo{Driver: "ena", BusInfo: "0000:00:05.0", NStats: len(f.names)}, nil
}
func (f *fakeEthtool) Link(string) (ethtoolioctl.Link, error) {
	return ethtoolioctl.Link{HasDetected: true, Detected: true}, nil
}
func (f *fakeEthtool) StatNames(string, int) ([]string, error) { return f.names, nil }
func (f *fakeEthtool) Stats(_ string, dst []uint64) error {
	copy(dst, f.vals)
	return nil
}

// fakeSysfs makes a sysfs root where eth0 has a device.
func fakeSysfs(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	dev := filepath.Join(root, "devices/pci0000:00/0000:00:05.0")
	if err := os.MkdirAll(filepath.Join(dev, "net/eth0"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "class/net"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../../..", filepath.Join(dev, "net/eth0/device")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../devices/pci0000:00/0000:00:05.0/net/eth0", filepath.Join(root, "class/net/eth0")); err != nil {
		t.Fatal(err)
	}
	return root
}

// TestSamplesAndLimits checks the two samples, the per-file cut and the
// total limit, and that a source that fails is in the manifest.
func TestSamplesAndLimits(t *testing.T) {
	et := &fakeEthtool{names: []string{"wd_expired", "tx_timeout"}, vals: []uint64{0, 0}}
	waits := 0
	cfg := Config{
		Sources: Sources{Host: "test", SysfsPath: fakeSysfs(t),
			Ethtool: func() (Ethtool, error) { return et, nil },
			Devlink: func() (Devlink, error) { return nil, os.ErrPermission },
		},
		Interval: 10 * time.Second, Timeout: time.Minute,
		Wait: func(context.Context, time.Duration) error {
			waits++
			et.vals = []uint64{3, 0} // the counter moves between the samples
			return nil
		},
	}
	b, err := Run(context.Background(), cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if waits != 1 || len(b.Manifest.Samples) != 2 || b.Manifest.Samples[0].Dir != EarlierDir {
		t.Fatalf("waits %d, samples %+v", waits, b.Manifest.Samples)
	}
	early, late := string(b.Files[EarlierDir+"/ethtool_-S_eth0.txt"]), string(b.Files["ethtool_-S_eth0.txt"])
	if !strings.Contains(early, "wd_expired: 0") || !strings.Contains(late, "wd_expired: 3") {
		t.Errorf("samples:\n%s\n%s", early, late)
	}
	found := false
	for _, u := range b.Manifest.Unreadable {
		found = found || strings.HasPrefix(u.Source, "devlink") && strings.Contains(u.Reason, "permission")
	}
	if !found {
		t.Errorf("devlink's permission error is not in the manifest: %+v", b.Manifest.Unreadable)
	}

	cfg.Limits = Limits{MaxFileSize: 20, MaxTotal: 50}
	b, err = Run(context.Background(), cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, f := range b.Manifest.Files {
		if f.Bytes > 20 {
			t.Errorf("%s: %d bytes, more than the limit", f.Name, f.Bytes)
		}
		total += f.Bytes
	}
	if total > 50 {
		t.Errorf("%d bytes in all, more than the limit", total)
	}
	var cut, left bool
	for _, f := range b.Manifest.Files {
		cut = cut || f.Truncated
	}
	for _, u := range b.Manifest.Unreadable {
		left = left || strings.Contains(u.Reason, "limit")
	}
	if !cut || !left {
		t.Errorf("the cut (%t) or the files left out (%t) are not in the manifest: %+v", cut, left, b.Manifest)
	}
}

// TestSecondSampleTimeout checks that a collection whose time runs out
// before the second sample keeps the first one at the top level.
func TestSecondSampleTimeout(t *testing.T) {
	et := &fakeEthtool{names: []string{"wd_expired"}, vals: []uint64{1}}
	b, err := Run(context.Background(), Config{
		Sources:  Sources{Host: "test", SysfsPath: fakeSysfs(t), Ethtool: func() (Ethtool, error) { return et, nil }},
		Interval: time.Hour, Timeout: time.Minute,
		Wait: func(context.Context, time.Duration) error { return context.DeadlineExceeded },
	}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := b.Files["ethtool_-S_eth0.txt"]; !ok {
		t.Errorf("the only sample is not at the top level: %v", b.names())
	}
	if len(b.Manifest.Samples) != 1 || b.Manifest.Samples[0].Dir != "" {
		t.Errorf("samples %+v", b.Manifest.Samples)
	}
}

// TestWriteTarGz checks that the archive is deterministic, holds only
// directories and regular files under one top-level directory, and that
// diagnose reads it as it reads the directory.
func TestWriteTarGz(t *testing.T) {
	et := &fakeEthtool{names: []string{"wd_expired"}, vals: []uint64{2}}
	run := func() *Bundle {
		b, err := Run(context.Background(), Config{
			Sources:  Sources{Host: "test", SysfsPath: fakeSysfs(t), Ethtool: func() (Ethtool, error) { return et, nil }},
			Interval: time.Second, Timeout: time.Minute,
			Now:  func() time.Time { return time.Unix(1700000000, 0) },
			Wait: func(context.Context, time.Duration) error { return nil },
		}, zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	dir := t.TempDir()
	var archives [2][]byte
	for i := range archives {
		p := filepath.Join(dir, "b"+string(rune('0'+i)), "bundle.tar.gz")
		if err := os.Mkdir(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := run().Write(p, time.Unix(1700000000, 0)); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		archives[i] = data
		// Nothing else is left beside it (the temporary file is renamed).
		if ents, _ := os.ReadDir(filepath.Dir(p)); len(ents) != 1 {
			t.Errorf("%d entries beside the archive", len(ents))
		}
	}
	if !bytes.Equal(archives[0], archives[1]) {
		t.Error("two archives of the same bundle differ")
	}
	zr, err := gzip.NewReader(bytes.NewReader(archives[0]))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(h.Name, "bundle/") || (h.Typeflag != tar.TypeReg && h.Typeflag != tar.TypeDir) {
			t.Errorf("member %q of type %c", h.Name, h.Typeflag)
		}
	}
	rules := diagnoseRules(t)
	var out bytes.Buffer
	code := diagnose.Run(diagnose.Config{Paths: []string{filepath.Join(dir, "b0", "bundle.tar.gz")}, Format: "text", Rules: rules,
		Limits: diagnose.DefaultLimits, Now: time.Unix(1700000000, 0)}, &out, &out, zap.NewNop())
	if code != diagnose.ExitFindings || !strings.Contains(out.String(), "NICENAWatchdogExpired eth0") {
		t.Errorf("diagnose of the archive: exit %d\n%s", code, out.String())
	}
	// An existing archive is not overwritten.
	if err := run().Write(filepath.Join(dir, "b0", "bundle.tar.gz"), time.Now()); err == nil {
		t.Error("an existing archive was overwritten")
	}
}

// TestWriteDirRefuses checks that a directory bundle is written only
// into a new or empty directory and never through a symbolic link.
func TestWriteDirRefuses(t *testing.T) {
	b := &Bundle{Files: map[string][]byte{"a.txt": []byte("x\n")}}
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "other"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := b.Write(full, time.Now()); err == nil {
		t.Error("wrote into a directory that is not empty")
	}
	target := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := b.Write(link, time.Now()); err == nil {
		t.Error("wrote through a symbolic link")
	}
	if ents, _ := os.ReadDir(target); len(ents) != 0 {
		t.Errorf("files written into the link's target: %v", ents)
	}
	fresh := filepath.Join(t.TempDir(), "new")
	if err := b.Write(fresh, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(fresh, ManifestFile)); err != nil {
		t.Error(err)
	}
}

// TestCollectThisHost collects this machine as the user running the
// test, with whatever it can read, without the daemon and in one
// sample: the bundle is written, diagnose reads it, and every source it
// could not read has a reason.
func TestCollectThisHost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, err := Run(ctx, Config{Sources: HostSources("/sys", "/proc"), Timeout: time.Minute, CommandTimeout: 20 * time.Second}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range b.Manifest.Unreadable {
		if u.Reason == "" {
			t.Errorf("%s: no reason", u.Source)
		}
		t.Logf("not read: %s: %s", u.Source, u.Reason)
	}
	for _, f := range b.Manifest.Files {
		t.Logf("file %s (%d bytes): %s", f.Name, f.Bytes, f.Source)
	}
	if _, ok := b.Files["uname.txt"]; !ok {
		t.Error("no uname.txt")
	}
	p := filepath.Join(t.TempDir(), "host.tar.gz")
	if err := b.Write(p, time.Now()); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	code := diagnose.Run(diagnose.Config{Paths: []string{p}, Format: "text", Rules: diagnoseRules(t), Limits: diagnose.DefaultLimits,
		Now: time.Now()}, &out, &out, zap.NewNop())
	if code == diagnose.ExitUnreadable {
		t.Fatalf("diagnose cannot read this host's bundle:\n%s", out.String())
	}
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.Contains(l, "unparsable") {
			t.Errorf("diagnose: %s", l)
		}
	}
}

// TestCommandTimeout runs a real command that does not finish within
// the command timeout: it is killed with its process group and the
// manifest reason says so.
func TestCommandTimeout(t *testing.T) {
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Skip("no sleep(1)")
	}
	c := &collector{cfg: Config{CommandTimeout: 100 * time.Millisecond, Limits: DefaultLimits}}
	_, err := c.run(context.Background(), "sleep", "30")
	if err == nil || !strings.Contains(err.Error(), "no answer within 100ms") {
		t.Errorf("sleep 30: %v", err)
	}
	out, err := c.run(context.Background(), "sh", "-c", "echo ok")
	if err != nil || string(out) != "ok\n" {
		t.Errorf("echo ok: %q, %v", out, err)
	}
	if _, err := c.run(context.Background(), "nic_exporter-no-such-tool"); err == nil || !strings.Contains(err.Error(), "not installed") {
		t.Errorf("missing tool: %v", err)
	}
}

// TestHwmonThermalZone checks hwmon_sysfs.txt of a function without a
// hwmon device (mlx5 on kernels 6.4 and 6.5): the thermal zones the
// netdev collector looks at up to the function's, as the kernel names
// them (zone type "mlx5_<address>", the upstream fix "net/mlx5: Fix
// thermal zone name"; a ConnectX zone at 41.0 °C as lm-sensors printed
// it in mate-desktop/mate-sensors-applet#134), and its interface; a
// function with neither is left out.
func TestHwmonThermalZone(t *testing.T) {
	root := t.TempDir()
	const fn = "devices/pci0000:a0/0000:a0:01.1/0000:a2:00.0"
	const other = "devices/pci0000:a0/0000:a0:01.1/0000:a2:00.1"
	for rel, content := range map[string]string{
		fn + "/net/ens1f0np0/ifindex":                "5",
		other + "/net/ens1f1np1/ifindex":             "6",
		"devices/virtual/thermal/thermal_zone0/type": "x86_pkg_temp",
		"devices/virtual/thermal/thermal_zone0/temp": "55000",
		"devices/virtual/thermal/thermal_zone1/type": "mlx5_0000:a2:00.0",
		"devices/virtual/thermal/thermal_zone1/temp": "41000",
		"devices/virtual/thermal/thermal_zone2/type": "acpitz",
	} {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for rel, target := range map[string]string{
		"class/net/ens1f0np0":           "../../" + fn + "/net/ens1f0np0",
		fn + "/net/ens1f0np0/device":    "../../../0000:a2:00.0",
		"class/net/ens1f1np1":           "../../" + other + "/net/ens1f1np1",
		other + "/net/ens1f1np1/device": "../../../0000:a2:00.1",
		"class/thermal/thermal_zone0":   "../../devices/virtual/thermal/thermal_zone0",
		"class/thermal/thermal_zone1":   "../../devices/virtual/thermal/thermal_zone1",
		"class/thermal/thermal_zone2":   "../../devices/virtual/thermal/thermal_zone2",
	} {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	b := &Bundle{Files: map[string][]byte{}, limits: DefaultLimits, Manifest: Manifest{Unreadable: []Unreadable{}}}
	c := &collector{src: Sources{SysfsPath: root}, b: b, log: zap.NewNop()}
	c.hwmonSample("")
	want := "bus/pci/devices/0000:a2:00.0/net/ens1f0np0/ifindex:5\n" +
		"class/thermal/thermal_zone0/type:x86_pkg_temp\n" +
		"class/thermal/thermal_zone1/temp:41000\n" +
		"class/thermal/thermal_zone1/type:mlx5_0000:a2:00.0\n"
	if got := string(b.Files[HwmonFile]); got != want {
		t.Errorf("%s:\n%s\nwant:\n%s", HwmonFile, got, want)
	}
	if len(b.Manifest.Unreadable) > 0 {
		t.Errorf("unreadable: %+v", b.Manifest.Unreadable)
	}
	h, err := diagnose.ParseHwmonSysfs(want)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Functions) != 1 || h.Functions[0].Address != "0000:a2:00.0" || strings.Join(h.Functions[0].Interfaces, ",") != "ens1f0np0" {
		t.Errorf("diagnose reads the functions %+v", h.Functions)
	}
}
