package collect

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/nic-exporter/nic_exporter/collector/phy"
	"github.com/nic-exporter/nic_exporter/internal/errclass"
	"github.com/nic-exporter/nic_exporter/internal/ethtoolioctl"
)

// nicInterfaces returns the interfaces of the ethtool source that have a
// device in sysfs (a PCI function or another bus device: not loopback,
// bridges, veth or tunnels), sorted by name.
func (c *collector) nicInterfaces(src Ethtool) ([]string, error) {
	ifs, err := src.Interfaces()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, i := range ifs {
		if _, err := os.Stat(filepath.Join(c.src.SysfsPath, "class/net", i.Name, "device")); err != nil {
			continue
		}
		out = append(out, i.Name)
	}
	sort.Strings(out)
	return out, nil
}

// withEthtool opens the ethtool source and calls fn with it and the NIC
// interfaces, noting a source that cannot be opened.
func (c *collector) withEthtool(fn func(src Ethtool, names []string)) {
	if c.src.Ethtool == nil {
		return
	}
	src, err := c.src.Ethtool()
	if err != nil {
		c.b.unreadableErr("ethtool (SIOCETHTOOL)", err)
		return
	}
	if cl, ok := src.(interface{ Close() error }); ok {
		defer cl.Close()
	}
	names, err := c.nicInterfaces(src)
	if err != nil {
		c.b.unreadableErr("ethtool interfaces", err)
		return
	}
	fn(src, names)
}

// ethtoolSample writes ethtool -S of each NIC interface into dir.
func (c *collector) ethtoolSample(dir string) {
	c.withEthtool(func(src Ethtool, names []string) {
		for _, n := range names {
			cmd := "ethtool -S " + n
			text, err := ethtoolStats(src, n)
			if errors.Is(err, errNoStats) {
				continue // netdevsim, dummy: ethtool -S prints "no stats available"
			}
			if err != nil {
				c.b.unreadableErr(cmd, err)
				continue
			}
			c.b.add(name(dir, "ethtool_-S_"+n+".txt"), cmd+" (SIOCETHTOOL ETHTOOL_GSTRINGS, ETHTOOL_GSTATS)", []byte(text))
		}
	})
}

// ethtoolOnce writes ethtool -i and ethtool (link settings) of each NIC
// interface.
func (c *collector) ethtoolOnce(mr ModuleReader) {
	ls, _ := mr.(linkStater)
	c.withEthtool(func(src Ethtool, names []string) {
		for _, n := range names {
			if di, err := src.DriverInfo(n); err != nil {
				c.b.unreadableErr("ethtool -i "+n, err)
			} else {
				c.b.add("ethtool_-i_"+n+".txt", "ethtool -i "+n+" (SIOCETHTOOL ETHTOOL_GDRVINFO)", []byte(renderDriverInfo(di)))
			}
			if l, err := src.Link(n); err != nil {
				c.b.unreadableErr("ethtool "+n, err)
			} else if l.HasSettings || l.HasDetected {
				src := "ethtool " + n + " (SIOCETHTOOL ETHTOOL_GSET, ETHTOOL_GLINK)"
				var st *phy.LinkState
				if ls != nil {
					if s, err := ls.LinkState(n); err == nil {
						st, src = &s, src+"; the link down reason and count from ETHTOOL_MSG_LINKSTATE_GET"
					}
				}
				c.b.add("ethtool_"+n+".txt", src, []byte(renderLink(n, l, st)))
			}
		}
	})
}

// errNoStats is the error of a driver without statistics.
var errNoStats = errors.New("no statistics")

// ethtoolStats reads the statistics of one interface as ethtool -S
// prints them; a driver that changes its number of statistics between
// the two calls is read again once.
func ethtoolStats(src Ethtool, n string) (string, error) {
	for try := 0; ; try++ {
		di, err := src.DriverInfo(n)
		if err != nil {
			return "", err
		}
		if di.NStats == 0 {
			return "", errNoStats
		}
		names, err := src.StatNames(n, di.NStats)
		if err == nil {
			vals := make([]uint64, len(names))
			if err = src.Stats(n, vals); err == nil {
				return renderStats(names, vals), nil
			}
		}
		if !errors.Is(err, ethtoolioctl.ErrStatCountChanged) || try > 0 {
			return "", err
		}
	}
}

// renderStats prints statistics as ethtool -S does.
func renderStats(names []string, vals []uint64) string {
	var b strings.Builder
	b.WriteString("NIC statistics:\n")
	for i, n := range names {
		fmt.Fprintf(&b, "     %s: %d\n", n, vals[i])
	}
	return b.String()
}

// renderDriverInfo prints the fields of ETHTOOL_GDRVINFO that ethtool -i
// prints from it.
func renderDriverInfo(di ethtoolioctl.DriverInfo) string {
	stats := "no"
	if di.NStats > 0 {
		stats = "yes"
	}
	return fmt.Sprintf("driver: %s\nversion: %s\nfirmware-version: %s\nbus-info: %s\nsupports-statistics: %s\n",
		di.Driver, di.Version, di.FirmwareVersion, di.BusInfo, stats)
}

// linkStater is implemented by a module reader that also reads the link
// state over ethtool netlink (the phy collector's source).
type linkStater interface {
	LinkState(ifname string) (phy.LinkState, error)
}

// renderLink prints link settings and state as ethtool DEV does, the
// fields the ioctls give, and from st, when the driver gives them, the
// reason the link is down and the link down count as ethtool 5.8 and
// later print them.
func renderLink(n string, l ethtoolioctl.Link, st *phy.LinkState) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Settings for %s:\n", n)
	if l.HasSettings {
		if l.SpeedMbps == 0 || l.SpeedMbps == ^uint32(0) {
			b.WriteString("\tSpeed: Unknown!\n")
		} else {
			fmt.Fprintf(&b, "\tSpeed: %dMb/s\n", l.SpeedMbps)
		}
		switch l.Duplex {
		case 0:
			b.WriteString("\tDuplex: Half\n")
		case 1:
			b.WriteString("\tDuplex: Full\n")
		default:
			b.WriteString("\tDuplex: Unknown! (255)\n")
		}
		if l.Autoneg == 1 {
			b.WriteString("\tAuto-negotiation: on\n")
		} else {
			b.WriteString("\tAuto-negotiation: off\n")
		}
	}
	detected := l.Detected
	if st != nil && st.Up != nil {
		// ethtool DEV takes "Link detected" from the netlink link state
		// where it has it, as here.
		detected, l.HasDetected = *st.Up, true
	}
	if l.HasDetected {
		if detected {
			b.WriteString("\tLink detected: yes\n")
		} else if st != nil && st.DownReason != "" {
			fmt.Fprintf(&b, "\tLink detected: no (%s", extStateText(st.DownReason))
			if st.DownSubstate != "" {
				fmt.Fprintf(&b, ", %s", extStateText(st.DownSubstate))
			}
			b.WriteString(")\n")
		} else {
			b.WriteString("\tLink detected: no\n")
		}
	}
	if st != nil && st.DownEvents != nil {
		fmt.Fprintf(&b, "\tLink Down Events: %d\n", *st.DownEvents)
	}
	return b.String()
}

// extStateText writes a link extended state or substate name as ethtool
// prints it (netlink/settings.c): the words with the first capitalised;
// the two names whose ethtool string has other words are spelled out.
// Capitals inside ethtool's strings (EEPROM, FEC, Serdes ALOS) are not
// reproduced; diagnose reads either.
func extStateText(name string) string {
	switch name {
	case "link_logical_mismatch":
		return "Logical mismatch"
	case "cmis_not_ready":
		return "CMIS module is not in ModuleReady state"
	}
	t := strings.ReplaceAll(name, "_", " ")
	if t == "" {
		return t
	}
	return strings.ToUpper(t[:1]) + t[1:]
}

// fecReader is implemented by a module reader that also reads the FEC
// mode and statistics over ethtool netlink (the phy collector's source).
type fecReader interface {
	FEC(ifname string) (phy.FEC, error)
}

// fecSample writes ethtool_--show-fec_IF.txt into dir for each NIC
// interface whose driver reports FEC: the output of `ethtool -I
// --show-fec IF` (ethtool 6.x), the totals with their lanes.
func (c *collector) fecSample(dir string) {
	fr, ok := c.mr.(fecReader)
	if !ok {
		return
	}
	c.withEthtool(func(_ Ethtool, names []string) {
		for _, n := range names {
			cmd := "ethtool -I --show-fec " + n
			f, err := fr.FEC(n)
			if errclass.IsUnsupported(err) || errclass.IsNotExist(err) {
				continue // no FEC (ENA, virtual functions)
			}
			if err != nil {
				c.b.unreadableErr(cmd, err)
				continue
			}
			if f.Mode == "" && f.CorrectedBlocks == nil && f.UncorrectableBlocks == nil && f.CorrectedBits == nil {
				continue
			}
			c.b.add(name(dir, "ethtool_--show-fec_"+n+".txt"), cmd+" (ETHTOOL_MSG_FEC_GET with statistics)", []byte(renderFEC(n, f)))
		}
	})
}

// renderFEC prints FEC state as `ethtool -I --show-fec` of ethtool 6.x
// does (netlink/fec.c): the active mode, then each counter the driver
// reports with its lanes.
func renderFEC(n string, f phy.FEC) string {
	var b strings.Builder
	fmt.Fprintf(&b, "FEC parameters for %s:\n", n)
	mode := "None"
	switch f.Mode {
	case "off":
		mode = "Off"
	case "rs":
		mode = "RS"
	case "baser":
		mode = "BaseR"
	case "llrs":
		mode = "LLRS"
	}
	fmt.Fprintf(&b, "Active FEC encoding: %s\n", mode)
	stats := []struct {
		name string
		c    *phy.FECCounter
	}{{"corrected_blocks", f.CorrectedBlocks}, {"uncorrectable_blocks", f.UncorrectableBlocks}, {"corrected_bits", f.CorrectedBits}}
	header := false
	for _, s := range stats {
		if s.c == nil {
			continue
		}
		if !header {
			b.WriteString("Statistics:\n")
			header = true
		}
		fmt.Fprintf(&b, "  %s: %d", s.name, s.c.Total)
		if len(s.c.Lanes) > 0 {
			b.WriteString(" [ per_lane:")
			for i, v := range s.c.Lanes {
				if i > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, " %d", v)
			}
			b.WriteString(" ]")
		}
		b.WriteString("\n")
	}
	return b.String()
}
