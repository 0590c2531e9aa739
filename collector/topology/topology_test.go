package topology_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/collectortest"
	"github.com/nic-exporter/nic_exporter/collector/topology"
	"github.com/nic-exporter/nic_exporter/demo"
)

// extract writes the fixture tree testdata/name.txtar below a temporary
// root and returns the root.
func extract(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name+".txtar"))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := demo.WriteTree(root, string(data)); err != nil {
		t.Fatal(err)
	}
	return root
}

// newCollector returns a topology collector on the fixture root.
func newCollector(t *testing.T, root, include, exclude string, rails topology.Rails) collector.Collector {
	t.Helper()
	f, err := collector.NewNameFilter("collector.topology.device", include, exclude)
	if err != nil {
		t.Fatal(err)
	}
	return topology.New(topology.Config{
		SysfsPath:  filepath.Join(root, "sys"),
		GPUInfoDir: filepath.Join(root, "proc", "driver", "nvidia", "gpus"),
		Filter:     f,
		Rails:      rails,
	}, zap.NewNop())
}

// TestFixturesGolden polls each fixture host, with and without rails,
// and compares the series with the golden files; no fixture reports a
// source error.
func TestFixturesGolden(t *testing.T) {
	for _, tc := range []struct {
		fixture, rails, golden string
		devices                int
	}{
		{fixture: "dgx_a100", golden: "dgx_a100.golden", devices: 20},
		{fixture: "dgx_a100", rails: "auto", golden: "dgx_a100_rails_auto.golden", devices: 20},
		{fixture: "dgx_a100", rails: "mlx5_0=r0,ibp18s0=r1", golden: "dgx_a100_rails_map.golden", devices: 20},
		{fixture: "two_socket", golden: "two_socket.golden", devices: 4},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			rails, err := topology.ParseRails(tc.rails)
			if err != nil {
				t.Fatal(err)
			}
			errs := collector.NewSourceErrors(zap.NewNop(), time.Hour)
			r := collectortest.MustPoll(t, newCollector(t, extract(t, tc.fixture), "", "", rails), errs)
			if n := total(errs); n != 0 {
				t.Errorf("%d source errors: %v", n, errs.Counts())
			}
			if got := r.Snapshot.Devices(); got != tc.devices {
				t.Errorf("devices = %d, want %d", got, tc.devices)
			}
			collectortest.Golden(t, filepath.Join("testdata", tc.golden), r.Text)
		})
	}
}

// dgxA100TopoM is the GPU-to-NIC part of nvidia-smi topo -m on a DGX
// A100 320GB, NVIDIA/DCGM#149 (NIC0..NIC9 are mlx5_0..mlx5_9); the rows
// of GPU6 and GPU7, cut off there, are those of rapidsai/ucx-py#749.
var dgxA100TopoM = []string{
	"GPU0 PXB PXB SYS SYS SYS SYS SYS SYS SYS SYS",
	"GPU1 PXB PXB SYS SYS SYS SYS SYS SYS SYS SYS",
	"GPU2 SYS SYS PXB PXB SYS SYS SYS SYS SYS SYS",
	"GPU3 SYS SYS PXB PXB SYS SYS SYS SYS SYS SYS",
	"GPU4 SYS SYS SYS SYS PXB PXB SYS SYS SYS SYS",
	"GPU5 SYS SYS SYS SYS PXB PXB SYS SYS SYS SYS",
	"GPU6 SYS SYS SYS SYS SYS SYS PXB PXB SYS SYS",
	"GPU7 SYS SYS SYS SYS SYS SYS PXB PXB SYS SYS",
}

// TestDGXA100MatchesNvidiaSmi checks that Classify, on the fixture tree,
// gives the matrix nvidia-smi printed on a real DGX A100.
func TestDGXA100MatchesNvidiaSmi(t *testing.T) {
	root := extract(t, "dgx_a100")
	h, err := topology.Scan(filepath.Join(root, "sys"), "", func(string) bool { return true }, func(k string, err error) { t.Errorf("%s: %v", k, err) })
	if err != nil {
		t.Fatal(err)
	}
	nicOf := make(map[string]topology.NIC)
	for _, n := range h.NICs {
		for _, d := range n.Devices {
			nicOf[d] = n
		}
	}
	if len(h.GPUs) != 8 {
		t.Fatalf("%d GPUs, want 8 (the NVSwitch is not one): %+v", len(h.GPUs), h.GPUs)
	}
	var got []string
	for _, g := range h.GPUs {
		row := []string{fmt.Sprintf("GPU%d", g.Index)}
		for i := 0; i < 10; i++ {
			n, ok := nicOf[fmt.Sprintf("mlx5_%d", i)]
			if !ok {
				t.Fatalf("no mlx5_%d", i)
			}
			row = append(row, topology.Classify(n.Function, g.Function).String())
		}
		got = append(got, strings.Join(row, " "))
	}
	if g, w := strings.Join(got, "\n"), strings.Join(dgxA100TopoM, "\n"); g != w {
		t.Errorf("matrix differs from nvidia-smi topo -m:\n%s", collectortest.LineDiff(w, g))
	}
}

// TestFilter checks that excluded devices are not exported and that a
// function whose devices are all excluded is not paired: mlx5_1 then
// takes GPU0, which mlx5_0 would have taken.
func TestFilter(t *testing.T) {
	r := collectortest.MustPoll(t, newCollector(t, extract(t, "dgx_a100"), "mlx5_[1-9]", "", topology.Rails{}), nil)
	s := collectortest.Series(t, r.Text)
	if len(s) != 9 {
		t.Errorf("%d series, want 9 (mlx5_1..mlx5_9):\n%s", len(s), r.Text)
	}
	for k := range s {
		if strings.Contains(k, `device="mlx5_1"`) && !strings.Contains(k, `gpu_index="0"`) {
			t.Errorf("mlx5_1 without mlx5_0 should pair with GPU0: %s", k)
		}
		if strings.Contains(k, `"ibp`) {
			t.Errorf("excluded netdev exported: %s", k)
		}
	}
}

// TestBadAttributes checks that a numa_node that does not parse and an
// information file that does not parse are counted as source errors and
// lose only their value: the NIC is still exported (numa_node -1), the
// GPU still paired by the tree (without a UUID).
func TestBadAttributes(t *testing.T) {
	root := extract(t, "dgx_a100")
	numa := filepath.Join(root, "sys/devices/pci0000:00/0000:00:01.1/0000:01:00.0/0000:02:01.0/0000:0a:00.0/0000:0b:00.0/0000:0c:00.0/numa_node")
	if err := os.WriteFile(numa, []byte("three\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	info := filepath.Join(root, "proc/driver/nvidia/gpus/0000:07:00.0/information")
	if err := os.WriteFile(info, []byte("Model: NVIDIA A100\nGPU UUID: not-a-uuid\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	errs := collector.NewSourceErrors(zap.NewNop(), time.Hour)
	r := collectortest.MustPoll(t, newCollector(t, root, "mlx5_0", "", topology.Rails{}), errs)
	if n := total(errs); n != 2 {
		t.Errorf("%d source errors, want 2: %v", n, errs.Counts())
	}
	s := collectortest.Series(t, r.Text)
	want := `nic_topology_info{device="mlx5_0",gpu_index="0",gpu_link="PXB",gpu_pci="0000:07:00.0",gpu_pci_bus_id="00000000:07:00.0",gpu_uuid="",numa_node="-1",pci_address="0000:0c:00.0",pcie_switch="0000:01:00.0",rail="",root_port="0000:00:01.1"}`
	// A NIC of unknown NUMA node is not in the GPU's: it still pairs
	// by the tree, which does not need the node.
	if _, ok := s[want]; !ok || len(s) != 1 {
		t.Errorf("series:\n%s\nwant %s", r.Text, want)
	}
}

// total returns how many source errors were reported.
func total(errs *collector.SourceErrors) uint64 {
	var n uint64
	for _, rc := range errs.Counts() {
		n += rc.Count
	}
	return n
}

// TestNoSysfs checks that a root without the directories gives no series
// and no error: a host without NICs or GPUs.
func TestNoSysfs(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "sys"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := collectortest.MustPoll(t, newCollector(t, root, "", "", topology.Rails{}), nil)
	if strings.Contains(r.Text, "nic_topology_info{") {
		t.Errorf("series from an empty root:\n%s", r.Text)
	}
}

// TestTopologyDocumented checks that docs/metrics.md has a topology
// section that documents the family, each label and the DCGM join.
func TestTopologyDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut("\n"+string(b), "\n## topology\n")
	if !ok {
		t.Fatal("docs/metrics.md has no \"## topology\" section")
	}
	if next := strings.Index(section, "\n## "); next >= 0 {
		section = section[:next]
	}
	for _, s := range []string{"`nic_topology_info`", "`gpu_index`", "`gpu_pci_bus_id`", "`gpu_uuid`", "`gpu_link`", "`rail`", "`pcie_switch`", "`root_port`", "`numa_node`", "DCGM_FI_DEV_GPU_UTIL", "nvidia-smi"} {
		if !strings.Contains(section, s) {
			t.Errorf("the topology section of docs/metrics.md does not mention %s", s)
		}
	}
}
