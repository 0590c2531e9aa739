package demo

import (
	_ "embed"
	"fmt"
	"math"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nic-exporter/nic_exporter/collector/phy"
	"github.com/nic-exporter/nic_exporter/internal/sff"
)

// The memory of the demo's 400G OSFP module; the file's header says how
// it was derived from a real CMIS dump.
//
//go:embed phy_osfp.dump
var phyOSFPDump string

var phyPart = part{
	faults: map[string]string{
		"optic_degrading": "the ConnectX-7 Ethernet port's optic degrades over 6 minutes (or over the fault's start-end span): " +
			"lane 2's received power sinks through the module's low warning (-9 dBm) and low alarm (-12 dBm) thresholds, " +
			"the pre-FEC bit error rate and the FEC corrected blocks rise, then uncorrectable blocks, and from 80% of the span " +
			"the link flaps (down 6 s in every 10 s, reason bad_signal_integrity)",
	},
	update: (*Host).updatePhy,
}

// The demo optic's link and its healthy error rates.
const (
	// opticBitRate is the line rate of 400GBASE-R with RS(544,514): 4
	// lanes of 106.25 Gb/s. The mlx5 rx_bits_phy of the demo's ethtool
	// dump advances at this rate (see ethtool_mlx5.txt).
	opticBitRate = 4.25e11
	// opticBER is the healthy pre-FEC bit error rate, usual for PAM4.
	opticBER = 1e-8
	// opticLanes is the number of lit lanes (400GBASE-DR4).
	opticLanes = 4
	// opticLane is the lane (from 0) whose receiver degrades.
	opticLane = 2
	// opticSpan is the length of the fault when its schedule gives no end.
	opticSpan = 6 * time.Minute
	// bitsPerBlock is the corrected bits per corrected RS(544) codeword:
	// most corrected codewords hold one or two bit errors.
	bitsPerBlock = 1.3
	// The link base: mlx5 counted 2 link down events before the demo
	// started (link_down_events_phy of the ethtool dump).
	baseDownEvents = 2
)

// demoPhy is the demo host's physical-layer source and the state the
// optic_degrading fault accumulates.
type demoPhy struct {
	base *sff.Memory

	mu  sync.Mutex
	at  time.Duration // the demo clock the state was advanced to
	acc opticAcc
}

// opticAcc is what the optic_degrading fault has added to the counters,
// integrated over demo time so the counters never go back.
type opticAcc struct {
	corrBits float64 // corrected bits above the healthy rate, all on opticLane
	// corrBlocks are the codewords the fault's extra bit errors made
	// corrected ones, all on opticLane. They can never outnumber the
	// codewords received that are not already counted otherwise (see
	// faultBlocks).
	corrBlocks float64
	uncorr     float64 // uncorrectable blocks
}

// opticState is the optic at one demo time.
type opticState struct {
	rxDBm    float64 // received power of opticLane
	ber      float64 // pre-FEC bit error rate
	uncorr   float64 // uncorrectable blocks per second
	down     bool    // the link is down now
	downs    int     // link down events the fault caused so far
	degraded bool    // the fault is in effect
}

// interp interpolates y over the knots xs linearly, flat outside.
func interp(x float64, xs, ys []float64) float64 {
	if x <= xs[0] {
		return ys[0]
	}
	for i := 1; i < len(xs); i++ {
		if x <= xs[i] {
			return ys[i-1] + (ys[i]-ys[i-1])*(x-xs[i-1])/(xs[i]-xs[i-1])
		}
	}
	return ys[len(ys)-1]
}

// optic returns the optic's state at demo time t. It reads the schedule
// itself rather than through Active and Spans, which answer for the
// current demo time only, because the counters are integrated over the
// times between updates.
func (h *Host) optic(t time.Duration) opticState {
	st := opticState{rxDBm: -1.2, ber: opticBER}
	for _, f := range h.faults {
		if f.Name != "optic_degrading" || t < f.Start {
			continue
		}
		span := opticSpan
		if f.End != 0 {
			span = f.End - f.Start
		}
		flapStart := f.Start + span*8/10
		flapEnd := t
		if f.End != 0 && f.End < flapEnd {
			flapEnd = f.End
		}
		if flapEnd >= flapStart {
			st.downs += int((flapEnd-flapStart)/(10*time.Second)) + 1
		}
		if f.End != 0 && t >= f.End {
			continue // over: the optic was replaced
		}
		frac := float64(t-f.Start) / float64(span)
		st.degraded = true
		st.rxDBm = interp(frac, []float64{0, 0.1, 0.3, 0.5, 0.75}, []float64{-1.2, -3.0, -9.5, -12.5, -14.0})
		st.ber = math.Pow(10, interp(frac, []float64{0, 0.2, 0.35, 0.5, 0.65, 0.8}, []float64{-8, -7.6, -6.2, -4.9, -4.0, -3.3}))
		if frac >= 0.6 {
			st.uncorr = 20 * math.Pow(10, 2*math.Min(frac-0.6, 0.2)/0.2)
		}
		if t >= flapStart {
			// Down 6 s of every 10 s: longer than the collector's 5 s
			// poll interval, so every flap is seen.
			st.down = (t-flapStart)%(10*time.Second) < 6*time.Second
		}
	}
	return st
}

// advancePhy integrates the fault's counters up to the current demo
// clock, in steps of at most a second. The netdev and ethtool parts call
// it too, so whichever part updates first brings the state up to date.
func (h *Host) advancePhy() (*demoPhy, error) {
	if h.phy == nil {
		base, err := sff.ParseTextDump(strings.NewReader(phyOSFPDump))
		if err != nil {
			return nil, fmt.Errorf("embedded demo module memory: %w", err)
		}
		h.phy = &demoPhy{base: base}
	}
	d := h.phy
	now := h.Elapsed()
	d.mu.Lock()
	defer d.mu.Unlock()
	for d.at < now {
		step := min(time.Second, now-d.at)
		st := h.optic(d.at + step/2)
		extra := (st.ber - opticBER) * opticBitRate * step.Seconds()
		uncorr := st.uncorr * step.Seconds()
		d.acc.corrBits += extra
		d.acc.corrBlocks += faultBlocks(extra, uncorr, step.Seconds())
		d.acc.uncorr += uncorr
		d.at += step
	}
	return d, nil
}

// faultBlocks returns the codewords that extra bit errors beyond the
// healthy rate turn into corrected ones within secs seconds, in which
// uncorr codewords were uncorrectable. The error events (bitsPerBlock
// bits each) fall on the codewords at random, so a share 1-e^-λ of them
// is hit, λ being the events per codeword: about one per event while
// errors are rare, and never more than the codewords received. At the
// fault's worst bit error rate (5e-4) that is 88% of the codewords, with
// 2.7 corrected bits each; counting bits/bitsPerBlock blocks instead made
// more corrected codewords than codewords received, and the error-free
// bin of the histogram, the rest, went down. The result is also held
// below the codewords not counted as healthy corrected or uncorrectable,
// so the error-free bin can only grow.
func faultBlocks(extra, uncorr, secs float64) float64 {
	codewords := opticBitRate * secs / codewordBits
	if codewords <= 0 || extra <= 0 {
		return 0
	}
	healthy := opticBER * opticBitRate * secs / bitsPerBlock
	hit := codewords * -math.Expm1(-extra/bitsPerBlock/codewords)
	return max(0, min(hit, codewords-healthy-uncorr))
}

func (h *Host) updatePhy() error {
	_, err := h.advancePhy()
	return err
}

// opticLink returns the link down events the optic_degrading fault caused
// and whether it holds the link down now, for the netdev part's carrier.
func (h *Host) opticLink() (downs int, down bool) {
	st := h.optic(h.Elapsed())
	return st.downs, st.down
}

// addPhyEthtool adds to the ConnectX-7 port's mlx5 statistics what the
// physical layer makes of them at the current demo clock: the healthy
// corrected bits of each lane, the fault's extra corrected bits, post-FEC
// symbol and CRC errors, and every link down event, so ethtool -S, the FEC
// counters and LINKSTATE tell one story.
func (h *Host) addPhyEthtool(stats map[string]uint64) error {
	d, err := h.advancePhy()
	if err != nil {
		return err
	}
	d.mu.Lock()
	acc := d.acc
	d.mu.Unlock()
	up := (day + h.Elapsed()).Seconds()
	out := map[string]uint64{
		"rx_corrected_bits_phy": uint64(acc.corrBits),
		"rx_pcs_symbol_err_phy": uint64(acc.uncorr * 4),
		"rx_crc_errors_phy":     uint64(acc.uncorr),
		"link_down_events_phy":  uint64(h.downEvents() - baseDownEvents),
	}
	for l := 0; l < opticLanes; l++ {
		v := opticBER * opticBitRate / opticLanes * up
		if l == opticLane {
			v += acc.corrBits
		}
		out[fmt.Sprintf("rx_err_lane_%d_phy", l)] = uint64(v)
	}
	for name, v := range out {
		stats[name] += v
	}
	return nil
}

// downEvents is the ConnectX-7 port's link down count (ext_down_cnt,
// link_down_events_phy): the base, one per link_flap cycle as the netdev
// part counts them, one per link_down and one per optic flap.
func (h *Host) downEvents() int {
	downs, _ := h.opticLink()
	return baseDownEvents + int(h.ActiveFor("link_flap")/(10*time.Second)) + h.Started("link_down") + downs
}

// PhySource returns the demo host's physical-layer source: the
// ConnectX-7 Ethernet port with its OSFP module, FEC and standard
// counters; the ENA interface and loopback, which answer EOPNOTSUPP for
// all but the link state, as on AWS.
func (h *Host) PhySource() phy.Source { return demoPhySource{h} }

type demoPhySource struct{ h *Host }

var _ interface {
	phy.Source
	phy.StatsSource
	phy.ModuleSource
} = demoPhySource{}

const phyPort = "enp8s0f1np1"

func (demoPhySource) Interfaces() ([]phy.Interface, error) {
	return []phy.Interface{
		{Name: "lo", Index: 1},
		{Name: "ens5", Index: 2, Driver: "ena"},
		{Name: phyPort, Index: 4, Driver: "mlx5_core"},
	}, nil
}

func notSupported(op, name string) error {
	return fmt.Errorf("%s of %s: %w", op, name, syscall.EOPNOTSUPP)
}

func (s demoPhySource) LinkState(name string) (phy.LinkState, error) {
	up := true
	if name != phyPort {
		return phy.LinkState{Up: &up}, nil
	}
	h := s.h
	st := h.optic(h.Elapsed())
	ls := phy.LinkState{}
	n := uint64(h.downEvents())
	ls.DownEvents = &n
	up = !st.down && !h.Active("link_down")
	ls.Up = &up
	switch {
	case st.down:
		ls.DownReason, ls.DownSubstate = "bad_signal_integrity", "large_number_of_physical_errors"
	case h.Active("link_down"):
		// The switch port went down: mlx5 maps its PHY monitor's status
		// opcode 2 to autoneg / no partner detected
		// (mlx5e_link_ext_state_opcode_map in en_ethtool.c), which the
		// kernel's ethtool-netlink documentation explains as "peer is
		// down".
		ls.DownReason, ls.DownSubstate = "autoneg", "no_partner_detected"
	}
	return ls, nil
}

func (s demoPhySource) FEC(name string) (phy.FEC, error) {
	if name != phyPort {
		return phy.FEC{}, notSupported("fec", name)
	}
	d, err := s.h.advancePhy()
	if err != nil {
		return phy.FEC{}, err
	}
	d.mu.Lock()
	acc, at := d.acc, d.at
	d.mu.Unlock()
	// Every value below is taken at the time the state was advanced to,
	// so the healthy (closed-form) and the fault's (integrated) parts
	// agree.
	up := (day + at).Seconds()
	laneBits := make([]uint64, opticLanes)
	laneBlocks := make([]uint64, opticLanes)
	laneUncorr := make([]uint64, opticLanes)
	healthyLane := opticBER * opticBitRate / opticLanes * up
	var bits, blocks uint64
	for l := range laneBits {
		v, b := healthyLane, healthyLane/bitsPerBlock
		if l == opticLane {
			v += acc.corrBits
			b += acc.corrBlocks
			laneUncorr[l] = uint64(acc.uncorr)
		}
		laneBits[l], laneBlocks[l] = uint64(v), uint64(b)
		bits += laneBits[l]
		blocks += laneBlocks[l]
	}
	return phy.FEC{
		Mode:                "rs",
		CorrectedBlocks:     &phy.FECCounter{Total: blocks, Lanes: laneBlocks},
		UncorrectableBlocks: &phy.FECCounter{Total: uint64(acc.uncorr), Lanes: laneUncorr},
		CorrectedBits:       &phy.FECCounter{Total: bits, Lanes: laneBits},
		Hist:                fecHist(opticBitRate*up/codewordBits, healthyLane*opticLanes/bitsPerBlock, acc.corrBlocks, acc.uncorr),
	}, nil
}

// codewordBits is the length of an RS(544,514) codeword: 544 symbols of
// 10 bits.
const codewordBits = 5440

// fecHist returns the FEC histogram of a link that received codewords,
// healthy corrected ones at the healthy error rate, faulty corrected ones
// from the optic_degrading fault and uncorr uncorrectable ones: the
// codewords without errors, and the corrected ones by corrected symbols,
// the healthy ones mostly single errors, the fault's shifted towards more
// errors per codeword. The bins sum to the codewords received, less the
// uncorrectable ones, within rounding. Each argument only grows, and the
// fault's corrected codewords never grow faster than the codewords
// received less the others (faultBlocks), so each bin, the error-free one
// included, is the whole part of a growing number and never decreases.
func fecHist(codewords, healthy, faulty, uncorr float64) []phy.FECHistBin {
	bin := func(v float64) uint64 { return uint64(max(0, v)) }
	return []phy.FECHistBin{
		{Low: 0, High: 0, Codewords: bin(codewords - healthy - faulty - uncorr)},
		{Low: 1, High: 1, Codewords: bin(healthy*3/4 + faulty*3/10)},
		{Low: 2, High: 2, Codewords: bin(healthy/5 + faulty*4/10)},
		{Low: 3, High: 15, Codewords: bin(healthy/20 + faulty*3/10)},
	}
}

func (s demoPhySource) Stats(name string) (phy.Stats, error) {
	if name != phyPort {
		return phy.Stats{}, notSupported("stats", name)
	}
	d, err := s.h.advancePhy()
	if err != nil {
		return phy.Stats{}, err
	}
	d.mu.Lock()
	uncorr := uint64(d.acc.uncorr)
	d.mu.Unlock()
	up := (day + s.h.Elapsed()).Seconds()
	return phy.Stats{Counters: []phy.StatCounter{
		{Group: "eth-phy", Name: "SymbolErrorDuringCarrier", Value: uncorr * 4},
		{Group: "eth-mac", Name: "FramesTransmittedOK", Value: uint64(1.9e6 * up)},
		{Group: "eth-mac", Name: "FramesReceivedOK", Value: uint64(2.1e6 * up)},
		{Group: "eth-mac", Name: "FrameCheckSequenceErrors", Value: uncorr},
		{Group: "eth-mac", Name: "AlignmentErrors", Value: 0},
		{Group: "eth-mac", Name: "OctetsTransmittedOK", Value: uint64(1.6e10 * up)},
		{Group: "eth-mac", Name: "OctetsReceivedOK", Value: uint64(1.9e10 * up)},
		{Group: "eth-ctrl", Name: "MACControlFramesTransmitted", Value: 0},
		{Group: "eth-ctrl", Name: "MACControlFramesReceived", Value: 0},
		{Group: "rmon", Name: "undersize_pkts", Value: 0},
		{Group: "rmon", Name: "oversize_pkts", Value: 0},
		{Group: "rmon", Name: "fragments", Value: 0},
		{Group: "rmon", Name: "jabbers", Value: 0},
	}}, nil
}

// CMIS page 11h offsets the fault rewrites (CMIS 5.2 Table 8-77/8-78).
const (
	cmisRxPowerLane1    = 186 // 2 bytes per lane, 0.1 uW
	cmisRxPowerLowAlarm = 150 // one bit per lane
	cmisRxPowerLowWarn  = 152
)

func (s demoPhySource) Module(name string) (*sff.Memory, error) {
	if name != phyPort {
		return nil, notSupported("module eeprom", name)
	}
	d, err := s.h.advancePhy()
	if err != nil {
		return nil, err
	}
	m := d.base.Clone()
	st := s.h.optic(s.h.Elapsed())
	if !st.degraded {
		return m, nil
	}
	p11 := m.Upper[sff.PageKey{Addr: sff.AddrA0, Bank: 0, Page: 0x11}]
	raw := uint16(math.Round(math.Pow(10, st.rxDBm/10) * 1e-3 / 0.1e-6))
	off := cmisRxPowerLane1 - sff.PageSize + 2*opticLane
	p11[off], p11[off+1] = byte(raw>>8), byte(raw)
	// The module's latched flags (its own thresholds: -9 and -12 dBm).
	if st.rxDBm < -9.0 {
		p11[cmisRxPowerLowWarn-sff.PageSize] |= 1 << opticLane
	}
	if st.rxDBm < -12.0 {
		p11[cmisRxPowerLowAlarm-sff.PageSize] |= 1 << opticLane
	}
	return m, nil
}
