//go:build linux

package collect_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collect"
	"github.com/nic-exporter/nic_exporter/devlink"
	"github.com/nic-exporter/nic_exporter/diagnose"
	"github.com/nic-exporter/nic_exporter/internal/logrules"
	"github.com/nic-exporter/nic_exporter/internal/ruleeval"
	"github.com/nic-exporter/nic_exporter/internal/testenv/guest"
)

// TestCollectKernel collects a real kernel's host in one qemu boot: an
// e1000e PCIe function behind a root port (ethtool, PCIe link and AER
// attributes, carrier) and netdevsim's devlink with its dummy reporter
// broken and left in error. diagnose must read every file it knows and
// name the reporter. It skips locally without qemu and the kernel
// packages, and fails in CI.
func TestCollectKernel(t *testing.T) {
	if guest.InGuest() {
		collectKernelChecks(t)
		return
	}
	res := guest.RunTest(t, guest.Config{
		Run:     "^TestCollectKernel$",
		Args:    []string{"-test.v"},
		Modules: []string{"e1000e", "netdevsim"},
		QemuArgs: []string{"-machine", "q35",
			"-device", "pcie-root-port,id=rp1,chassis=1,slot=1", "-device", "e1000e,bus=rp1,id=nic1"},
	})
	if !strings.Contains(res.Output, "--- PASS: TestCollectKernel") {
		t.Errorf("the guest did not pass the checks; output:\n%s", res.Output)
	}
}

// collectKernelChecks runs in the guest.
func collectKernelChecks(t *testing.T) {
	if err := os.WriteFile("/sys/bus/netdevsim/new_device", []byte("10 1"), 0); err != nil {
		t.Fatalf("creating netdevsim10: %v", err)
	}
	c, err := devlink.New()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	dummy := devlink.ReporterID{Handle: devlink.Handle{Bus: "netdevsim", Device: "netdevsim10"}, Name: "dummy"}
	off := false
	if err := c.SetHealthReporter(ctx, dummy, devlink.HealthReporterSettings{AutoRecover: &off}); err != nil {
		t.Fatalf("auto_recover off: %v", err)
	}
	if err := os.WriteFile("/sys/kernel/debug/netdevsim/netdevsim10/health/break_health", []byte("1"), 0); err != nil {
		t.Fatalf("breaking the dummy reporter: %v", err)
	}

	b, err := collect.Run(ctx, collect.Config{Sources: collect.HostSources("/sys", "/proc"), Interval: 200 * time.Millisecond,
		Timeout: time.Minute}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range b.Manifest.Files {
		t.Logf("file %s (%d bytes): %s", f.Name, f.Bytes, f.Source)
	}
	for _, u := range b.Manifest.Unreadable {
		t.Logf("not read: %s: %s", u.Source, u.Reason)
	}
	has := func(pred func(string) bool) bool {
		for n := range b.Files {
			if pred(n) {
				return true
			}
		}
		return false
	}
	for _, want := range []string{"devlink_health.txt", collect.EarlierDir + "/devlink_health.txt", "devlink_dev_info.txt",
		"devlink_health_diagnose_netdevsim_netdevsim10_dummy.json", "pci_sysfs.txt", "netdev_sysfs.txt"} {
		if _, ok := b.Files[want]; !ok {
			t.Errorf("no %s", want)
		}
	}
	if !has(func(n string) bool {
		return strings.HasPrefix(n, "ethtool_-S_") && bytes.Contains(b.Files[n], []byte("rx_crc_errors"))
	}) {
		t.Error("no ethtool -S of the e1000e (rx_crc_errors)")
	}
	// The e1000e has no hwmon device and no mlx5 thermal zone: the
	// netdev collector's reading finds no temperature under the real
	// kernel's sysfs, so there is no hwmon_sysfs.txt, and looking costs
	// no unreadable source.
	if _, ok := b.Files[collect.HwmonFile]; ok {
		t.Errorf("%s for a NIC without a temperature:\n%s", collect.HwmonFile, b.Files[collect.HwmonFile])
	}
	for _, u := range b.Manifest.Unreadable {
		if strings.Contains(u.Source, "hwmon") || strings.Contains(u.Source, "thermal") {
			t.Errorf("not read: %s: %s", u.Source, u.Reason)
		}
	}
	if !bytes.Contains(b.Files["pci_sysfs.txt"], []byte("aer_dev_nonfatal:TOTAL_ERR_NONFATAL 0")) {
		t.Errorf("pci_sysfs.txt without the e1000e's AER counters:\n%s", b.Files["pci_sysfs.txt"])
	}

	out := filepath.Join(t.TempDir(), "bundle.tar.gz")
	if err := b.Write(out, time.Now()); err != nil {
		t.Fatal(err)
	}
	rules, err := logrules.Load("", logrules.KernelRules())
	if err != nil {
		t.Fatal(err)
	}
	bundle, err := diagnose.Open(out, diagnose.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	alerts, err := ruleeval.Shipped(nil)
	if err != nil {
		t.Fatal(err)
	}
	r := diagnose.NewAnalyzer(rules, alerts, nil).Analyze(bundle)
	for _, f := range r.Files {
		t.Logf("diagnose: %s: %s %s", f.Name, f.Kind, f.Note)
		if strings.Contains(f.Note, "unparsable") {
			t.Errorf("diagnose cannot parse %s: %s", f.Name, f.Note)
		}
		if f.Kind == "" && !strings.Contains(f.Note, "earlier sample") && !strings.HasPrefix(filepath.Base(f.Name), "devlink_health_diagnose_") &&
			f.Name != "dmesg_nic.txt" && f.Name != "journal_nic.txt" && f.Name != "uname.txt" && f.Name != "os-release.txt" {
			t.Errorf("diagnose does not read %s: %s", f.Name, f.Note)
		}
	}
	// The only finding is the reporter: the e1000e is administratively
	// down (ethtool says "Link detected: no", which NICLinkDown does not
	// count then), and its PCIe link and AER counters are clean.
	if len(r.Findings) != 1 || r.Findings[0].Alert != "NICDevlinkReporterStuck" ||
		r.Findings[0].Device != "netdevsim/netdevsim10 reporter dummy" {
		t.Errorf("findings %+v, want NICDevlinkReporterStuck of netdevsim/netdevsim10 reporter dummy only", r.Findings)
	}
}
