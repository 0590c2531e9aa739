package diagnose

import (
	"fmt"
	"strconv"
	"strings"
)

// KindEthtoolFEC is the output of `ethtool [-I] --show-fec DEV`.
const KindEthtoolFEC = "ethtool --show-fec"

// FECState is what `ethtool -I --show-fec DEV` printed: the active mode
// and the FEC counters the driver reports, each with its line.
type FECState struct {
	Interface string
	// Mode is the active mode as the phy collector names it (off, rs,
	// baser, llrs); empty when ethtool printed None (no active mode) or a
	// mode the collector has no name for.
	Mode     string
	ModeLine Line
	// Counters are the totals by ethtool's name (corrected_blocks,
	// uncorrectable_blocks, corrected_bits), CounterLines their lines.
	Counters     map[string]uint64
	CounterLines map[string]Line
}

// ParseFEC parses `ethtool --show-fec DEV` and `ethtool -I --show-fec
// DEV` of any ethtool version: the "FEC parameters for DEV:" header, the
// "Active FEC encoding:" line, and under "Statistics:" the counters, with
// their lanes on lines of their own ("Lane 0: 255", ethtool 5.13 to
// 6.17) or after them (" [ per_lane: 255, 1 ]", later); the histogram
// bins (fec_symbols_err_*, fec_bit_err_*) are detail the default series
// leave out. ethtool's netlink/fec.c is the reference for the layout.
func ParseFEC(text string) (*FECState, error) {
	var f *FECState
	inStats := false
	for i, raw := range strings.Split(text, "\n") {
		l := strings.TrimSpace(raw)
		if name, ok := strings.CutPrefix(l, "FEC parameters for "); ok && strings.HasSuffix(name, ":") {
			if f != nil {
				break // one interface per file
			}
			f = &FECState{Interface: strings.TrimSuffix(name, ":"), Counters: map[string]uint64{}, CounterLines: map[string]Line{}}
			continue
		}
		if f == nil {
			continue
		}
		if l == "Statistics:" {
			inStats = true
			continue
		}
		key, val, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		val = strings.TrimSpace(val)
		switch {
		case key == "Active FEC encoding":
			f.ModeLine = Line(i + 1)
			switch m := strings.ToLower(strings.Fields(val + " none")[0]); m {
			case "off", "rs", "baser", "llrs":
				f.Mode = m
			}
		case inStats && (key == "corrected_blocks" || key == "uncorrectable_blocks" || key == "corrected_bits"):
			total, _, _ := strings.Cut(val, "[")
			n, err := strconv.ParseUint(strings.TrimSpace(total), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: %s %q: not an unsigned integer", i+1, key, val)
			}
			f.Counters[key], f.CounterLines[key] = n, Line(i+1)
		}
	}
	if f == nil {
		return nil, fmt.Errorf("no \"FEC parameters for DEV:\" header")
	}
	return f, nil
}
