package ethtoolnl

import (
	"encoding/binary"
	"fmt"

	"github.com/mdlayher/netlink"
)

// Attribute numbers of STATS_GET and STRSET_GET
// (include/uapi/linux/ethtool_netlink.h, stable ABI).
const (
	statsHeader = 2
	statsGroups = 3
	statsGrp    = 4

	statsGrpID     = 2
	statsGrpSSID   = 3
	statsGrpStat   = 4
	statsGrpHistRx = 5
	statsGrpHistTx = 6
	statsHistLow   = 7
	statsHistHigh  = 8
	statsHistVal   = 9

	bitsetNoMask = 1
	bitsetSize   = 2
	bitsetValue  = 4

	strsetHeader     = 1
	strsetStringSets = 2
	stringSetsSet    = 1
	stringSetID      = 1
	stringSetCount   = 2
	stringSetStrings = 3
	stringsString    = 1
	stringIndex      = 1
	stringValue      = 2
)

// StatsGroup is a standard statistics group (enum of ETHTOOL_STATS_* in
// include/uapi/linux/ethtool_netlink.h, named by the "stats-std" string
// set).
type StatsGroup uint32

// The groups Stats requests.
const (
	// StatsEthPHY is IEEE 802.3 clause 30.3.2 (SymbolErrorDuringCarrier).
	StatsEthPHY StatsGroup = 0
	// StatsEthMAC is IEEE 802.3 clause 30.3.1 (FramesReceivedOK,
	// FrameCheckSequenceErrors, ...).
	StatsEthMAC StatsGroup = 1
	// StatsEthCtrl is IEEE 802.3 clause 30.3.3 (MAC control frames).
	StatsEthCtrl StatsGroup = 2
	// StatsRMON is RFC 2819 (etherStats*, and the size histograms).
	StatsRMON StatsGroup = 3
)

// stdGroups is the compact ETHTOOL_A_STATS_GROUPS bitmap of the four.
const stdGroups = 1<<StatsEthPHY | 1<<StatsEthMAC | 1<<StatsEthCtrl | 1<<StatsRMON

// String returns the group's name in the kernel's "stats-std" string set.
func (g StatsGroup) String() string {
	switch g {
	case StatsEthPHY:
		return "eth-phy"
	case StatsEthMAC:
		return "eth-mac"
	case StatsEthCtrl:
		return "eth-ctrl"
	case StatsRMON:
		return "rmon"
	default:
		return fmt.Sprintf("group-%d", uint32(g))
	}
}

// Stats is the reply to ETHTOOL_MSG_STATS_GET for the standard groups.
type Stats struct {
	// Groups maps each group that has at least one counter to its
	// counters, keyed by the name the kernel's string set of the group
	// gives (eth-phy "SymbolErrorDuringCarrier", eth-mac
	// "FrameCheckSequenceErrors", rmon "etherStatsUndersizePkts"). Counters
	// the driver leaves unset are absent; a counter whose index the string
	// set lacks is named "stat-<index>". A driver without standard
	// statistics (veth) yields an empty map: the kernel answers every group
	// with no counters rather than with an error.
	Groups map[StatsGroup]map[string]uint64
	// RxHist and TxHist are the RMON packet size histograms of received
	// and transmitted frames, in the driver's bucket order.
	RxHist, TxHist []HistBucket
}

// HistBucket is one bucket of an RMON size histogram: Value frames of
// Low to High bytes, inclusive, as the driver's range table says.
type HistBucket struct {
	Low, High uint32
	Value     uint64
}

// rawGroup is one ETHTOOL_A_STATS_GRP before names are resolved.
type rawGroup struct {
	id, ssID uint32
	// stats maps the counter index (its attribute type inside
	// ETHTOOL_A_STATS_GRP_STAT) to its value.
	stats map[uint16]uint64
}

// rawStats is a decoded STATS_GET reply before names are resolved.
type rawStats struct {
	groups         []rawGroup
	rxHist, txHist []HistBucket
}

// statsRequest encodes the ETHTOOL_A_STATS_GROUPS compact bitset asking
// for the four standard groups.
func statsRequest(ae *netlink.AttributeEncoder) {
	ae.Nested(statsGroups, func(n *netlink.AttributeEncoder) error {
		n.Flag(bitsetNoMask, true)
		n.Uint32(bitsetSize, 4)
		n.Uint32(bitsetValue, stdGroups)
		return nil
	})
}

// parseStats decodes the attributes of a STATS_GET reply. Each counter
// sits alone in an ETHTOOL_A_STATS_GRP_STAT nest as a u64 whose attribute
// type is its index in the group's string set (net/ethtool/stats.c
// stat_put); alignment padding, where the kernel adds any, is a
// zero-length ETHTOOL_A_STATS_GRP_PAD outside that nest.
func parseStats(b []byte) (rawStats, error) {
	var rs rawStats
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return rs, fmt.Errorf("decoding stats attributes: %w", err)
	}
	for ad.Next() {
		if ad.Type() != statsGrp {
			continue
		}
		g := rawGroup{id: ^uint32(0), ssID: ^uint32(0), stats: map[uint16]uint64{}}
		ad.Nested(func(nad *netlink.AttributeDecoder) error {
			for nad.Next() {
				switch nad.Type() {
				case statsGrpID:
					g.id = nad.Uint32()
				case statsGrpSSID:
					g.ssID = nad.Uint32()
				case statsGrpStat:
					nad.Nested(func(sad *netlink.AttributeDecoder) error {
						for sad.Next() {
							v, err := u64(sad.Bytes())
							if err != nil {
								return fmt.Errorf("counter %d: %w", sad.Type(), err)
							}
							if v != statNotSet {
								g.stats[sad.Type()] = v
							}
						}
						return nil
					})
				case statsGrpHistRx, statsGrpHistTx:
					dst := &rs.rxHist
					if nad.Type() == statsGrpHistTx {
						dst = &rs.txHist
					}
					nad.Nested(func(had *netlink.AttributeDecoder) error {
						bk, err := parseHistBucket(had)
						if err != nil {
							return err
						}
						*dst = append(*dst, bk)
						return nil
					})
				}
			}
			return nil
		})
		if ad.Err() != nil {
			break
		}
		if g.id == ^uint32(0) || g.ssID == ^uint32(0) {
			return rawStats{}, fmt.Errorf("decoding stats attributes: a group without id or string set")
		}
		rs.groups = append(rs.groups, g)
	}
	if err := ad.Err(); err != nil {
		return rawStats{}, fmt.Errorf("decoding stats attributes: %w", err)
	}
	return rs, nil
}

// parseHistBucket decodes one ETHTOOL_A_STATS_GRP_HIST_RX/TX nest.
func parseHistBucket(ad *netlink.AttributeDecoder) (HistBucket, error) {
	var bk HistBucket
	var haveLow, haveHigh, haveVal bool
	for ad.Next() {
		switch ad.Type() {
		case statsHistLow:
			bk.Low, haveLow = ad.Uint32(), true
		case statsHistHigh:
			bk.High, haveHigh = ad.Uint32(), true
		case statsHistVal:
			v, err := u64(ad.Bytes())
			if err != nil {
				return bk, fmt.Errorf("histogram value: %w", err)
			}
			bk.Value, haveVal = v, true
		}
	}
	if !haveLow || !haveHigh || !haveVal {
		return bk, fmt.Errorf("histogram bucket without low, high or value")
	}
	return bk, nil
}

// u64 decodes a native-endian u64 attribute payload, length-checked.
func u64(b []byte) (uint64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("%d bytes, want 8", len(b))
	}
	return binary.NativeEndian.Uint64(b), nil
}

// uintAttr decodes an NLA_UINT payload (nla_put_uint): 4 or 8 bytes.
func uintAttr(b []byte) (uint64, error) {
	switch len(b) {
	case 4:
		return uint64(binary.NativeEndian.Uint32(b)), nil
	case 8:
		return binary.NativeEndian.Uint64(b), nil
	default:
		return 0, fmt.Errorf("%d bytes, want 4 or 8", len(b))
	}
}

// resolve names the counters of rs with the string sets in sets (string
// set id to names by index).
func (rs rawStats) resolve(sets map[uint32][]string) Stats {
	st := Stats{Groups: map[StatsGroup]map[string]uint64{}, RxHist: rs.rxHist, TxHist: rs.txHist}
	for _, g := range rs.groups {
		if len(g.stats) == 0 {
			continue
		}
		names := sets[g.ssID]
		m := make(map[string]uint64, len(g.stats))
		for idx, v := range g.stats {
			if int(idx) < len(names) && names[idx] != "" {
				m[names[idx]] = v
			} else {
				m[fmt.Sprintf("stat-%d", idx)] = v
			}
		}
		st.Groups[StatsGroup(g.id)] = m
	}
	return st
}

// stringSetsRequest encodes an ETHTOOL_A_STRSET_STRINGSETS nest asking
// for the string sets ids.
func stringSetsRequest(ids []uint32) func(*netlink.AttributeEncoder) {
	return func(ae *netlink.AttributeEncoder) {
		ae.Nested(strsetStringSets, func(n *netlink.AttributeEncoder) error {
			for _, id := range ids {
				n.Nested(stringSetsSet, func(s *netlink.AttributeEncoder) error {
					s.Uint32(stringSetID, id)
					return nil
				})
			}
			return nil
		})
	}
}

// maxStrings bounds a string set so a corrupt count cannot make the
// parser allocate without limit (the largest set, link modes, has about
// 120 names).
const maxStrings = 4096

// parseStringSets decodes a STRSET_GET reply into string set id to
// names by index.
func parseStringSets(b []byte) (map[uint32][]string, error) {
	sets := map[uint32][]string{}
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return nil, fmt.Errorf("decoding string set attributes: %w", err)
	}
	for ad.Next() {
		if ad.Type() != strsetStringSets {
			continue
		}
		ad.Nested(func(sad *netlink.AttributeDecoder) error {
			for sad.Next() {
				if sad.Type() != stringSetsSet {
					continue
				}
				var id uint32
				haveID := false
				var names []string
				sad.Nested(func(one *netlink.AttributeDecoder) error {
					for one.Next() {
						switch one.Type() {
						case stringSetID:
							id, haveID = one.Uint32(), true
						case stringSetStrings:
							one.Nested(func(strs *netlink.AttributeDecoder) error {
								for strs.Next() {
									if strs.Type() != stringsString {
										continue
									}
									var idx uint32
									var val string
									haveIdx := false
									strs.Nested(func(s *netlink.AttributeDecoder) error {
										for s.Next() {
											switch s.Type() {
											case stringIndex:
												idx, haveIdx = s.Uint32(), true
											case stringValue:
												val = s.String()
											}
										}
										return nil
									})
									if !haveIdx || idx >= maxStrings {
										return fmt.Errorf("string without index or with index beyond %d", maxStrings)
									}
									for uint32(len(names)) <= idx {
										names = append(names, "")
									}
									names[idx] = val
								}
								return nil
							})
						}
					}
					return nil
				})
				if haveID {
					sets[id] = names
				}
			}
			return nil
		})
	}
	if err := ad.Err(); err != nil {
		return nil, fmt.Errorf("decoding string set attributes: %w", err)
	}
	return sets, nil
}
