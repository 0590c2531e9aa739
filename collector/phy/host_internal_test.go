package phy

import (
	"reflect"
	"testing"

	"github.com/nic-exporter/nic_exporter/internal/ethtoolnl"
)

func TestConversions(t *testing.T) {
	st, sub, cnt := ethtoolnl.ExtState(3), uint8(4), uint32(7)
	down := false
	ls := linkStateFrom(ethtoolnl.LinkState{Link: &down, ExtState: &st, ExtSubstate: &sub, ExtDownCount: &cnt})
	if ls.DownReason != "bad_signal_integrity" || ls.DownSubstate != "serdes_alos" || *ls.DownEvents != 7 || *ls.Up {
		t.Errorf("linkStateFrom = %+v", ls)
	}
	if got := linkStateFrom(ethtoolnl.LinkState{}); got.DownReason != "" || got.DownEvents != nil || got.Up != nil {
		t.Errorf("empty linkStateFrom = %+v", got)
	}
	for _, tc := range []struct {
		s    ethtoolnl.ExtState
		sub  uint8
		want string
	}{
		{0, 1, "no_partner_detected"}, {2, 5, "rs_fec_is_not_locked"}, {10, 1, "cmis_not_ready"},
		{3, 0, ""}, {3, 9, "unknown"}, {4, 1, "unknown"},
	} {
		if got := SubstateName(tc.s, tc.sub); got != tc.want {
			t.Errorf("SubstateName(%d, %d) = %q, want %q", tc.s, tc.sub, got, tc.want)
		}
	}
	rs := ethtoolnl.FECRS
	f := fecFrom(ethtoolnl.FEC{Active: &rs, Corrected: &ethtoolnl.FECStat{Total: 3, Lanes: []uint64{1, 2}},
		Hist: []ethtoolnl.FECHistBin{{Low: 0, High: 0, Value: 10, Lanes: []uint64{5, 5}}, {Low: 1, High: 3, Value: 2}}})
	if f.Mode != "rs" || f.CorrectedBlocks.Total != 3 || !reflect.DeepEqual(f.CorrectedBlocks.Lanes, []uint64{1, 2}) || f.UncorrectableBlocks != nil ||
		!reflect.DeepEqual(f.Hist, []FECHistBin{{0, 0, 10}, {1, 3, 2}}) {
		t.Errorf("fecFrom = %+v", f)
	}
	got := statsFrom(ethtoolnl.Stats{
		Groups: map[ethtoolnl.StatsGroup]map[string]uint64{
			ethtoolnl.StatsEthMAC: {"FramesReceivedOK": 9, "FrameCheckSequenceErrors": 1},
			ethtoolnl.StatsEthPHY: {"SymbolErrorDuringCarrier": 2},
		},
		RxHist: []ethtoolnl.HistBucket{{Low: 64, High: 64, Value: 5}, {Low: 1519, High: 0, Value: 6}},
	})
	want := []StatCounter{
		{"eth-phy", "SymbolErrorDuringCarrier", 2},
		{"eth-mac", "FrameCheckSequenceErrors", 1},
		{"eth-mac", "FramesReceivedOK", 9},
		{"rmon", "rx-pkts64to64", 5},
		{"rmon", "rx-pkts1519to0", 6},
	}
	if !reflect.DeepEqual(got.Counters, want) {
		t.Errorf("statsFrom = %v, want %v", got.Counters, want)
	}
}
