package phy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/internal/ethtoolioctl"
	"github.com/nic-exporter/nic_exporter/internal/ethtoolnl"
	"github.com/nic-exporter/nic_exporter/internal/modread"
	"github.com/nic-exporter/nic_exporter/internal/sff"
)

// HostConfig configures the host source.
type HostConfig struct {
	// Netns is the network namespace file whose interfaces are read
	// (e.g. /run/netns/x); empty means the exporter's own. Drivers are
	// then not looked up (sysfs shows the exporter's namespace).
	Netns string
	// SysfsPath is the sysfs mount point, where the drivers of the
	// interfaces are looked up; empty means /sys.
	SysfsPath string
}

// HostSource reads this host's interfaces over ethtool netlink: the link
// state, FEC, the standard counters (STATS) and module memory
// (MODULE_EEPROM, falling back to the legacy module ioctls through
// internal/modread). It is used by one poll at a time.
type HostSource struct {
	cfg     HostConfig
	log     *zap.Logger
	nl      *ethtoolnl.Client    // nil until opened
	ioctl   *ethtoolioctl.Source // nil when it could not be opened
	modules *modread.Reader      // made with nl
	ifaces  map[string]Interface // the last list, to forget re-created interfaces
	lister  *ifaceLister         // nil until opened
}

var _ interface {
	Source
	StatsSource
	ModuleSource
} = (*HostSource)(nil)

// NewHostSource returns a source that reads the interfaces of a network
// namespace, by default the exporter's. The ethtool netlink socket is opened by the first Interfaces
// call, and again by later ones until that succeeds: a kernel without the
// ethtool family (before 5.6) makes Interfaces fail with an error that
// wraps collector.ErrNoSource, so the collector is up with no series.
func NewHostSource(cfg HostConfig, log *zap.Logger) *HostSource {
	if cfg.SysfsPath == "" {
		cfg.SysfsPath = "/sys"
	}
	return &HostSource{cfg: cfg, log: log, ifaces: map[string]Interface{}}
}

// Close closes the netlink and ioctl sockets, if they were opened.
func (h *HostSource) Close() error {
	var err error
	if h.ioctl != nil {
		err = h.ioctl.Close()
	}
	if h.nl != nil {
		err = errors.Join(err, h.nl.Close())
	}
	if h.lister != nil {
		err = errors.Join(err, h.lister.Close())
	}
	return err
}

// Interfaces implements Source. The driver is the name of the driver
// bound to the interface's device in sysfs, empty for virtual interfaces.
func (h *HostSource) Interfaces() ([]Interface, error) {
	if h.nl == nil {
		nl, err := ethtoolnl.New(ethtoolnl.Config{Netns: h.cfg.Netns}, h.log)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", collector.ErrNoSource, err)
		}
		h.nl = nl
		// The legacy module ioctls are the fallback for kernels before
		// MODULE_EEPROM (5.13); without them netlink alone is used.
		if io, err := ethtoolioctl.New(h.cfg.Netns); err == nil {
			h.ioctl = io
			h.modules = modread.New(nl, io, h.log)
		} else {
			h.log.Debug("no ethtool ioctl socket; module memory by netlink only", zap.Error(err))
			h.modules = modread.New(nl, nil, h.log)
		}
	}
	if h.lister == nil {
		l, err := newIfaceLister(h.cfg.Netns)
		if err != nil {
			return nil, fmt.Errorf("listing interfaces: %w", err)
		}
		h.lister = l
	}
	ifs, err := h.lister.list()
	if err != nil {
		return nil, fmt.Errorf("listing interfaces: %w", err)
	}
	out := make([]Interface, 0, len(ifs))
	for _, ifc := range ifs {
		drv := ""
		if h.cfg.Netns != "" {
			// No driver lookup: sysfs shows another namespace.
		} else if target, err := os.Readlink(filepath.Join(h.cfg.SysfsPath, "class/net", ifc.Name, "device/driver")); err == nil {
			drv = filepath.Base(target)
		}
		i := Interface{Name: ifc.Name, Index: ifc.Index, Driver: drv}
		if old, ok := h.ifaces[ifc.Name]; ok && old != i {
			// Re-created or re-bound: the module path may differ now.
			h.modules.Forget(ifc.Name)
		}
		h.ifaces[ifc.Name] = i
		out = append(out, i)
	}
	return out, nil
}

// errNotOpen is returned when a read comes before a successful
// Interfaces call.
var errNotOpen = fmt.Errorf("%w: ethtool netlink socket not open", collector.ErrNoSource)

// LinkState implements Source.
func (h *HostSource) LinkState(ifname string) (LinkState, error) {
	if h.nl == nil {
		return LinkState{}, errNotOpen
	}
	ls, err := h.nl.LinkState(ifname)
	if err != nil {
		return LinkState{}, err
	}
	return linkStateFrom(ls), nil
}

// FEC implements Source.
func (h *HostSource) FEC(ifname string) (FEC, error) {
	if h.nl == nil {
		return FEC{}, errNotOpen
	}
	f, err := h.nl.FEC(ifname)
	if err != nil {
		return FEC{}, err
	}
	return fecFrom(f), nil
}

// Stats implements StatsSource: the IEEE 802.3 and RFC 2819 groups, with
// the RMON size histograms as rmon counters named rx-pkts<low>to<high>
// and tx-pkts<low>to<high> (high 0: and above).
func (h *HostSource) Stats(ifname string) (Stats, error) {
	if h.nl == nil {
		return Stats{}, errNotOpen
	}
	st, err := h.nl.Stats(ifname)
	if err != nil {
		return Stats{}, err
	}
	return statsFrom(st), nil
}

// Module implements ModuleSource. An empty cage is memory with identifier
// 0 (sff.Decode then says so), not an error. The collector asks again
// after an EOPNOTSUPP only when its own back-off has passed, so what the
// module reader remembered about that interface is forgotten first.
func (h *HostSource) Module(ifname string) (*sff.Memory, error) {
	if h.modules == nil {
		return nil, errNotOpen
	}
	if h.modules.Path(ifname) == modread.PathNone {
		h.modules.Forget(ifname)
	}
	m, err := h.modules.Module(ifname)
	if errors.Is(err, sff.ErrNoModule) {
		empty := sff.NewMemory()
		_ = empty.Put(sff.AddrA0, 0, 0, 0, []byte{0})
		return empty, nil
	}
	return m, err
}

// statsFrom converts the netlink reply to the collector's type, sorted by
// group and name.
func statsFrom(st ethtoolnl.Stats) Stats {
	var out Stats
	groups := make([]ethtoolnl.StatsGroup, 0, len(st.Groups))
	for g := range st.Groups {
		groups = append(groups, g)
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i] < groups[j] })
	for _, g := range groups {
		names := make([]string, 0, len(st.Groups[g]))
		for n := range st.Groups[g] {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			out.Counters = append(out.Counters, StatCounter{Group: g.String(), Name: n, Value: st.Groups[g][n]})
		}
	}
	hist := func(dir string, buckets []ethtoolnl.HistBucket) {
		for _, b := range buckets {
			out.Counters = append(out.Counters, StatCounter{Group: ethtoolnl.StatsRMON.String(), Name: fmt.Sprintf("%s-pkts%dto%d", dir, b.Low, b.High), Value: b.Value})
		}
	}
	hist("rx", st.RxHist)
	hist("tx", st.TxHist)
	return out
}

// linkStateFrom converts the netlink reply to the collector's type.
func linkStateFrom(ls ethtoolnl.LinkState) LinkState {
	out := LinkState{Up: ls.Link}
	if ls.ExtState != nil {
		out.DownReason = ls.ExtState.String()
		if ls.ExtSubstate != nil {
			out.DownSubstate = SubstateName(*ls.ExtState, *ls.ExtSubstate)
		}
	}
	if ls.ExtDownCount != nil {
		n := uint64(*ls.ExtDownCount)
		out.DownEvents = &n
	}
	return out
}

// fecFrom converts the netlink reply to the collector's type.
func fecFrom(f ethtoolnl.FEC) FEC {
	var out FEC
	if f.Active != nil {
		out.Mode = f.Active.String()
	}
	conv := func(s *ethtoolnl.FECStat) *FECCounter {
		if s == nil {
			return nil
		}
		return &FECCounter{Total: s.Total, Lanes: append([]uint64(nil), s.Lanes...)}
	}
	out.CorrectedBlocks = conv(f.Corrected)
	out.UncorrectableBlocks = conv(f.Uncorrectable)
	out.CorrectedBits = conv(f.CorrectedBits)
	for _, b := range f.Hist {
		out.Hist = append(out.Hist, FECHistBin{Low: b.Low, High: b.High, Codewords: b.Value})
	}
	return out
}

// substates are the names of the extended substates of each extended
// state (enum ethtool_link_ext_substate_* in include/uapi/linux/ethtool.h),
// in snake case after the strings ethtool prints (netlink/settings.c).
var substates = map[ethtoolnl.ExtState][]string{
	0: {1: "no_partner_detected", 2: "ack_not_received", 3: "next_page_exchange_failed",
		4: "no_partner_detected_during_force_mode", 5: "fec_mismatch_during_override", 6: "no_hcd"},
	1: {1: "kr_frame_lock_not_acquired", 2: "kr_link_inhibit_timeout",
		3: "kr_link_partner_did_not_set_receiver_ready", 4: "remote_side_is_not_ready_yet"},
	2: {1: "pcs_did_not_acquire_block_lock", 2: "pcs_did_not_acquire_am_lock",
		3: "pcs_did_not_get_align_status", 4: "fc_fec_is_not_locked", 5: "rs_fec_is_not_locked"},
	3: {1: "large_number_of_physical_errors", 2: "unsupported_rate",
		3: "serdes_reference_clock_lost", 4: "serdes_alos"},
	5:  {1: "unsupported_cable", 2: "cable_test_failure"},
	10: {1: "cmis_not_ready"},
}

// SubstateName returns the name of substate sub of extended state s, or
// "unknown" for one this build does not know. Substate 0 means none.
func SubstateName(s ethtoolnl.ExtState, sub uint8) string {
	if sub == 0 {
		return ""
	}
	if names := substates[s]; int(sub) < len(names) && names[sub] != "" {
		return names[sub]
	}
	return "unknown"
}
