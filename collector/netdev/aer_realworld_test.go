package netdev

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// aerRealworldDir holds the public aer_dev_* dumps of the real-world
// corpus (testdata/realworld/README.md names the source of each).
var aerRealworldDir = filepath.Join("..", "..", "testdata", "realworld", "aer")

// aerDump is one real-world dump: its "# stored:" header lines (the
// attribute values as the source stores them) and its "-- <address>/<file>
// --" blocks.
type aerDump struct {
	stored map[string]string // "<address>/<file>" -> value as stored
	blocks map[string]string // "<address>/<file>" -> attribute content
	order  []string
}

// readAERDump reads one file of testdata/realworld/aer.
func readAERDump(t *testing.T, path string) aerDump {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := aerDump{stored: map[string]string{}, blocks: map[string]string{}}
	var cur string
	for _, line := range strings.SplitAfter(string(raw), "\n") {
		switch {
		case strings.HasPrefix(line, "# stored: "):
			addr, rest, ok := strings.Cut(strings.TrimSpace(strings.TrimPrefix(line, "# stored: ")), " A: ")
			name, value, ok2 := strings.Cut(rest, "=")
			if !ok || !ok2 {
				t.Fatalf("%s: bad stored line %q", path, line)
			}
			d.stored[addr+"/"+name] = value
		case strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "-- ") && strings.HasSuffix(strings.TrimSpace(line), " --"):
			cur = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(line), "-- "), " --")
			d.order = append(d.order, cur)
		case cur == "":
			if strings.TrimSpace(line) != "" {
				t.Fatalf("%s: content before the first block: %q", path, line)
			}
		default:
			d.blocks[cur] += line
		}
	}
	return d
}

// TestAERRealWorld parses every public dump of testdata/realworld/aer and
// checks the result against what the source shows: the same type names in
// the same order, their counts and the TOTAL_ERR_* line. It also checks
// that each block is the value its source stores with only line breaks
// added (the mechanical edit the file headers name).
func TestAERRealWorld(t *testing.T) {
	cor := []string{"RxErr", "BadTLP", "BadDLLP", "Rollover", "Timeout", "NonFatalErr", "CorrIntErr", "HeaderOF"}
	uncor := []string{"Undefined", "DLP", "SDES", "TLP", "FCP", "CmpltTO", "CmpltAbrt", "UnxCmplt", "RxOF", "MalfTLP", "ECRC",
		"UnsupReq", "ACSViol", "UncorrIntErr", "BlockedTLP", "AtomicOpBlocked", "TLPBlockedErr", "PoisonTLPBlocked"}
	// want is what each source shows, per block: the names in order and
	// their counts (all 0 in these dumps), and the total.
	type block struct {
		names  []string
		counts map[string]uint64 // names not listed count 0
		total  uint64
	}
	healthy := func(addr string) map[string]block {
		return map[string]block{
			addr + "/aer_dev_correctable": {names: cor},
			addr + "/aer_dev_fatal":       {names: uncor},
			addr + "/aer_dev_nonfatal":    {names: uncor},
		}
	}
	merge := func(ms ...map[string]block) map[string]block {
		out := map[string]block{}
		for _, m := range ms {
			for k, v := range m {
				out[k] = v
			}
		}
		return out
	}
	tests := []struct {
		file string
		want map[string]block
	}{
		{file: "amd_starship_psp_gpp_bridge_fwupd_pci_psp.txt", want: merge(healthy("0000:23:00.1"), healthy("0000:20:08.1"))},
		{file: "wd_sn740_nvme_fwupd_nvme.txt", want: healthy("0000:02:00.0")},
	}
	files, err := filepath.Glob(filepath.Join(aerRealworldDir, "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(tests) {
		t.Errorf("%d dumps in %s, %d in the table: add the new ones", len(files), aerRealworldDir, len(tests))
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			d := readAERDump(t, filepath.Join(aerRealworldDir, tc.file))
			if len(d.order) != len(tc.want) {
				t.Errorf("%d blocks, want %d", len(d.order), len(tc.want))
			}
			for _, key := range d.order {
				want, ok := tc.want[key]
				if !ok {
					t.Errorf("unexpected block %s", key)
					continue
				}
				content := d.blocks[key]
				if stored, ok := d.stored[key]; !ok {
					t.Errorf("%s: no stored line in the header", key)
				} else if got := strings.ReplaceAll(content, "\n", ""); got != stored {
					t.Errorf("%s: block is not the stored value with line breaks added:\n got %q\nwant %q", key, got, stored)
				}
				file := filepath.Base(key)
				total, types, err := parseAER(strings.TrimSpace(content), aerFileTotal(file))
				if err != nil {
					t.Errorf("%s: %v", key, err)
					continue
				}
				if total != want.total {
					t.Errorf("%s: total %d, want %d", key, total, want.total)
				}
				var names []string
				for _, ty := range types {
					names = append(names, ty.Type)
					if ty.Count != want.counts[ty.Type] {
						t.Errorf("%s: %s = %d, want %d", key, ty.Type, ty.Count, want.counts[ty.Type])
					}
				}
				if fmt.Sprint(names) != fmt.Sprint(want.names) {
					t.Errorf("%s: types %v, want %v", key, names, want.names)
				}
			}
		})
	}
}
