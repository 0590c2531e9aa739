package diagnose

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// corpusDump returns a file of the ethtool fidelity corpus (real outputs,
// each citing its source in its header).
func corpusDump(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "realworld", "ethtool", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDumpInterfaces checks which interface each ethtool -i/-S file of a
// bundle is read as, and that each -S output stays its own interface.
func TestDumpInterfaces(t *testing.T) {
	cx4 := corpusDump(t, "mlx5_cx4_ubuntu18.04_4.15_ethq8.txt") // ethtool -i + -S, bus-info 0000:af:00.0
	cx6 := corpusDump(t, "mlx5_cx6dx_inbox_6.5_xdp.txt")        // ethtool -S only
	ena := corpusDump(t, "ena_1.2.0k_ethq15.txt")               // ethtool -i + -S, bus-info 0000:00:05.0
	info, stats, _ := strings.Cut(cx4, "NIC statistics:")
	stats = "NIC statistics:" + stats
	link := "Settings for eth0:\n\tSpeed: 100000Mb/s\n\tDuplex: Full\n\tLink detected: yes\n"
	tests := []struct {
		name  string
		files map[string]string
		// want maps each interface read to its statistics count, or -1
		// for one with ethtool -i only.
		want map[string]int
		// notes are substrings of the notes of the named files.
		notes map[string]string
	}{
		{"collect_debug.sh: ethtool_i.txt, ethtool_stats.txt and ethtool.txt are eth0",
			map[string]string{"ethtool_i.txt": info, "ethtool_stats.txt": stats, "ethtool.txt": link},
			map[string]int{"eth0": 23},
			map[string]string{"ethtool_stats.txt": "interface eth0: named by the ethtool output beside it"}},
		{"sosreport names", map[string]string{"sos_commands/networking/ethtool_-i_ens5": info, "sos_commands/networking/ethtool_-S_ens5": stats},
			map[string]int{"ens5": 23}, nil},
		{"collect names keep a VLAN's dot", map[string]string{"ethtool_-S_eth0.100.txt": cx6, "ethtool_-S_ens5.txt": ena},
			map[string]int{"eth0.100": 108, "ens5": 34}, nil},
		{"two unnamed dumps beside one ethtool output stay two interfaces",
			map[string]string{"node1.txt": ena, "node2.txt": cx6, "ethtool.txt": link},
			map[string]int{"0000:00:05.0": 34, "node2": 108},
			map[string]string{"node2.txt": "interface node2: no file names the interface: named after the file"}},
		{"a second dump of the same PCI function is not merged into the first",
			map[string]string{"node1.txt": ena, "node1-again.txt": ena},
			map[string]int{"0000:00:05.0": 34},
			map[string]string{"node1.txt": "not read: node1-again.txt already gave the ethtool output of 0000:00:05.0"}},
		{"two dumps without ethtool -i are named after their files, by path when alike",
			map[string]string{"a/stats.txt": cx6, "b/stats.log": stats, "c/other.out": stats},
			map[string]int{"a/stats": 108, "b/stats": 23, "other": 23}, nil},
		{"the command line in a transcript names the interface and is left out",
			map[string]string{"out.txt": "[root@host ~]# ethtool -S ens6 | grep -v xdp\n" + cx6},
			map[string]int{"ens6": 108},
			map[string]string{"out.txt": "not ethtool output, left out: line 1; interface ens6: named by the command line in the file"}},
		{"ethtool -i beside an unnamed -S names it by PCI address",
			map[string]string{"i.txt": info, "s.txt": stats},
			map[string]int{"0000:af:00.0": 23}, nil},
		{"a bad file costs only itself",
			map[string]string{"ethtool_-S_eth0": stats, "ethtool_-S_eth1": "NIC statistics:\n     rx_packets: many\n"},
			map[string]int{"eth0": 23},
			map[string]string{"ethtool_-S_eth1": "unparsable: line 2"}},
		{"a shell error in the file is left out, the rest read",
			map[string]string{"ethtool_-S_eth0.txt": "bash: line 1: ethtool: command not found\n" + stats},
			map[string]int{"eth0": 23},
			map[string]string{"ethtool_-S_eth0.txt": "not ethtool output, left out: line 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewAnalyzer(rules(t), alertRules(t), nil).Analyze(bundleOf(t, tt.files))
			got := map[string]int{}
			for _, it := range r.ethIfaces {
				n := len(it.dump.Names)
				if n == 0 && it.dump.Driver != "" {
					n = -1
				}
				got[it.name] = n
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("interfaces (-want +got):\n%s", d)
			}
			notes := map[string]string{}
			for _, f := range r.Files {
				notes[f.Name] = f.Note
			}
			names := make([]string, 0, len(tt.notes))
			for n := range tt.notes {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				if !strings.Contains(notes[n], tt.notes[n]) {
					t.Errorf("note of %s = %q, want it to contain %q", n, notes[n], tt.notes[n])
				}
			}
		})
	}
}

// FuzzCleanDump checks that cleaning any file keeps each kept line at its
// number, so the evidence's line numbers stay those of the file, and
// keeps no line it says it left out.
func FuzzCleanDump(f *testing.F) {
	f.Add([]byte("$ ethtool -S eth0\nNIC statistics:\n     rx_packets: 1\n"))
	f.Add([]byte("bash: ethtool: command not found\n"))
	f.Add([]byte("driver: mlx5_core\r\nbus-info: 0000:08:00.0\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d := cleanDump(data)
		before, after := lines(data), lines(d.data)
		if len(after) > len(before) {
			t.Fatalf("%d lines after cleaning, %d before", len(after), len(before))
		}
		left := map[int]bool{}
		for _, n := range d.skipped {
			left[n] = true
		}
		for i, l := range after {
			if l != "" && (l != strings.TrimSuffix(before[i], "\r") || left[i+1]) {
				t.Fatalf("line %d: %q after cleaning, %q before (left out: %v)", i+1, l, before[i], left[i+1])
			}
		}
	})
}
