package phy

import (
	"fmt"
	"os"
	"path/filepath"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/internal/ethtoolnl"
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

// HostSource reads this host's interfaces over ethtool netlink. It
// implements Source: the link state and FEC. (The standard counters and
// module memory, StatsSource and ModuleSource, come with the ethtool
// netlink STATS and MODULE_EEPROM client.)
type HostSource struct {
	cfg HostConfig
	log *zap.Logger
	nl  *ethtoolnl.Client // nil until opened
}

var _ Source = (*HostSource)(nil)

// NewHostSource returns a source that reads the interfaces of a network
// namespace, by default the exporter's. The ethtool netlink socket is opened by the first Interfaces
// call, and again by later ones until that succeeds: a kernel without the
// ethtool family (before 5.6) makes Interfaces fail with an error that
// wraps collector.ErrNoSource, so the collector is up with no series.
func NewHostSource(cfg HostConfig, log *zap.Logger) *HostSource {
	if cfg.SysfsPath == "" {
		cfg.SysfsPath = "/sys"
	}
	return &HostSource{cfg: cfg, log: log}
}

// Close closes the netlink socket, if it was opened.
func (h *HostSource) Close() error {
	if h.nl == nil {
		return nil
	}
	return h.nl.Close()
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
	}
	ifs, err := interfaces(h.cfg.Netns)
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
		out = append(out, Interface{Name: ifc.Name, Index: ifc.Index, Driver: drv})
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
