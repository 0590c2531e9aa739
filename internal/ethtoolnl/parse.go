package ethtoolnl

import (
	"encoding/binary"
	"fmt"

	"github.com/mdlayher/netlink"
)

// Attribute numbers from include/uapi/linux/ethtool_netlink.h (stable ABI).
const (
	headerDevName = 2
	headerFlags   = 3
	flagStats     = 1 << 2

	linkstateHeader     = 1
	linkstateLink       = 2
	linkstateSQI        = 3
	linkstateSQIMax     = 4
	linkstateExtState   = 5
	linkstateExtSubstat = 6
	linkstateExtDownCnt = 7

	fecHeader = 1
	fecAuto   = 3
	fecActive = 4
	fecStats  = 5

	fecStatCorrected = 2
	fecStatUncorr    = 3
	fecStatCorrBits  = 4
	fecStatHist      = 5 // newer kernels: one nest per histogram bin

	fecHistBinLow     = 2
	fecHistBinHigh    = 3
	fecHistBinVal     = 4 // NLA_UINT: 4 or 8 bytes
	fecHistBinPerLane = 5 // array of u64

	// statNotSet is ETHTOOL_STAT_NOT_SET: a counter the driver left unset.
	statNotSet = ^uint64(0)
)

// parseLinkState decodes the attributes of a LINKSTATE_GET reply.
func parseLinkState(b []byte) (LinkState, error) {
	var ls LinkState
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return ls, fmt.Errorf("decoding linkstate attributes: %w", err)
	}
	for ad.Next() {
		switch ad.Type() {
		case linkstateLink:
			v := ad.Uint8() != 0
			ls.Link = &v
		case linkstateSQI:
			v := ad.Uint32()
			ls.SQI = &v
		case linkstateSQIMax:
			v := ad.Uint32()
			ls.SQIMax = &v
		case linkstateExtState:
			v := ExtState(ad.Uint8())
			ls.ExtState = &v
		case linkstateExtSubstat:
			v := ad.Uint8()
			ls.ExtSubstate = &v
		case linkstateExtDownCnt:
			v := ad.Uint32()
			ls.ExtDownCount = &v
		}
	}
	if err := ad.Err(); err != nil {
		return LinkState{}, fmt.Errorf("decoding linkstate attributes: %w", err)
	}
	return ls, nil
}

// parseFEC decodes the attributes of a FEC_GET reply.
func parseFEC(b []byte) (FEC, error) {
	var f FEC
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return f, fmt.Errorf("decoding fec attributes: %w", err)
	}
	for ad.Next() {
		switch ad.Type() {
		case fecAuto:
			v := ad.Uint8() != 0
			f.Auto = &v
		case fecActive:
			v := FECMode(ad.Uint32())
			f.Active = &v
		case fecStats:
			ad.Nested(func(nad *netlink.AttributeDecoder) error {
				for nad.Next() {
					var dst **FECStat
					switch nad.Type() {
					case fecStatHist:
						bin, err := parseFECHistBin(nad.Bytes())
						if err != nil {
							return err
						}
						f.Hist = append(f.Hist, bin)
						continue
					case fecStatCorrected:
						dst = &f.Corrected
					case fecStatUncorr:
						dst = &f.Uncorrectable
					case fecStatCorrBits:
						dst = &f.CorrectedBits
					default:
						continue
					}
					st, err := parseFECStat(nad.Bytes())
					if err != nil {
						return err
					}
					*dst = st
				}
				return nil
			})
		}
	}
	if err := ad.Err(); err != nil {
		return FEC{}, fmt.Errorf("decoding fec attributes: %w", err)
	}
	return f, nil
}

// parseFECStat decodes one ETHTOOL_A_FEC_STAT_* array of native-endian
// u64: the total, then one value per lane. An empty array (what the
// kernel sends for a driver with FEC parameters but no FEC statistics:
// net/ethtool/fec.c fec_put_stats with a count of 0) or an unset total
// means the driver does not count it (nil); unset lanes end the lane list.
func parseFECStat(b []byte) (*FECStat, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if len(b)%8 != 0 {
		return nil, fmt.Errorf("fec statistic of %d bytes, want a multiple of 8", len(b))
	}
	vals := make([]uint64, len(b)/8)
	for i := range vals {
		vals[i] = binary.NativeEndian.Uint64(b[8*i:])
	}
	if vals[0] == statNotSet {
		return nil, nil
	}
	st := &FECStat{Total: vals[0]}
	for _, v := range vals[1:] {
		if v == statNotSet {
			break
		}
		st.Lanes = append(st.Lanes, v)
	}
	return st, nil
}

// parseFECHistBin decodes one ETHTOOL_A_FEC_STAT_HIST nest: the bin's
// range of bit errors per FEC codeword, the count of codewords in it and,
// when the driver reports them, the count per lane (unset lanes end the
// list, as for the other FEC counters).
func parseFECHistBin(b []byte) (FECHistBin, error) {
	var bin FECHistBin
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return bin, fmt.Errorf("fec histogram bin: %w", err)
	}
	var haveLow, haveHigh, haveVal bool
	for ad.Next() {
		switch ad.Type() {
		case fecHistBinLow:
			bin.Low, haveLow = ad.Uint32(), true
		case fecHistBinHigh:
			bin.High, haveHigh = ad.Uint32(), true
		case fecHistBinVal:
			v, err := uintAttr(ad.Bytes())
			if err != nil {
				return bin, fmt.Errorf("fec histogram bin value: %w", err)
			}
			bin.Value, haveVal = v, true
		case fecHistBinPerLane:
			lanes := ad.Bytes()
			if len(lanes)%8 != 0 {
				return bin, fmt.Errorf("fec histogram lanes of %d bytes, want a multiple of 8", len(lanes))
			}
			for i := 0; i < len(lanes); i += 8 {
				v := binary.NativeEndian.Uint64(lanes[i:])
				if v == statNotSet {
					break
				}
				bin.Lanes = append(bin.Lanes, v)
			}
		}
	}
	if err := ad.Err(); err != nil {
		return bin, fmt.Errorf("fec histogram bin: %w", err)
	}
	if !haveLow || !haveHigh || !haveVal {
		return bin, fmt.Errorf("fec histogram bin without low, high or value")
	}
	return bin, nil
}
