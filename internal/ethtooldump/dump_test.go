package ethtooldump

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	in := `# source: a comment
driver: mlx5_core
version: 6.8.0
firmware-version: 28.39.1002 (MT_0000000838)
expansion-rom-version: 
bus-info: 0000:08:00.1
supports-statistics: yes
NIC statistics:
     rx_packets: 12
     [0]: rx_bytes: 34
     rxq0: rx_bytes: 56
     tx_bytes_phy: 18446744073709551615
`
	d, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if d.Driver != "mlx5_core" || d.Version != "6.8.0" || d.FirmwareVersion != "28.39.1002 (MT_0000000838)" || d.BusInfo != "0000:08:00.1" {
		t.Errorf("driver information %+v", d)
	}
	wantNames := []string{"rx_packets", "[0]: rx_bytes", "rxq0: rx_bytes", "tx_bytes_phy"}
	wantVals := []uint64{12, 34, 56, 18446744073709551615}
	if strings.Join(d.Names, "|") != strings.Join(wantNames, "|") {
		t.Errorf("names %q, want %q", d.Names, wantNames)
	}
	for i, v := range wantVals {
		if i >= len(d.Values) || d.Values[i] != v {
			t.Errorf("values %v, want %v", d.Values, wantVals)
			break
		}
	}
	for _, bad := range []string{"", "NIC statistics:\n x: -1\n", "NIC statistics:\n novalue\n", "garbage\n"} {
		if _, err := Parse(strings.NewReader(bad)); err == nil {
			t.Errorf("Parse(%q) succeeded", bad)
		}
	}
}

// FuzzParse checks that arbitrary text never panics the dump parser and
// that what it returns is consistent.
func FuzzParse(f *testing.F) {
	f.Add("driver: ena\nNIC statistics:\n     queue_0_tx_cnt: 5\n")
	f.Add("NIC statistics:\n [1]: a: 2\n")
	f.Add("bus-info: 0000:00:05.0\n")
	f.Fuzz(func(t *testing.T, in string) {
		d, err := Parse(strings.NewReader(in))
		if err != nil {
			return
		}
		if len(d.Names) != len(d.Values) {
			t.Fatalf("%d names, %d values", len(d.Names), len(d.Values))
		}
	})
}
