package demo

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/collector/netdev"
)

// TestDemoAER runs the netdev collector on the demo host with both AER
// faults and checks that the AER counters agree with the kernel log the
// same faults wrote: one non-fatal message per pcie_aer activation, a burst
// of corrected errors per "Multiple Corrected" report of
// pcie_aer_corrected, on top of the receiver errors of link training.
func TestDemoAER(t *testing.T) {
	tests := []struct {
		name             string
		faults           []Fault
		wantCor, wantNon uint64
		// unlogged is set when the fault ended before the frozen clock's
		// only update, so its log lines were never due.
		unlogged bool
	}{
		{name: "healthy", wantCor: aerBootCorrected},
		{name: "nonfatal", faults: []Fault{{Name: "pcie_aer", Start: 3 * time.Minute}}, wantCor: aerBootCorrected, wantNon: 1},
		{
			name: "corrected",
			// Bursts at 4m, 4m10s, ... 5m: 7 of them.
			faults:  []Fault{{Name: "pcie_aer_corrected", Start: 4 * time.Minute}},
			wantCor: aerBootCorrected + 7*aerCorrectedBurst,
		},
		{
			name:     "corrected ended",
			faults:   []Fault{{Name: "pcie_aer_corrected", Start: time.Minute, End: time.Minute + 25*time.Second}},
			wantCor:  aerBootCorrected + 3*aerCorrectedBurst,
			unlogged: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newFrozenHost(t, 5*time.Minute, tc.faults...)
			b := exposition.NewBuilder()
			errs := collector.NewSourceErrors(zap.NewNop(), time.Hour)
			if err := netdev.New(netdev.Config{SysfsPath: h.SysfsPath()}, zap.NewNop()).Update(context.Background(), collector.NewPoll(b, errs)); err != nil {
				t.Fatal(err)
			}
			if got := errs.Counts(); len(got) != 0 {
				t.Errorf("source errors: %v", got)
			}
			snap := b.Snapshot()
			out, detail := snap.String(), snap.Detail().String()
			for _, w := range []string{
				`nic_pcie_aer_errors_total{device="enp8s0f1np1",pci_address="0000:08:00.1",severity="correctable"} ` + itoa(tc.wantCor),
				`nic_pcie_aer_errors_total{device="enp8s0f1np1",pci_address="0000:08:00.1",severity="nonfatal"} ` + itoa(tc.wantNon),
				`nic_pcie_aer_errors_total{device="enp8s0f1np1",pci_address="0000:08:00.1",severity="fatal"} 0`,
				`nic_pcie_aer_errors_total{device="ibp8s0f0",pci_address="0000:08:00.0",severity="correctable"} ` + itoa(aerBootCorrected),
			} {
				if !strings.Contains(out, w+"\n") {
					t.Errorf("scrape lacks %s", w)
				}
			}
			for _, w := range []string{
				`nic_pcie_aer_error_types_total{device="enp8s0f1np1",pci_address="0000:08:00.1",severity="correctable",type="RxErr"} ` + itoa(tc.wantCor),
				`nic_pcie_aer_error_types_total{device="enp8s0f1np1",pci_address="0000:08:00.1",severity="nonfatal",type="CmpltTO"} ` + itoa(tc.wantNon),
			} {
				if !strings.Contains(detail, w+"\n") {
					t.Errorf("detail lacks %s", w)
				}
			}
			if strings.Contains(out, `nic_pcie_aer_errors_total{device="ens5"`) {
				t.Errorf("the ENA function has no AER capability on the demo host")
			}
			if tc.unlogged {
				return
			}
			// The kernel log has one report per non-fatal message and one
			// per burst of corrected errors.
			var reports = map[string]uint64{}
			h.klog.mu.Lock()
			for _, r := range h.klog.records {
				switch {
				case strings.Contains(r, "AER: Multiple Corrected error message received from 0000:08:00.1"):
					reports["cor"]++
				case strings.Contains(r, "AER: Uncorrectable (Non-Fatal) error message received from 0000:08:00.1"):
					reports["nonfatal"]++
				}
			}
			h.klog.mu.Unlock()
			if reports["cor"]*aerCorrectedBurst != tc.wantCor-aerBootCorrected || reports["nonfatal"] != tc.wantNon {
				t.Errorf("kernel log reports %v disagree with the counters (corrected %d in bursts of %d, non-fatal %d)", reports, tc.wantCor-aerBootCorrected, aerCorrectedBurst, tc.wantNon)
			}
		})
	}
}

func itoa(v uint64) string { return strconv.FormatUint(v, 10) }
