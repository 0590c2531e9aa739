package phy_test

import (
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/phy"
)

// A module read the kernel refuses for lack of CAP_NET_ADMIN (EPERM from
// the netlink request, EACCES or fs.ErrPermission from elsewhere) is
// remembered per device like EOPNOTSUPP: asked once per UnsupportedRetry
// or when the interface changes, not every module interval. It is logged
// once per process with what grants the capability, counted once per
// remembered refusal as reason eacces, and the rest of the interface is
// still exported.
func TestModulePermissionRemembered(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"eperm", fmt.Errorf("module eeprom: netlink receive: %w", syscall.EPERM)},
		{"eacces", fmt.Errorf("module eeprom: %w", syscall.EACCES)},
		{"fs.ErrPermission", fmt.Errorf("module eeprom: %w", fs.ErrPermission)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := newFake(
				&fakeDev{iface: phy.Interface{Name: "eth0", Index: 2, Driver: "mlx5_core"}, link: phy.LinkState{Up: boolp(true), DownEvents: u64(3)}, moduleErr: tc.err},
				&fakeDev{iface: phy.Interface{Name: "eth1", Index: 3, Driver: "mlx5_core"}, link: phy.LinkState{Up: boolp(true), DownEvents: u64(0)}, moduleErr: tc.err},
			)
			core, logs := observer.New(zap.DebugLevel)
			log := zap.New(core)
			clk := newClock()
			c := newCollector(t, src, clk, log)
			errs := collector.NewSourceErrors(log, 0) // no rate limit: every generic line would show
			for i := range 5 {
				text := pollOnce(t, c, errs).String()
				if strings.Contains(text, "nic_transceiver_") {
					t.Errorf("poll %d: module series despite %v:\n%s", i, tc.err, text)
				}
				if !strings.Contains(text, `nic_phy_link_down_events_total{device="eth0"} 3`) {
					t.Errorf("poll %d: link state missing:\n%s", i, text)
				}
				clk.advance(2 * time.Minute) // past the module interval each time
			}
			for _, dev := range []string{"eth0", "eth1"} {
				if n := src.count("module", dev); n != 1 {
					t.Errorf("module of %s read %d times in 5 polls, want 1", dev, n)
				}
				if n := src.count("linkstate", dev); n != 5 {
					t.Errorf("linkstate of %s read %d times in 5 polls, want 5", dev, n)
				}
			}
			wantCounts := func(n uint64) {
				t.Helper()
				if got := errs.Counts(); len(got) != 1 || got[0] != (collector.ReasonCount{Reason: "eacces", Count: n}) {
					t.Errorf("source errors %v, want eacces %d", got, n)
				}
			}
			wantCounts(2) // one per device
			wantOneWarning := func() {
				t.Helper()
				warns := logs.FilterLevelExact(zapcore.WarnLevel).All()
				if len(warns) != 1 {
					t.Fatalf("%d warnings logged, want 1: %v", len(warns), warns)
				}
				msg := warns[0].Message
				for _, want := range []string{"CAP_NET_ADMIN", "components/transceivers", "transceivers.enabled=true", "AmbientCapabilities="} {
					if !strings.Contains(msg, want) {
						t.Errorf("warning %q does not say %q", msg, want)
					}
				}
				if f := warns[0].ContextMap(); f["device"] != "eth0" || f["operation"] != "module" || f["needs"] != "CAP_NET_ADMIN" {
					t.Errorf("warning fields %v", f)
				}
			}
			wantOneWarning()

			// After the retry interval each device is asked again, once.
			clk.advance(time.Hour)
			pollOnce(t, c, errs)
			pollOnce(t, c, errs)
			for _, dev := range []string{"eth0", "eth1"} {
				if n := src.count("module", dev); n != 2 {
					t.Errorf("module of %s read %d times after the retry interval, want 2", dev, n)
				}
			}
			wantCounts(4)

			// A re-created interface forgets the refusal.
			src.devs[1].iface.Index = 99
			pollOnce(t, c, errs)
			if n := src.count("module", "eth1"); n != 3 {
				t.Errorf("module of eth1 read %d times after re-creation, want 3", n)
			}
			if n := src.count("module", "eth0"); n != 2 {
				t.Errorf("module of eth0 read %d times, want 2 (unchanged)", n)
			}
			wantCounts(5)
			wantOneWarning()

			// Granted (a restart with the capability is a new process; here the
			// refusal expires): the module is read and exported again.
			for _, d := range src.devs {
				d.moduleErr, d.module = nil, loadDump(t, "sff8636-mellanox-qsfp28-ethtool.dump")
			}
			clk.advance(time.Hour)
			if text := pollOnce(t, c, errs).String(); !strings.Contains(text, `nic_transceiver_info{device="eth0"`) {
				t.Errorf("module series missing once permitted:\n%s", text)
			}
		})
	}
}
