package topology_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/collectortest"
	"github.com/nic-exporter/nic_exporter/collector/topology"
)

// TestHostileFiles checks that a named pipe planted in place of an
// attribute and of an information file is not opened for a blocking
// read: the poll ends, each counts as one source error, and the NIC and
// GPU lose only those values.
func TestHostileFiles(t *testing.T) {
	root := extract(t, "dgx_a100")
	for _, p := range []string{
		"sys/devices/pci0000:00/0000:00:01.1/0000:01:00.0/0000:02:01.0/0000:0a:00.0/0000:0b:00.0/0000:0c:00.0/numa_node",
		"proc/driver/nvidia/gpus/0000:07:00.0/information",
	} {
		p = filepath.Join(root, p)
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	errs := collector.NewSourceErrors(zap.NewNop(), time.Hour)
	r := collectortest.MustPoll(t, newCollector(t, root, "mlx5_0", "", topology.Rails{}), errs)
	if n := total(errs); n != 2 {
		t.Errorf("%d source errors, want 2: %v", n, errs.Counts())
	}
	want := `nic_topology_info{device="mlx5_0",gpu_index="0",gpu_link="PXB",gpu_pci="0000:07:00.0",gpu_pci_bus_id="00000000:07:00.0",gpu_uuid="",numa_node="-1",pci_address="0000:0c:00.0",pcie_switch="0000:01:00.0",rail="",root_port="0000:00:01.1"}`
	if s := collectortest.Series(t, r.Text); len(s) != 1 || s[want] != 1 {
		t.Errorf("series:\n%s\nwant %s", r.Text, want)
	}
}
