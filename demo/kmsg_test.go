package demo

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/applog"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/collector/kmsg"
	"github.com/nic-exporter/nic_exporter/internal/logrules"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// newFrozenHost returns a demo host at a frozen clock with faults set
// directly, so faults that other parts define can be tested here.
func newFrozenHost(t *testing.T, elapsed time.Duration, faults ...Fault) *Host {
	t.Helper()
	h, err := New(Config{Elapsed: elapsed}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	h.faults = faults
	if err := h.Update(); err != nil {
		t.Fatal(err)
	}
	return h
}

// TestLogFaultLinesMatch checks that every fault's documented log lines
// are recognised by the built-in rules: each fault alone yields at least
// one event.
func TestLogFaultLinesMatch(t *testing.T) {
	kernel, err := logrules.Compile(logrules.KernelRules())
	if err != nil {
		t.Fatal(err)
	}
	vma, err := logrules.Compile(logrules.VMARules())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		table  []logLines
		engine *logrules.Engine
	}{{kmsgFaults, kernel}, {vmaLogFaults, vma}} {
		for _, f := range tc.table {
			matched := 0
			for _, line := range f.lines {
				if _, msg, ok := strings.Cut(line, "|"); ok && len(line) > 1 && line[1] == '|' {
					line = msg
				}
				if _, ok := tc.engine.Match(line); ok {
					matched++
				}
			}
			if matched == 0 {
				t.Errorf("fault %s: none of its log lines matches a built-in rule", f.fault)
			}
		}
	}
	for _, l := range bootLines {
		if m, ok := kernel.Match(l[2:]); ok {
			t.Errorf("boot line %q matches %s; boot lines must be unremarkable", l, m.Rule.Event)
		}
	}
}

// TestDemoKmsg runs the kmsg collector on the demo host's kernel log with
// faults of this part and of other parts active.
func TestDemoKmsg(t *testing.T) {
	h := newFrozenHost(t, 5*time.Minute,
		Fault{Name: "fw_fatal", Start: time.Minute},
		Fault{Name: "wd_expired", Start: 2 * time.Minute},
		Fault{Name: "mlx5_cmd_timeout", Start: 2 * time.Minute}, // every minute: 4 times by 5m
		Fault{Name: "ib_link_down", Start: time.Minute},         // no documented kernel line
		Fault{Name: "pcie_degraded", Start: time.Minute},
		Fault{Name: "pcie_aer", Start: 3 * time.Minute},
	)
	rules, err := logrules.Compile(logrules.KernelRules())
	if err != nil {
		t.Fatal(err)
	}
	k := kmsg.New(kmsg.Config{
		Open:     func() (kmsg.Device, error) { return h.OpenKmsg() },
		Rules:    rules,
		Replay:   true,
		BootTime: h.BootTime(),
		Devices:  kmsg.SysfsDevices(h.SysfsPath()),
	}, zap.NewNop())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- k.Watch(ctx, func(func(*collector.Poll)) {}) }()
	want := []string{
		`nic_kernel_log_events_total{driver="mlx5_core",device="0000:08:00.1",event="mlx5_fw_fatal_error"} 1`,
		`nic_kernel_log_events_total{driver="mlx5_core",device="0000:08:00.1",event="mlx5_fw_syndrome"} 1`,
		`nic_kernel_log_events_total{driver="ena",device="ens5",event="ena_keep_alive_timeout"} 1`,
		`nic_kernel_log_events_total{driver="ena",device="ens5",event="ena_reset_completed"} 1`,
		`nic_kernel_log_events_total{driver="mlx5_core",device="0000:08:00.0",event="mlx5_cmd_timeout"} 4`,
		// The demo tree knows the function is an Ethernet controller.
		`nic_kernel_log_events_total{driver="pci",device="0000:08:00.1",event="pcie_link_limited"} 1`,
		// The root port's line and the function's own line of one report.
		`nic_kernel_log_events_total{driver="pci",device="0000:08:00.1",event="pcie_aer_nonfatal"} 2`,
		// Frozen clock: boot at 1700000000 - 24h, records at 24h + 5m.
		`nic_kernel_log_last_event_timestamp_seconds{driver="mlx5_core",device="0000:08:00.0",event="mlx5_cmd_timeout"} 1700000300`,
	}
	deadline := time.Now().Add(testenv.HangGuard)
	var out string
	for {
		b := exposition.NewBuilder()
		if err := k.Update(ctx, collector.NewPoll(b, nil)); err != nil {
			t.Fatal(err)
		}
		out = b.Snapshot().String()
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(out, w+"\n")
		}
		if ok || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done
	for _, w := range want {
		if !strings.Contains(out, w+"\n") {
			t.Errorf("missing %s in:\n%s", w, out)
		}
	}
}

// TestDemoDevices checks that the demo tree answers the kmsg collector's
// device questions as a host's sysfs would.
func TestDemoDevices(t *testing.T) {
	h := newFrozenHost(t, time.Minute)
	d := kmsg.SysfsDevices(h.SysfsPath())
	for addr, want := range map[string]uint32{"0000:08:00.0": 0x020700, "0000:08:00.1": 0x020000, "0000:00:05.0": 0x020000, "0000:00:01.1": 0x060400} {
		if got, ok := d.PCIClass(addr); !ok || got != want {
			t.Errorf("PCIClass(%s) = %#x, %v, want %#x", addr, got, ok, want)
		}
	}
	for name, want := range map[string]string{"mlx5_0": "0000:08:00.0", "mlx5_1": "0000:08:00.1"} {
		if got, ok := d.RDMAFunction(name); !ok || got != want {
			t.Errorf("RDMAFunction(%s) = %q, %v, want %s", name, got, ok, want)
		}
	}
	for addr, want := range map[string]string{"0000:00:05.0": "ens5", "0000:08:00.1": "enp8s0f1np1", "0000:08:00.0": "ibp8s0f0"} {
		if got, ok := d.NetInterface(addr); !ok || got != want {
			t.Errorf("NetInterface(%s) = %q, %v, want %s", addr, got, ok, want)
		}
	}
}

func TestDemoApplog(t *testing.T) {
	h := newFrozenHost(t, 2*time.Minute,
		Fault{Name: "vma_no_buffers", Start: 0}, // every 30 s: 5 times by 2m
		Fault{Name: "vma_daemon_down", Start: time.Minute},
	)
	rules, err := logrules.Compile(logrules.VMARules())
	if err != nil {
		t.Fatal(err)
	}
	a, err := applog.New(applog.Config{Globs: []string{h.VMALogGlob()}, Rules: rules, FromStart: true, TrimPrefix: h.Dir()}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	b := exposition.NewBuilder()
	if err := a.Update(context.Background(), collector.NewPoll(b, nil)); err != nil {
		t.Fatal(err)
	}
	out := b.Snapshot().String()
	for _, w := range []string{
		`nic_app_log_events_total{file="/log/vma/md_feed-4242.log",event="vma_rx_buffers_exhausted"} 5`,
		`nic_app_log_events_total{file="/log/vma/md_feed-4242.log",event="vma_daemon_unreachable"} 1`,
	} {
		if !strings.Contains(out, w+"\n") {
			t.Errorf("missing %s in:\n%s", w, out)
		}
	}
	if _, err := os.Stat(h.vmaLogPath()); err != nil {
		t.Error(err)
	}
}

// TestOwnedFaultsParse checks that the faults this part defines can be
// scheduled.
func TestOwnedFaultsParse(t *testing.T) {
	for _, s := range []string{"mlx5_cmd_timeout@1m", "mlx5_cq_overrun@0s-30s", "mlx5_module_error@2m", "ena_reg_read_timeout@1m", "vma_hugepages@0s", "vma_daemon_down@1m"} {
		if _, err := ParseFaults(s); err != nil {
			t.Errorf("ParseFaults(%q): %v", s, err)
		}
	}
}
