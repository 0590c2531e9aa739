package diagnose

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseFEC reads the three layouts ethtool has printed FEC
// statistics in, each quoted from the patch that introduced or used it.
func TestParseFEC(t *testing.T) {
	tests := []struct {
		name, in string
		want     *FECState
	}{
		// netdev, Jakub Kicinski, the cover letter of the kernel series
		// that added FEC statistics to ethtool netlink (2021), its example
		// output: lanes on lines of their own.
		{"lanes on their own lines", ` # ethtool  -I --show-fec eth0
 FEC parameters for eth0:
 Configured FEC encodings: None
 Active FEC encoding: None
 Statistics:
  corrected_blocks: 256
    Lane 0: 255
    Lane 1: 1
  uncorrectable_blocks: 145
    Lane 0: 128
    Lane 1: 17
`, &FECState{Interface: "eth0", ModeLine: 4,
			Counters:     map[string]uint64{"corrected_blocks": 256, "uncorrectable_blocks": 145},
			CounterLines: map[string]Line{"corrected_blocks": 6, "uncorrectable_blocks": 9}}},
		// intel-wired-lan/netdev, Anil Samal, the ice patch that reports
		// FEC statistics, its sample output: an ice port in RS.
		{"ice, RS", ` # ethtool -I --show-fec ens21f0np0
FEC parameters for ens21f0np0:
Supported/Configured FEC encodings: Auto RS BaseR
Active FEC encoding: RS
Statistics:
  corrected_blocks: 0
  uncorrectable_blocks: 0
`, &FECState{Interface: "ens21f0np0", Mode: "rs", ModeLine: 4,
			Counters:     map[string]uint64{"corrected_blocks": 0, "uncorrectable_blocks": 0},
			CounterLines: map[string]Line{"corrected_blocks": 6, "uncorrectable_blocks": 7}}},
		// netdev, Vadim Fedorenko, 14 Oct 2025, the ethtool patch for the
		// FEC histogram of Linux 6.18, Message-ID
		// <20251014212018.7933-1-vadim.fedorenko@linux.dev>: histogram
		// bins with lanes after the total, which are left out.
		{"histogram", ` # ethtool -I --show-fec eni8np1
FEC parameters for eni8np1:
Supported/Configured FEC encodings: None
Active FEC encoding: None
Statistics:
  corrected_blocks: 123
  uncorrectable_blocks: 4
  fec_symbol_err_0: 445 [ per_lane:  125, 120, 100, 100 ]
  fec_symbol_err_1_to_3: 12
`, &FECState{Interface: "eni8np1", ModeLine: 4,
			Counters:     map[string]uint64{"corrected_blocks": 123, "uncorrectable_blocks": 4},
			CounterLines: map[string]Line{"corrected_blocks": 6, "uncorrectable_blocks": 7}}},
		{"per lane after the total", "FEC parameters for eth0:\nActive FEC encoding: BaseR\nStatistics:\n  corrected_bits: 9 [ per_lane: 4, 5 ]\n",
			&FECState{Interface: "eth0", Mode: "baser", ModeLine: 2,
				Counters: map[string]uint64{"corrected_bits": 9}, CounterLines: map[string]Line{"corrected_bits": 4}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseFEC(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
	for _, bad := range []string{"Active FEC encoding: RS\n", "FEC parameters for eth0:\nStatistics:\n  uncorrectable_blocks: many\n"} {
		if _, err := ParseFEC(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func FuzzParseFEC(f *testing.F) {
	f.Add("FEC parameters for eth0:\nActive FEC encoding: RS\nStatistics:\n  corrected_blocks: 256\n    Lane 0: 255\n  uncorrectable_blocks: 1 [ per_lane: 1, 0 ]\n")
	f.Fuzz(func(t *testing.T, s string) { _, _ = ParseFEC(s) })
}
