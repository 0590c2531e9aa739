package ethtoolnl

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mdlayher/netlink"
)

// stdSets decodes the string sets recorded from a real kernel (6.18).
func stdSets(t testing.TB) map[uint32][]string {
	t.Helper()
	sets, err := parseStringSets(readReply(t, "strset-stats-std.bin"))
	if err != nil {
		t.Fatal(err)
	}
	return sets
}

// TestParseStringSetsReal checks the names of the four standard groups
// in a real STRSET_GET reply against net/ethtool/common.c.
func TestParseStringSetsReal(t *testing.T) {
	sets := stdSets(t)
	want := map[uint32]int{17: 1, 18: 22, 19: 3, 20: 4}
	for id, n := range want {
		if len(sets[id]) != n {
			t.Errorf("string set %d: %d names %q, want %d", id, len(sets[id]), sets[id], n)
		}
	}
	for _, c := range []struct {
		set  uint32
		idx  int
		name string
	}{
		{17, 0, "SymbolErrorDuringCarrier"},
		{18, 4, "FrameCheckSequenceErrors"}, // ETHTOOL_A_STATS_ETH_MAC_6_FCS_ERR
		{18, 21, "FrameTooLongErrors"},
		{19, 2, "UnsupportedOpcodesReceived"},
		{20, 0, "etherStatsUndersizePkts"},
		{20, 3, "etherStatsJabbers"},
	} {
		if got := sets[c.set]; c.idx >= len(got) || got[c.idx] != c.name {
			t.Errorf("string set %d index %d: want %q in %q", c.set, c.idx, c.name, got)
		}
	}
}

// statsReply builds a STATS_GET reply the way net/ethtool/stats.c does:
// one group nest per requested group with its id and string set, each
// counter alone in a GRP_STAT nest, histogram buckets as HIST_RX/TX nests.
func statsReply(t testing.TB, f func(ae *netlink.AttributeEncoder)) []byte {
	t.Helper()
	ae := netlink.NewAttributeEncoder()
	ae.Nested(statsHeader, func(n *netlink.AttributeEncoder) error {
		n.String(headerDevName, "eth0")
		return nil
	})
	f(ae)
	b, err := ae.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func group(ae *netlink.AttributeEncoder, id, ss uint32, body func(n *netlink.AttributeEncoder)) {
	ae.Nested(statsGrp, func(n *netlink.AttributeEncoder) error {
		n.Uint32(statsGrpID, id)
		n.Uint32(statsGrpSSID, ss)
		if body != nil {
			body(n)
		}
		return nil
	})
}

func stat(n *netlink.AttributeEncoder, idx uint16, v uint64) {
	n.Nested(statsGrpStat, func(s *netlink.AttributeEncoder) error {
		s.Uint64(idx, v)
		return nil
	})
}

func bucket(n *netlink.AttributeEncoder, typ uint16, low, high uint32, v uint64) {
	n.Nested(typ, func(h *netlink.AttributeEncoder) error {
		h.Uint32(statsHistLow, low)
		h.Uint32(statsHistHigh, high)
		h.Uint64(statsHistVal, v)
		return nil
	})
}

// mlx5Like is a reply with every group filled, as a ConnectX port answers.
func mlx5Like(t testing.TB) []byte {
	return statsReply(t, func(ae *netlink.AttributeEncoder) {
		group(ae, 0, 17, func(n *netlink.AttributeEncoder) { stat(n, 0, 12) })
		group(ae, 1, 18, func(n *netlink.AttributeEncoder) {
			for i := uint16(0); i < 22; i++ {
				stat(n, i, 1000+uint64(i))
			}
		})
		group(ae, 2, 19, func(n *netlink.AttributeEncoder) {
			stat(n, 0, 5)
			stat(n, 1, 6)
			stat(n, 2, 0)
		})
		group(ae, 3, 20, func(n *netlink.AttributeEncoder) {
			ranges := [][2]uint32{{0, 64}, {65, 127}, {128, 255}, {256, 511}, {512, 1023}, {1024, 1518}, {1519, 2047}, {2048, 4095}, {4096, 8191}, {8192, 9216}}
			for i, r := range ranges {
				bucket(n, statsGrpHistRx, r[0], r[1], uint64(100*i))
			}
			for i, r := range ranges {
				bucket(n, statsGrpHistTx, r[0], r[1], uint64(200*i))
			}
			for i := uint16(0); i < 4; i++ {
				stat(n, i, uint64(i))
			}
		})
	})
}

func TestParseStats(t *testing.T) {
	sets := stdSets(t)
	tests := []struct {
		name    string
		in      []byte
		want    Stats
		wantErr bool
	}{
		{
			// Recorded from veth on a 6.18 kernel by TestVeth -update:
			// four groups, no counters, and ETHTOOL_A_STATS_SRC (6.10+).
			name: "real veth reply: no standard statistics",
			in:   readReply(t, "stats-veth.bin"),
			want: Stats{Groups: map[StatsGroup]map[string]uint64{}},
		},
		{
			name: "PHY and MAC counters, unset ones absent",
			in: statsReply(t, func(ae *netlink.AttributeEncoder) {
				group(ae, 0, 17, func(n *netlink.AttributeEncoder) { stat(n, 0, 7) })
				group(ae, 1, 18, func(n *netlink.AttributeEncoder) {
					stat(n, 3, 1000) // FramesReceivedOK
					stat(n, 4, 2)    // FrameCheckSequenceErrors
					stat(n, 5, statNotSet)
					n.Bytes(1, nil) // ETHTOOL_A_STATS_GRP_PAD, as on strict-alignment machines
				})
				group(ae, 2, 19, nil)
			}),
			want: Stats{Groups: map[StatsGroup]map[string]uint64{
				StatsEthPHY: {"SymbolErrorDuringCarrier": 7},
				StatsEthMAC: {"FramesReceivedOK": 1000, "FrameCheckSequenceErrors": 2},
			}},
		},
		{
			name: "RMON with histograms",
			in: statsReply(t, func(ae *netlink.AttributeEncoder) {
				group(ae, 3, 20, func(n *netlink.AttributeEncoder) {
					bucket(n, statsGrpHistRx, 0, 64, 10)
					bucket(n, statsGrpHistRx, 65, 127, 11)
					bucket(n, statsGrpHistTx, 0, 64, 20)
					stat(n, 0, 1)
					stat(n, 3, 4)
				})
			}),
			want: Stats{
				Groups: map[StatsGroup]map[string]uint64{StatsRMON: {"etherStatsUndersizePkts": 1, "etherStatsJabbers": 4}},
				RxHist: []HistBucket{{0, 64, 10}, {65, 127, 11}},
				TxHist: []HistBucket{{0, 64, 20}},
			},
		},
		{
			name: "counter from a newer kernel than the string set knows",
			in: statsReply(t, func(ae *netlink.AttributeEncoder) {
				group(ae, 2, 19, func(n *netlink.AttributeEncoder) { stat(n, 9, 3) })
			}),
			want: Stats{Groups: map[StatsGroup]map[string]uint64{StatsEthCtrl: {"stat-9": 3}}},
		},
		{
			name: "counter of 4 bytes",
			in: statsReply(t, func(ae *netlink.AttributeEncoder) {
				group(ae, 0, 17, func(n *netlink.AttributeEncoder) {
					n.Nested(statsGrpStat, func(s *netlink.AttributeEncoder) error {
						s.Uint32(0, 1)
						return nil
					})
				})
			}),
			wantErr: true,
		},
		{
			name: "bucket without value",
			in: statsReply(t, func(ae *netlink.AttributeEncoder) {
				group(ae, 3, 20, func(n *netlink.AttributeEncoder) {
					n.Nested(statsGrpHistRx, func(h *netlink.AttributeEncoder) error {
						h.Uint32(statsHistLow, 0)
						h.Uint32(statsHistHigh, 64)
						return nil
					})
				})
			}),
			wantErr: true,
		},
		{
			name: "group without string set",
			in: statsReply(t, func(ae *netlink.AttributeEncoder) {
				ae.Nested(statsGrp, func(n *netlink.AttributeEncoder) error {
					n.Uint32(statsGrpID, 0)
					return nil
				})
			}),
			wantErr: true,
		},
		{name: "truncated attribute", in: []byte{8, 0, 4, 0, 1}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := parseStats(tt.in)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("parseStats = %+v, want error", rs)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, rs.resolve(sets)); d != "" {
				t.Errorf("(-want +got)\n%s", d)
			}
		})
	}
	if StatsEthCtrl.String() != "eth-ctrl" || StatsGroup(9).String() != "group-9" {
		t.Error("StatsGroup names")
	}
}

func TestStatsRequest(t *testing.T) {
	ae := netlink.NewAttributeEncoder()
	statsRequest(ae)
	b, err := ae.Encode()
	if err != nil {
		t.Fatal(err)
	}
	// ETHTOOL_A_STATS_GROUPS { NOMASK, SIZE 4, VALUE 0x0f }: the compact
	// bitset of ETHTOOL_STATS_ETH_PHY..ETHTOOL_STATS_RMON.
	want := []byte{
		24, 0, 3, 0x80,
		4, 0, 1, 0,
		8, 0, 2, 0, 4, 0, 0, 0,
		8, 0, 4, 0, 0x0f, 0, 0, 0,
	}
	if d := cmp.Diff(want, b); d != "" {
		t.Errorf("(-want +got)\n%s", d)
	}
}

func TestParseModuleEEPROM(t *testing.T) {
	page := make([]byte, 128)
	page[0] = 0x18
	tests := []struct {
		name    string
		in      func(ae *netlink.AttributeEncoder)
		want    int
		wantErr bool
	}{
		{name: "full half page", in: func(ae *netlink.AttributeEncoder) { ae.Bytes(eepromData, page) }, want: 128},
		{name: "short data", in: func(ae *netlink.AttributeEncoder) { ae.Bytes(eepromData, page[:100]) }, want: 128, wantErr: true},
		{name: "no data attribute", in: func(ae *netlink.AttributeEncoder) { ae.Uint32(eepromOffset, 0) }, want: 1, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseModuleEEPROM(encode(t, tt.in), tt.want)
			if tt.wantErr {
				if err == nil {
					t.Fatal("want error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tt.want || got[0] != 0x18 {
				t.Errorf("got %d bytes starting %#x", len(got), got[0])
			}
		})
	}
	if _, err := parseModuleEEPROM([]byte{9, 0, 7}, 1); err == nil {
		t.Error("truncated reply accepted")
	}
}

func TestModuleEEPROMRequestValidate(t *testing.T) {
	tests := []struct {
		req ModuleEEPROMRequest
		ok  bool
	}{
		{ModuleEEPROMRequest{Addr: 0x50, Length: 128}, true},
		{ModuleEEPROMRequest{Addr: 0x50, Page: 0x11, Bank: 1, Offset: 128, Length: 128}, true},
		{ModuleEEPROMRequest{Addr: 0x51, Offset: 96, Length: 32}, true},
		{ModuleEEPROMRequest{Addr: 0x50, Offset: 200, Length: 56}, true},
		{ModuleEEPROMRequest{Addr: 0x50, Length: 0}, false},
		{ModuleEEPROMRequest{Addr: 0x50, Length: 129}, false},
		{ModuleEEPROMRequest{Addr: 0x50, Offset: 64, Length: 128}, false},
		{ModuleEEPROMRequest{Addr: 0x50, Offset: 200, Length: 57}, false},
		{ModuleEEPROMRequest{Addr: 0x50, Offset: 256, Length: 1}, false},
		{ModuleEEPROMRequest{Addr: 0x50, Offset: -1, Length: 1}, false},
		{ModuleEEPROMRequest{Addr: 0x50, Page: 3, Offset: 0, Length: 128}, false},
		{ModuleEEPROMRequest{Addr: 0xa0, Length: 128}, false},
	}
	for _, tt := range tests {
		if err := tt.req.validate(); (err == nil) != tt.ok {
			t.Errorf("%v: %v, want ok=%v", tt.req, err, tt.ok)
		}
	}
}

// BenchmarkParseStats parses and names a reply with every standard
// counter and both RMON histograms filled, as one poll of a ConnectX port.
func BenchmarkParseStats(b *testing.B) {
	reply := mlx5Like(b)
	sets := stdSets(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rs, err := parseStats(reply)
		if err != nil {
			b.Fatal(err)
		}
		if st := rs.resolve(sets); len(st.Groups) != 4 || len(st.RxHist) != 10 {
			b.Fatalf("%+v", st)
		}
	}
}
