package diagnose

import (
	"fmt"
	"path"
	"sort"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/collector/phy"
	"github.com/nic-exporter/nic_exporter/internal/sff"
)

// phyInputs are what a sample's files say of each interface's physical
// layer, for the daemon's phy collector (runPhy): the link state of
// `ethtool DEV`, the FEC of `ethtool --show-fec`, the module memory of
// collect's ethtool_-m_IF.txt; and the file:line each came from, for the
// evidence.
type phyInputs struct {
	links   map[string]phy.LinkState
	fec     map[string]phy.FEC
	modules map[string]*sff.Memory
	// at is the file:line of each interface's input, by "link", "fec"
	// or "module" and the interface.
	at map[[2]string]string
}

func (p *phyInputs) init() {
	if p.at == nil {
		p.links, p.fec, p.modules, p.at = map[string]phy.LinkState{}, map[string]phy.FEC{}, map[string]*sff.Memory{}, map[[2]string]string{}
	}
}

// addLink records the link state of an `ethtool DEV` output: whether the
// link is detected, the driver's reason it is down and its link down
// count, as the phy collector reads them over netlink.
func (p *phyInputs) addLink(file string, ls *LinkSettings) {
	if ls.Interface == "" || !ls.HasDetected && ls.DownEvents == nil {
		return
	}
	p.init()
	st := phy.LinkState{DownReason: ls.DownReason, DownSubstate: ls.DownSubstate, DownEvents: ls.DownEvents}
	if ls.HasDetected {
		up := ls.Detected
		st.Up = &up
	}
	p.links[ls.Interface] = st
	line := ls.DetectedLine
	if line == 0 {
		line = ls.DownEventsLine
	}
	p.at[[2]string{"link", ls.Interface}] = fmt.Sprintf("%s:%d", file, line)
}

// addFEC records the FEC mode and counters of an `ethtool --show-fec`
// output.
func (p *phyInputs) addFEC(file string, f *FECState) {
	p.init()
	counter := func(name string) *phy.FECCounter {
		if v, ok := f.Counters[name]; ok {
			return &phy.FECCounter{Total: v}
		}
		return nil
	}
	p.fec[f.Interface] = phy.FEC{Mode: f.Mode, CorrectedBlocks: counter("corrected_blocks"),
		UncorrectableBlocks: counter("uncorrectable_blocks"), CorrectedBits: counter("corrected_bits")}
	line := f.ModeLine
	if l, ok := f.CounterLines["uncorrectable_blocks"]; ok {
		line = l
	}
	p.at[[2]string{"fec", f.Interface}] = fmt.Sprintf("%s:%d", file, line)
}

// addModule records the module memory of collect's ethtool_-m_IF.txt (the
// pages as internal/sff's text dump); the interface is the file name's.
func (p *phyInputs) addModule(file, text string) error {
	m, err := sff.ParseTextDump(strings.NewReader(text))
	if err != nil {
		return err
	}
	if _, err := sff.Decode(m); err != nil {
		return err
	}
	dev := "module"
	if mm := moduleIface.FindStringSubmatch(path.Base(file)); mm != nil {
		dev = mm[1]
	}
	p.init()
	p.modules[dev] = m
	ev := file
	for i, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "page ") {
			ev = fmt.Sprintf("%s:%d", file, i+1)
			break
		}
	}
	p.at[[2]string{"module", dev}] = ev
	return nil
}

// evidence records where each interface's physical-layer input was read,
// for whereRead.
func (p *phyInputs) evidence(into map[string]string) {
	for k, at := range p.at {
		into["phy\x00"+k[0]+"\x00"+k[1]] = at
	}
}

// phyEvidence returns the file:line of a phy collector series: the link
// state, FEC or module input of its device.
func phyEvidence(lbls map[string]string, evidence map[string]string) (string, bool) {
	name := lbls["__name__"]
	kind := ""
	switch {
	case strings.HasPrefix(name, "nic_phy_fec_"):
		kind = "fec"
	case strings.HasPrefix(name, "nic_phy_link_"):
		kind = "link"
	case strings.HasPrefix(name, "nic_transceiver_"):
		kind = "module"
	default:
		return "", false
	}
	at, ok := evidence["phy\x00"+kind+"\x00"+lbls["device"]]
	return at, ok
}

// errNotInBundle is the answer for what the bundle has no file of: the
// collector takes it as an operation the driver does not support, which
// it is to a bundle.
var errNotInBundle = fmt.Errorf("not in the bundle: %w", syscall.EOPNOTSUPP)

// bundleSource serves phyInputs as the phy collector's source, so the
// bundle's link states, FEC and modules become its series as the
// daemon's are.
type bundleSource struct{ in *phyInputs }

var (
	_ phy.Source       = bundleSource{}
	_ phy.ModuleSource = bundleSource{}
)

// Interfaces implements phy.Source: every interface with an input, in
// name order.
func (s bundleSource) Interfaces() ([]phy.Interface, error) {
	seen := map[string]bool{}
	for n := range s.in.links {
		seen[n] = true
	}
	for n := range s.in.fec {
		seen[n] = true
	}
	for n := range s.in.modules {
		seen[n] = true
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]phy.Interface, len(names))
	for i, n := range names {
		out[i] = phy.Interface{Name: n, Index: i + 1}
	}
	return out, nil
}

// LinkState implements phy.Source.
func (s bundleSource) LinkState(ifname string) (phy.LinkState, error) {
	if ls, ok := s.in.links[ifname]; ok {
		return ls, nil
	}
	return phy.LinkState{}, errNotInBundle
}

// FEC implements phy.Source.
func (s bundleSource) FEC(ifname string) (phy.FEC, error) {
	if f, ok := s.in.fec[ifname]; ok {
		return f, nil
	}
	return phy.FEC{}, errNotInBundle
}

// Module implements phy.ModuleSource.
func (s bundleSource) Module(ifname string) (*sff.Memory, error) {
	if m, ok := s.in.modules[ifname]; ok {
		return m, nil
	}
	return nil, errNotInBundle
}

// phySnapshot runs the daemon's phy collector over the sample's inputs,
// or returns nil when there are none.
func phySnapshot(in *phyInputs, at time.Time, log *zap.Logger) (*exposition.Snapshot, error) {
	if in.at == nil {
		return nil, nil
	}
	if log == nil {
		log = zap.NewNop()
	}
	c, err := phy.New(phy.Config{Source: bundleSource{in}, Now: func() time.Time { return at }}, log)
	if err != nil {
		return nil, err
	}
	return poll(c, log)
}
