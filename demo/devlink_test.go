package demo

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/devlink"
)

func TestDevlinkFaults(t *testing.T) {
	for _, tc := range []struct {
		elapsed time.Duration
		// want maps "device reporter" to state, errors, recoveries.
		want map[string][3]uint64
	}{
		{30 * time.Second, map[string][3]uint64{
			"pci/0000:08:00.0 fw_fatal": {0, 0, 0}, "pci/0000:08:00.1 fw_fatal": {0, 0, 0},
			"pci/0000:08:00.1 vnic": {0, 0, 0}, "pci/0000:08:00.1 fw": {0, 0, 0},
		}},
		{90 * time.Second, map[string][3]uint64{
			"pci/0000:08:00.0 fw_fatal": {1, 1, 0}, "pci/0000:08:00.1 fw_fatal": {1, 1, 0},
			"pci/0000:08:00.1 vnic": {1, 1, 0}, "pci/0000:08:00.1/131071 tx": {0, 0, 0},
		}},
		{3 * time.Minute, map[string][3]uint64{
			"pci/0000:08:00.0 fw_fatal": {0, 1, 1}, "pci/0000:08:00.1 fw_fatal": {0, 1, 1},
			"pci/0000:08:00.1 vnic": {1, 1, 0}, "pci/0000:08:00.0 fw": {0, 0, 0},
		}},
	} {
		h, err := New(Config{Faults: "fw_fatal@1m-2m,vnic@40s", Elapsed: tc.elapsed}, zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		rs, err := h.Devlink().HealthReporters(context.Background())
		h.Close()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string][3]uint64{}
		for _, r := range rs {
			got[r.ReporterID.String()] = [3]uint64{uint64(*r.State), *r.ErrorCount, *r.RecoverCount}
		}
		if len(rs) != 7 {
			t.Errorf("at %v: %d reporters, want 7 (fw and fw_fatal on both functions, vnic, tx, rx)", tc.elapsed, len(rs))
		}
		for id, want := range tc.want {
			if got[id] != want {
				t.Errorf("at %v: %s = %v (state, errors, recoveries), want %v", tc.elapsed, id, got[id], want)
			}
		}
	}
}

func TestDevlinkDiagnose(t *testing.T) {
	h, err := New(Config{Faults: "fw@10s", Elapsed: time.Minute}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	dl := h.Devlink()
	o, err := dl.Diagnose(context.Background(), devlink.ReporterID{Handle: devlinkIB, Name: "fw"})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := o.Get("Syndrome"); v != uint8(1) {
		t.Errorf("fw diagnose in error = %v, want syndrome 1", o)
	}
	info, err := dl.Info(context.Background(), devlinkEth)
	if err != nil || info.Driver != "mlx5_core" || devlink.Lookup(info.Running, "fw.version") != cx7.firmware || devlink.Lookup(info.Fixed, "fw.psid") != cx7.psid {
		t.Errorf("Info = %+v, %v", info, err)
	}
}
