package infiniband_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/infiniband"
	"github.com/nic-exporter/nic_exporter/demo"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// realworldDir holds the public InfiniBand sysfs trees of the real-world
// corpus (testdata/realworld/README.md names the source of each).
var realworldDir = filepath.Join("..", "..", "testdata", "realworld", "infiniband")

// ibNumberInName matches a port, lane or virtual lane number in a metric
// name; they belong in labels. VL15 is not one: it is the name IBA gives
// the subnet management lane (VL15_dropped).
var ibNumberInName = regexp.MustCompile(`(^|_)(port|lane|vl|prio|tc)_?[0-9]+(_|$)`)

// ibCounterFile is the metric of each counters/ file, as a test oracle
// written out independently of the collector's table.
var ibCounterFile = map[string]struct {
	metric string
	scale  float64
	bits   uint // 0: 64-bit, no saturation series
}{
	"symbol_error":                    {"nic_infiniband_port_symbol_error_total", 1, 16},
	"link_error_recovery":             {"nic_infiniband_port_link_error_recovery_total", 1, 8},
	"link_downed":                     {"nic_infiniband_port_link_downed_total", 1, 8},
	"port_rcv_errors":                 {"nic_infiniband_port_rcv_errors_total", 1, 16},
	"port_rcv_remote_physical_errors": {"nic_infiniband_port_rcv_remote_physical_errors_total", 1, 16},
	"port_rcv_switch_relay_errors":    {"nic_infiniband_port_rcv_switch_relay_errors_total", 1, 16},
	"port_xmit_discards":              {"nic_infiniband_port_xmit_discards_total", 1, 16},
	"port_xmit_constraint_errors":     {"nic_infiniband_port_xmit_constraint_errors_total", 1, 8},
	"port_rcv_constraint_errors":      {"nic_infiniband_port_rcv_constraint_errors_total", 1, 8},
	"local_link_integrity_errors":     {"nic_infiniband_port_local_link_integrity_errors_total", 1, 4},
	"excessive_buffer_overrun_errors": {"nic_infiniband_port_excessive_buffer_overrun_errors_total", 1, 4},
	"VL15_dropped":                    {"nic_infiniband_port_vl15_dropped_total", 1, 16},
	"port_xmit_data":                  {"nic_infiniband_port_xmit_data_bytes_total", 4, 32},
	"port_rcv_data":                   {"nic_infiniband_port_rcv_data_bytes_total", 4, 32},
	"port_xmit_packets":               {"nic_infiniband_port_xmit_packets_total", 1, 32},
	"port_rcv_packets":                {"nic_infiniband_port_rcv_packets_total", 1, 32},
	"port_xmit_wait":                  {"nic_infiniband_port_xmit_wait_total", 1, 32},
	"unicast_xmit_packets":            {"nic_infiniband_port_unicast_xmit_packets_total", 1, 0},
	"unicast_rcv_packets":             {"nic_infiniband_port_unicast_rcv_packets_total", 1, 0},
	"multicast_xmit_packets":          {"nic_infiniband_port_multicast_xmit_packets_total", 1, 0},
	"multicast_rcv_packets":           {"nic_infiniband_port_multicast_rcv_packets_total", 1, 0},
}

// treeFile is one counter file of a corpus tree.
var treeFile = regexp.MustCompile(`^sys/class/infiniband/([^/]+)/ports/([0-9]+)/(counters|counters_ext)/([A-Za-z0-9_]+)$`)

// corpusTree extracts one tree of the corpus and returns the sysfs root
// and the counter files with their contents, by path relative to /.
func corpusTree(t *testing.T, file string) (string, map[string]string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := demo.WriteTree(root, string(data)); err != nil {
		t.Fatal(err)
	}
	// A tree that only has the device's /sys/devices path (the i40iw
	// report printed that path) gets the class link the kernel makes.
	classDir := filepath.Join(root, "sys", "class", "infiniband")
	devDirs, _ := filepath.Glob(filepath.Join(root, "sys", "devices", "*", "*", "*", "*", "*", "infiniband", "*"))
	for _, d := range devDirs {
		link := filepath.Join(classDir, filepath.Base(d))
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.MkdirAll(classDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(d, link); err != nil {
			t.Fatal(err)
		}
	}
	devs, err := os.ReadDir(classDir)
	if err != nil {
		t.Fatal(err)
	}
	files := make(map[string]string)
	for _, dev := range devs {
		dir, err := filepath.EvalSymlinks(filepath.Join(classDir, dev.Name()))
		if err != nil {
			t.Fatal(err)
		}
		err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			sub, _ := filepath.Rel(dir, p)
			rel := "sys/class/infiniband/" + dev.Name() + "/" + filepath.ToSlash(sub)
			if treeFile.MatchString(rel) {
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				files[rel] = strings.TrimSpace(string(b))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(root, "sys"), files
}

// TestRealWorldInfiniBand runs the real collector over every public tree
// of the corpus: every counter file that holds a number is exported with
// its value under its fixed name (mlx4's counters_ext/*_64 in place of the
// 32-bit file), a counter stuck at the maximum of its width is reported
// saturated and no other is, the types are right, no number is in a name,
// and promtool accepts the scrape.
func TestRealWorldInfiniBand(t *testing.T) {
	trees, err := filepath.Glob(filepath.Join(realworldDir, "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	if len(trees) < 4 {
		t.Fatalf("%d trees in %s, want the whole corpus", len(trees), realworldDir)
	}
	for _, tree := range trees {
		t.Run(filepath.Base(tree), func(t *testing.T) {
			sysfsRoot, files := corpusTree(t, tree)
			errs := collector.NewSourceErrors(zap.NewNop(), time.Hour)
			snap, err := ibPoll(t, infiniband.New(infiniband.Config{SysfsPath: sysfsRoot}, zap.NewNop()), errs)
			if err != nil {
				t.Fatal(err)
			}
			text := snap.String()
			parser := expfmt.NewTextParser(model.LegacyValidation)
			fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
			if err != nil {
				t.Fatalf("scrape does not parse: %v", err)
			}
			got := make(map[string]float64)
			for name, f := range fams {
				if ibNumberInName.MatchString(strings.ReplaceAll(strings.TrimPrefix(name, "nic_infiniband_"), "vl15_dropped", "vl_dropped")) {
					t.Errorf("metric name %s contains a number that belongs in a label", name)
				}
				wantCounter := strings.HasSuffix(name, "_total")
				if isCounter := f.GetType() == dto.MetricType_COUNTER; isCounter != wantCounter {
					t.Errorf("%s is a %v", name, f.GetType())
				}
				for _, m := range f.GetMetric() {
					key := name
					for _, l := range m.GetLabel() {
						key += "," + l.GetName() + "=" + l.GetValue()
					}
					got[key] = m.GetCounter().GetValue() + m.GetGauge().GetValue()
				}
			}
			exported, saturated := 0, 0
			for rel, content := range files {
				m := treeFile.FindStringSubmatch(rel)
				dev, port, dir, file := m[1], m[2], m[3], m[4]
				v, perr := strconv.ParseUint(content, 10, 64)
				if dir == "counters_ext" {
					base, is64 := strings.CutSuffix(strings.TrimPrefix(file, "port_"), "_64")
					if !is64 || perr != nil {
						continue
					}
					file = "port_" + base
				} else if _, ext := files[fmt.Sprintf("sys/class/infiniband/%s/ports/%s/counters_ext/%s_64", dev, port, file)]; ext {
					continue // the 64-bit file is read instead
				}
				want, known := ibCounterFile[file]
				if !known {
					continue
				}
				key := want.metric + ",device=" + dev + ",port=" + port
				satKey := "nic_infiniband_port_counters_saturated,device=" + dev + ",port=" + port + ",counter=" + file
				if perr != nil {
					if _, ok := got[key]; ok {
						t.Errorf("%s (%q) exported", key, content)
					}
					continue
				}
				exported++
				if g, ok := got[key]; !ok || g != float64(v)*want.scale {
					t.Errorf("%s = %v (present %v), want %v from %s", key, g, ok, float64(v)*want.scale, rel)
				}
				bits := want.bits
				if dir == "counters_ext" {
					bits = 0
				}
				s, hasSat := got[satKey]
				switch {
				case bits == 0 && hasSat:
					t.Errorf("%s exported for a 64-bit counter", satKey)
				case bits != 0 && !hasSat:
					t.Errorf("%s missing", satKey)
				case bits != 0 && (s == 1) != (v == 1<<bits-1):
					t.Errorf("%s = %v for value %d of a %d-bit counter", satKey, s, v, bits)
				}
				if s == 1 {
					saturated++
				}
			}
			t.Logf("%d counter files exported, %d saturated, source errors %v", exported, saturated, reasons(errs))
			checkTreeFacts(t, filepath.Base(tree), got)

			promtool := testenv.LookPath(t, "promtool")
			cmd := exec.Command(promtool, "check", "metrics")
			cmd.Stdin = strings.NewReader(text)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				t.Errorf("promtool check metrics: %v\n%s", err, out.String())
			}
		})
	}
}

// checkTreeFacts checks what the sources of the trees document, written
// out by hand: the saturated ConnectX-7 of leptonai/gpud#943, the mlx4
// counters_ext and saturated port_xmit_wait of node_exporter's fixture,
// and the iWARP device without a PMA.
func checkTreeFacts(t *testing.T, tree string, got map[string]float64) {
	t.Helper()
	want := map[string]map[string]float64{
		"gpud943_cx7_mlx5_1_saturated.txtar": {
			"nic_infiniband_port_counters_saturated,device=mlx5_1,port=1,counter=link_downed":        1,
			"nic_infiniband_port_counters_saturated,device=mlx5_1,port=1,counter=port_xmit_discards": 1,
			"nic_infiniband_port_counters_saturated,device=mlx5_1,port=1,counter=port_xmit_wait":     1,
			// Not named by the source, but 15 is the 4-bit maximum.
			"nic_infiniband_port_counters_saturated,device=mlx5_1,port=1,counter=excessive_buffer_overrun_errors": 1,
			"nic_infiniband_port_counters_saturated,device=mlx5_1,port=1,counter=symbol_error":                    0,
			"nic_infiniband_port_counters_saturated,device=mlx5_1,port=1,counter=port_xmit_data":                  0,
			"nic_infiniband_port_link_downed_total,device=mlx5_1,port=1":                                          255,
			"nic_infiniband_port_xmit_discards_total,device=mlx5_1,port=1":                                        65535,
			"nic_infiniband_port_xmit_wait_total,device=mlx5_1,port=1":                                            4294967295,
			"nic_infiniband_port_counters_saturated,device=mlx5_1,port=1,counter=port_rcv_data":                   0,
			"nic_infiniband_port_counters_saturated,device=mlx5_1,port=1,counter=port_rcv_errors":                 0,
			"nic_infiniband_port_counters_saturated,device=mlx5_1,port=1,counter=link_error_recovery":             0,
		},
		"node_exporter_fixture_mlx4_counters_ext.txtar": {
			"nic_infiniband_port_counters_saturated,device=mlx4_0,port=1,counter=port_xmit_wait": 1,
			// counters_ext/port_xmit_data_64 (3733440 words), not counters/.
			"nic_infiniband_port_xmit_data_bytes_total,device=mlx4_0,port=1": 3733440 * 4,
			// The fixture's counters_ext/port_rcv_packets_64 reads 0 while
			// the 32-bit counters/port_rcv_packets reads 6825908347: the
			// 64-bit file wins.
			"nic_infiniband_port_rcv_packets_total,device=mlx4_0,port=1": 0,
		},
	}[tree]
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	if strings.HasPrefix(tree, "i40iw") {
		for k := range got {
			if strings.HasPrefix(k, "nic_infiniband_port_") && strings.Contains(k, "_total,") {
				t.Errorf("%s exported for a device without a PMA", k)
			}
		}
	}
}

// TestInfiniBandRestrictedPF polls a restricted ConnectX-7 PF (our fixture
// tree, restricted_pf.txtar) three times: each failing counter file is
// read once, counted once by reason, the device is logged once, and its
// identity and port state are still exported.
func TestInfiniBandRestrictedPF(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "restricted_pf.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := demo.WriteTree(root, string(data)); err != nil {
		t.Fatal(err)
	}
	sysfsRoot := filepath.Join(root, "sys")
	rfs := newRecordFS(sysfsRoot)
	core, logs := observer.New(zapcore.WarnLevel)
	c := infiniband.New(infiniband.Config{SysfsPath: sysfsRoot, FS: rfs}, zap.New(core))
	errs := collector.NewSourceErrors(zap.NewNop(), time.Hour)
	var text string
	for i := 0; i < 3; i++ {
		snap, err := ibPoll(t, c, errs)
		if err != nil {
			t.Fatal(err)
		}
		text = snap.String()
	}
	counters, _ := filepath.Glob(filepath.Join(sysfsRoot, "class", "infiniband", "mlx5_4", "ports", "1", "*counters", "*"))
	if len(counters) != 25 {
		t.Fatalf("%d counter files in the fixture, want 25", len(counters))
	}
	for _, f := range counters {
		rel, _ := filepath.Rel(sysfsRoot, f)
		if n := rfs.count(filepath.ToSlash(rel)); n != 1 {
			t.Errorf("%s opened %d times in 3 polls, want 1", rel, n)
		}
	}
	if got, want := reasons(errs), map[string]uint64{"eio": 23, "einval": 2}; !equalCounts(got, want) {
		t.Errorf("source errors by reason = %v, want %v", got, want)
	}
	if n := logs.FilterMessageSnippet("restricted PF").Len(); n != 1 {
		t.Errorf("%d warnings about the failing counter files, want 1: %v", n, logs.All())
	}
	for _, s := range []string{
		`nic_infiniband_port_state{device="mlx5_4",port="1"} 4`,
		`nic_infiniband_info{device="mlx5_4",hca_type="MT4129"`,
	} {
		if !strings.Contains(text, s) {
			t.Errorf("scrape lacks %s", s)
		}
	}
	if strings.Contains(text, "_total{") || strings.Contains(text, "nic_infiniband_port_counters_saturated{") {
		t.Errorf("counter series exported for unreadable files:\n%s", text)
	}
}

// TestRealWorldEFA polls the AWS EFA device of the corpus (the hw_counters
// printed in linux-rdma/perftest#113) and compares the scrape with a golden
// file; then checks by hand what the source shows: the one SEND of 2
// bytes in tx_bytes and tx_pkts, the admin queue without failed or lost
// commands, and the files without a curated meaning (send_wrs,
// submitted_cmds, keep_alive_rcvd, the allocation errors) and lifespan,
// a setting, not exported.
func TestRealWorldEFA(t *testing.T) {
	sysfsRoot, _ := corpusTree(t, filepath.Join(realworldDir, "perftest113_efa_0_hw_counters.txtar"))
	errs := collector.NewSourceErrors(zap.NewNop(), time.Hour)
	snap, err := ibPoll(t, infiniband.New(infiniband.Config{SysfsPath: sysfsRoot}, zap.NewNop()), errs)
	if err != nil {
		t.Fatal(err)
	}
	text := snap.String()
	checkGolden(t, "realworld_efa.golden", text)
	for _, s := range []string{
		`nic_infiniband_hw_tx_bytes_total{device="efa_0",port="1"} 2`,
		`nic_infiniband_hw_tx_pkts_total{device="efa_0",port="1"} 1`,
		`nic_infiniband_hw_rx_drops_total{device="efa_0",port="1"} 0`,
		`nic_infiniband_hw_rdma_read_wr_err_total{device="efa_0",port="1"} 0`,
		`nic_infiniband_hw_no_completion_cmds_total{device="efa_0",port="1"} 0`,
		`nic_infiniband_hw_cmds_err_total{device="efa_0",port="1"} 0`,
	} {
		if !strings.Contains(text, s+"\n") {
			t.Errorf("scrape lacks %s", s)
		}
	}
	for _, file := range []string{"send_wrs", "send_bytes", "submitted_cmds", "completed_cmds", "keep_alive_rcvd", "alloc_pd_err", "lifespan"} {
		if strings.Contains(text, "nic_infiniband_hw_"+file+"_total") {
			t.Errorf("hw_counters/%s is exported; it has no curated meaning", file)
		}
	}
	// The source printed only hw_counters/: the port's state and
	// phys_state files are missing, which is reported, and nothing else.
	if got, want := reasons(errs), map[string]uint64{"enoent": 2}; !equalCounts(got, want) {
		t.Errorf("source errors by reason = %v, want %v", got, want)
	}
}
