package diagnose

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExporterMetricsBadFile checks the error path of the exporter's
// /metrics in a bundle: the daemon's own demo scrape as the exporter's
// golden file keeps it (cmd/nic_exporter/testdata/demo.prom, real output
// whose timing-dependent values are replaced by "<volatile>") does not
// parse, and costs only itself: the file is noted with the parser's
// reason, and an ethtool -S beside it still gives its finding.
func TestExporterMetricsBadFile(t *testing.T) {
	prom, err := os.ReadFile(filepath.Join("..", "cmd", "nic_exporter", "testdata", "demo.prom"))
	if err != nil {
		t.Fatal(err)
	}
	r := analyzer(t).Analyze(reachBundle(t, map[string]string{
		"metrics.txt":             string(prom),
		"ethtool_-S_enp8s0f1.txt": ethtoolS("mlx5_core", "rx_out_of_buffer: 500000"),
	}))
	var note string
	for _, f := range r.Files {
		if f.Name == "metrics.txt" {
			if f.Kind != KindExporterMetrics {
				t.Errorf("metrics.txt read as %q", f.Kind)
			}
			note = f.Note
		}
	}
	if !strings.HasPrefix(note, "unparsable: not a text exposition") || !strings.Contains(note, "volatile") {
		t.Errorf("metrics.txt note %q", note)
	}
	if !alertsOf(r)["NICRxOutOfBuffer"] {
		t.Errorf("the ethtool file beside it lost its finding: %v", alertsOf(r))
	}
}

// TestExporterMetricsReplaceFamilies checks that a family the exporter
// exported replaces all of diagnose's series of it, whatever their
// labels: pci_sysfs.txt names a function by its address, the daemon by
// its interface, and kept both the rule's label_replace would see one
// function twice.
func TestExporterMetricsReplaceFamilies(t *testing.T) {
	r := analyzer(t).Analyze(reachBundle(t, map[string]string{
		"pci_sysfs.txt": "0000:08:00.1/aer_dev_nonfatal:TOTAL_ERR_NONFATAL 1\n0000:08:00.1/current_link_speed:32.0 GT/s PCIe\n",
		"metrics.txt": exporterMetrics(`nic_pcie_aer_errors_total{device="enp8s0f1np1",pci_address="0000:08:00.1",severity="nonfatal"} 2 counter`,
			`nic_kernel_log_events_total{device="0000:08:00.1",driver="pcieport",event="pcie_aer_nonfatal"} 1 counter`),
	}))
	for _, f := range r.Files {
		if f.Name == "(alerting rules)" {
			t.Fatalf("rules not evaluated: %s", f.Note)
		}
	}
	for _, f := range r.Findings {
		if strings.Contains(f.Evidence, "pci_sysfs.txt") {
			t.Errorf("%s still reads pci_sysfs.txt: %s", f.Alert, f.Evidence)
		}
	}
	if !alertsOf(r)["NICPCIeAERUncorrectable"] {
		t.Errorf("no NICPCIeAERUncorrectable from metrics.txt: %v", alertsOf(r))
	}
}
