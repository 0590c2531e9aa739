package demo

import "testing"

// TestClassify checks the traffic class of statistic names of both
// recorded drivers.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name string
		want trafficClass
	}{
		{"rx_bytes", trafficClass{bytes: true}},
		{"tx_packets", trafficClass{tx: true}},
		{"rx_bytes_phy", trafficClass{bytes: true, phy: true}},
		{"tx_packets_phy", trafficClass{tx: true, phy: true}},
		{"rx_prio0_bytes", trafficClass{bytes: true, phy: true}},
		{"rx_65_to_127_bytes_phy", trafficClass{phy: true}}, // a size bucket counts packets
		{"rx_64_bytes_phy", trafficClass{phy: true}},
		{"rx3_bytes", trafficClass{bytes: true}},
		{"tx15_packets", trafficClass{tx: true}},
		{"ch0_events", trafficClass{}},
		{"rx_xdp_tx_xmit", trafficClass{}}, // the first direction counts
		{"queue_7_tx_bytes", trafficClass{tx: true, bytes: true}},
		{"queue_0_rx_cnt", trafficClass{}},
		{"tx_vport_unicast_bytes", trafficClass{tx: true, bytes: true}},
	} {
		if got := classify(tc.name); got != tc.want {
			t.Errorf("classify(%q) = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
