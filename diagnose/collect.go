package diagnose

import (
	"bytes"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/nic-exporter/nic_exporter/collector/phy"
	"github.com/nic-exporter/nic_exporter/internal/sff"
	"github.com/nic-exporter/nic_exporter/internal/sysfs"
)

// Kinds of the files `nic_exporter collect` writes that no other tool
// prints (the collect package names them).
const (
	// KindCollectManifest is collect's manifest.json: the files, the
	// samples and what could not be read. It has no findings.
	KindCollectManifest = "nic_exporter collect manifest"
	// KindPCISysfs is `grep -H .` of PCI function attributes: link speed
	// and width and the AER statistics (collect's pci_sysfs.txt).
	KindPCISysfs = "PCI sysfs attributes"
	// KindNetdevSysfs is `grep -H .` of network interface attributes:
	// operstate, carrier, carrier_changes and flags (collect's
	// netdev_sysfs.txt).
	KindNetdevSysfs = "netdev sysfs attributes"
	// KindModuleDump is pluggable module memory in internal/sff's text
	// form (collect's ethtool_-m_IF.txt).
	KindModuleDump = "module memory (ethtool -m)"
	// KindDevlinkInfo is `devlink dev info` text.
	KindDevlinkInfo = "devlink dev info"
)

// earlierSampleDir is the directory of the first of the two samples
// `nic_exporter collect` takes (collect.EarlierDir). Its files are the
// same as the later sample's at the top level, an interval before: the
// top level is the bundle's state, so the earlier files are listed but
// give no findings of their own.
const earlierSampleDir = "earlier_sample/"

// The alerts on uncorrectable AER messages and on a module's receive
// power below its own thresholds.
var (
	alertAERUncorrectable = Alert{"NICPCIeAERUncorrectable", SeverityWarning}
	alertRxPowerLow       = Alert{"NICTransceiverRxPowerLow", SeverityWarning}
	alertRxPowerLowAlarm  = Alert{"NICTransceiverRxPowerLowAlarm", SeverityWarning}
)

// moduleIface is the interface in the name of collect's module file,
// ethtool_-m_eth0.txt.
var moduleIface = regexp.MustCompile(`^ethtool_-m_([A-Za-z0-9._-]+)\.txt$`)

// moduleFindings decodes module memory in internal/sff's text form and
// adds a finding per lit lane whose receive power is below the module's
// low warning or low alarm threshold, as NICTransceiverRxPowerLow and
// NICTransceiverRxPowerLowAlarm define them. Lanes the phy collector
// leaves out as unused are left out here too.
func (a *Analyzer) moduleFindings(r *Report, file, text string) error {
	m, err := sff.ParseTextDump(strings.NewReader(text))
	if err != nil {
		return err
	}
	mod, err := sff.Decode(m)
	if err != nil {
		return err
	}
	dev := "module"
	if mm := moduleIface.FindStringSubmatch(path.Base(file)); mm != nil {
		dev = mm[1]
	}
	t := mod.RxPowerThresholds
	if t == nil {
		return nil
	}
	for _, l := range mod.Lanes {
		if l.RxPowerWatts == nil || phy.LaneUnused(l) {
			continue
		}
		rx := *l.RxPowerWatts
		ev := fmt.Sprintf("%s (lane %d)", file, l.Index)
		if t.LowWarning != nil && rx < *t.LowWarning {
			r.add(alertRxPowerLow, "transceiver_rx_power_low", dev, ev,
				fmt.Sprintf("lane %d receives %.4g mW, below the module's low warning %.4g mW.", l.Index, rx*1000, *t.LowWarning*1000))
		}
		if rx < t.LowAlarm {
			r.add(alertRxPowerLowAlarm, "transceiver_rx_power_low_alarm", dev, ev,
				fmt.Sprintf("lane %d receives %.4g mW, below the module's low alarm %.4g mW.", l.Index, rx*1000, t.LowAlarm*1000))
		}
	}
	return nil
}

// pciSysfsLine is one line of `grep -H .` over PCI function attributes,
// with or without the /sys/bus/pci/devices/ prefix:
// "0000:08:00.1/current_link_speed:32.0 GT/s PCIe".
var pciSysfsLine = regexp.MustCompile(`^(?:/sys/bus/pci/devices/)?([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])/(current_link_speed|max_link_speed|current_link_width|max_link_width|aer_dev_correctable|aer_dev_nonfatal|aer_dev_fatal):(.*)$`)

// isCollectManifest reports whether a JSON document is collect's
// manifest.
func isCollectManifest(t []byte) bool {
	return bytes.Contains(t, []byte(`"tool": "nic_exporter collect"`))
}

// PCISysfsFunction is what pci_sysfs.txt holds of one PCI function.
type PCISysfsFunction struct {
	Address string
	// CurSpeedGTs, MaxSpeedGTs, CurWidth and MaxWidth are 0 when absent
	// or unknown.
	CurSpeedGTs, MaxSpeedGTs float64
	CurWidth, MaxWidth       int
	// LinkLine is the line of current_link_speed or _width.
	LinkLine Line
	// AER are the TOTAL_ERR_COR, TOTAL_ERR_NONFATAL and TOTAL_ERR_FATAL
	// counts by severity (correctable, nonfatal, fatal), with their
	// lines.
	AER     map[string]uint64
	AERLine map[string]Line
}

// ParsePCISysfs parses `grep -H .` output of PCI function attributes.
// Lines of other files are skipped; a value that does not parse is an
// error naming its line.
func ParsePCISysfs(text string) ([]PCISysfsFunction, error) {
	byAddr := map[string]*PCISysfsFunction{}
	for i, l := range strings.Split(text, "\n") {
		m := pciSysfsLine.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			continue
		}
		addr, attr, val := strings.ToLower(m[1]), m[2], strings.TrimSpace(m[3])
		f := byAddr[addr]
		if f == nil {
			f = &PCISysfsFunction{Address: addr, AER: map[string]uint64{}, AERLine: map[string]Line{}}
			byAddr[addr] = f
		}
		switch attr {
		case "current_link_speed", "max_link_speed":
			gts, ok, err := sysfs.ParsePCIeSpeed(val)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", i+1, err)
			}
			if !ok {
				continue
			}
			if attr == "current_link_speed" {
				f.CurSpeedGTs, f.LinkLine = gts, Line(i+1)
			} else {
				f.MaxSpeedGTs = gts
			}
		case "current_link_width", "max_link_width":
			w, err := strconv.Atoi(val)
			if err != nil || w < 0 || w > maxPCIeWidth {
				return nil, fmt.Errorf("line %d: %s %q is not a PCIe width", i+1, attr, val)
			}
			if attr == "current_link_width" {
				f.CurWidth, f.LinkLine = w, Line(i+1)
			} else {
				f.MaxWidth = w
			}
		default:
			k, v, ok := strings.Cut(val, " ")
			sev := strings.TrimPrefix(attr, "aer_dev_")
			want := map[string]string{"correctable": "TOTAL_ERR_COR", "nonfatal": "TOTAL_ERR_NONFATAL", "fatal": "TOTAL_ERR_FATAL"}[sev]
			if !ok || k != want {
				continue
			}
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: %s %q is not a count", i+1, k, v)
			}
			f.AER[sev], f.AERLine[sev] = n, Line(i+1)
		}
	}
	if len(byAddr) == 0 {
		return nil, fmt.Errorf("no PCI function attributes")
	}
	out := make([]PCISysfsFunction, 0, len(byAddr))
	for _, f := range byAddr {
		out = append(out, *f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	return out, nil
}

// pciSysfsFindings adds the findings of PCI functions whose link trained
// below its capability, or that reported uncorrectable AER messages
// since boot.
func (a *Analyzer) pciSysfsFindings(r *Report, file string, fns []PCISysfsFunction) {
	for _, f := range fns {
		if (f.CurSpeedGTs > 0 && f.MaxSpeedGTs > 0 && f.CurSpeedGTs < f.MaxSpeedGTs) ||
			(f.CurWidth > 0 && f.MaxWidth > 0 && f.CurWidth < f.MaxWidth) {
			r.add(alertPCIeDegraded, "pcie_link_degraded", f.Address, fmt.Sprintf("%s:%d", file, f.LinkLine),
				fmt.Sprintf("current link %gGT/s x%d below the maximum %gGT/s x%d (sysfs).", f.CurSpeedGTs, f.CurWidth, f.MaxSpeedGTs, f.MaxWidth))
		}
		if len(f.AER) > 0 {
			if r.aerCounted == nil {
				r.aerCounted = map[string]bool{}
			}
			r.aerCounted[f.Address] = true
		}
		for _, sev := range []string{"fatal", "nonfatal"} {
			if n := f.AER[sev]; n > 0 {
				r.add(alertAERUncorrectable, "pcie_aer_"+sev, f.Address, fmt.Sprintf("%s:%d", file, f.AERLine[sev]),
					fmt.Sprintf("%d uncorrectable %s AER messages since boot (aer_dev_%s).", n, sev, sev))
			}
		}
	}
}

// ParseDevlinkInfo parses `devlink dev info` text into the firmware
// inventory: per device its driver (as DeviceType), PSID, and the
// running firmware version as Versions["FW"]'s current one. The stored
// version (what runs after the next reset) is not mlxfwmanager's
// "available" image and is left out.
func ParseDevlinkInfo(text string) ([]FirmwareDevice, error) {
	var out []FirmwareDevice
	var cur *FirmwareDevice
	group := ""
	for _, raw := range strings.Split(text, "\n") {
		l := strings.TrimSpace(raw)
		if l == "" {
			continue
		}
		if raw[0] != ' ' && raw[0] != '\t' && strings.HasSuffix(l, ":") && strings.Contains(l, "/") {
			out = append(out, FirmwareDevice{PCIName: strings.TrimSuffix(l, ":"), Versions: map[string][2]string{}})
			cur, group = &out[len(out)-1], ""
			continue
		}
		if cur == nil {
			continue
		}
		if g, ok := strings.CutSuffix(l, ":"); ok && !strings.Contains(g, " ") {
			group = g
			continue
		}
		k, v, _ := strings.Cut(l, " ")
		v = strings.TrimSpace(v)
		switch {
		case k == "driver":
			cur.DeviceType = v
		case k == "fw.psid" && group == "fixed":
			cur.PSID = v
		case k == "fw.version" && group == "running":
			cur.Versions["FW"] = [2]string{v, ""}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no devices")
	}
	return out, nil
}

// dropCountedAERLogFindings removes the kernel log findings of
// uncorrectable AER records for PCI functions whose AER counters the
// bundle holds: as NICKernelLogPCIeUncorrectable is silent where
// nic_pcie_aer_errors_total exists, the counter finding
// (NICPCIeAERUncorrectable) replaces the log finding.
func dropCountedAERLogFindings(r *Report) {
	if len(r.aerCounted) == 0 {
		return
	}
	kept := r.Findings[:0]
	for _, f := range r.Findings {
		if f.Alert == alertPCIeUncorrected.Name && (f.Condition == "pcie_aer_fatal" || f.Condition == "pcie_aer_nonfatal") && r.aerCounted[f.Device] {
			continue
		}
		kept = append(kept, f)
	}
	r.Findings = kept
}

// netdevSysfsLine is one line of `grep -H .` over network interface
// attributes, with or without the /sys/class/net/ prefix:
// "enp8s0f1np1/carrier:1".
var netdevSysfsLine = regexp.MustCompile(`^(?:/sys/class/net/)?([A-Za-z0-9._@-]+)/(operstate|carrier|carrier_changes|flags):(.*)$`)

// netdevSysfsCarrier recognises a file of such lines by its carrier or
// operstate lines.
var netdevSysfsCarrier = regexp.MustCompile(`^(?:/sys/class/net/)?[A-Za-z0-9._@-]+/(?:carrier|operstate):`)

// NetdevSysfsInterface is what netdev_sysfs.txt holds of one interface.
type NetdevSysfsInterface struct {
	Name      string
	OperState string
	// HasCarrier is false when carrier was not printed (reading it on an
	// administratively down interface fails with EINVAL).
	HasCarrier  bool
	Carrier     bool
	CarrierLine Line
	// AdminUp is IFF_UP of flags; HasFlags says flags was printed.
	HasFlags, AdminUp bool
}

// ParseNetdevSysfs parses `grep -H .` output of network interface
// attributes.
func ParseNetdevSysfs(text string) ([]NetdevSysfsInterface, error) {
	byName := map[string]*NetdevSysfsInterface{}
	var order []string
	for i, l := range strings.Split(text, "\n") {
		m := netdevSysfsLine.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			continue
		}
		it := byName[m[1]]
		if it == nil {
			it = &NetdevSysfsInterface{Name: m[1]}
			byName[m[1]] = it
			order = append(order, m[1])
		}
		v := strings.TrimSpace(m[3])
		switch m[2] {
		case "operstate":
			it.OperState = v
		case "carrier":
			if v != "0" && v != "1" {
				return nil, fmt.Errorf("line %d: carrier %q is not 0 or 1", i+1, v)
			}
			it.HasCarrier, it.Carrier, it.CarrierLine = true, v == "1", Line(i+1)
		case "flags":
			n, err := strconv.ParseUint(strings.TrimPrefix(v, "0x"), 16, 32)
			if err != nil {
				return nil, fmt.Errorf("line %d: flags %q is not a hexadecimal number", i+1, v)
			}
			it.HasFlags, it.AdminUp = true, n&1 != 0
		}
	}
	if len(order) == 0 {
		return nil, fmt.Errorf("no network interface attributes")
	}
	out := make([]NetdevSysfsInterface, 0, len(order))
	for _, n := range order {
		out = append(out, *byName[n])
	}
	return out, nil
}

// netdevSysfsFindings adds a link-down finding for each interface that
// is administratively up without carrier, as NICLinkDown defines it,
// unless the interface has one already (from ethtool's "Link detected:
// no"), and records the interfaces that are administratively down.
func (a *Analyzer) netdevSysfsFindings(r *Report, file string, ifs []NetdevSysfsInterface) {
	for _, it := range ifs {
		if it.HasFlags && !it.AdminUp {
			if r.adminDown == nil {
				r.adminDown = map[string]bool{}
			}
			r.adminDown[it.Name] = true
		}
		if !it.HasCarrier || it.Carrier || !it.HasFlags || !it.AdminUp {
			continue
		}
		dup := false
		for _, f := range r.Findings {
			dup = dup || f.Alert == alertLinkDown.Name && f.Device == it.Name
		}
		if !dup {
			r.add(alertLinkDown, "link_down", it.Name, fmt.Sprintf("%s:%d", file, it.CarrierLine),
				fmt.Sprintf("carrier 0 while administratively up (operstate %s).", it.OperState))
		}
	}
}

// dropAdminDownLinkFindings removes the link-down findings of interfaces
// a netdev sysfs file shows administratively down: ethtool prints "Link
// detected: no" for them, but NICLinkDown fires only for an interface
// that is up.
func dropAdminDownLinkFindings(r *Report) {
	if len(r.adminDown) == 0 {
		return
	}
	kept := r.Findings[:0]
	for _, f := range r.Findings {
		if f.Alert == alertLinkDown.Name && r.adminDown[f.Device] {
			continue
		}
		kept = append(kept, f)
	}
	r.Findings = kept
}
