package diagnose

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing/fstest"
	"time"

	"github.com/nic-exporter/nic_exporter/internal/sysfs"
)

// Kinds of the files `nic_exporter collect` writes that no other tool
// prints (the collect package names them).
const (
	// KindCollectManifest is collect's manifest.json: the files, the
	// samples and what could not be read. It gives the uptime, the time
	// of the earlier sample and the sysfs directory of each RDMA counters
	// file; it has no series of its own.
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
	// KindRDMACounters is `grep -H .` in an RDMA port's counters or
	// hw_counters directory, or a device's hw_counters (collect's
	// ib_counters_DEV_PORT.txt, hw_counters_DEV_PORT.txt and
	// hw_counters_DEV.txt).
	KindRDMACounters = "RDMA counters (sysfs)"
)

// earlierSampleDir is the directory of the first of the two samples
// `nic_exporter collect` takes (collect.EarlierDir). Its files are the
// same as the later sample's at the top level, an interval before (the
// manifest says when): they are the first observation of each series,
// so the rules see the rates between the samples.
const earlierSampleDir = "earlier_sample/"

// collectManifest is what diagnose reads of collect's manifest.json: the
// time and uptime of each sample and the source of each file.
type collectManifest struct {
	Tool    string `json:"tool"`
	Samples []struct {
		Dir    string    `json:"dir"`
		Time   time.Time `json:"time"`
		Uptime float64   `json:"uptime_seconds"`
	} `json:"samples"`
	Files []struct {
		Name   string `json:"name"`
		Source string `json:"source"`
		// Process is the writer of a statistics file (vma.go).
		Process *manifestProcess `json:"process"`
	} `json:"files"`
}

// parseManifest parses collect's manifest.json.
func parseManifest(data []byte) (*collectManifest, error) {
	var m collectManifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	if m.Tool != "nic_exporter collect" {
		return nil, fmt.Errorf("tool %q is not nic_exporter collect", m.Tool)
	}
	return &m, nil
}

// sample returns the time and uptime of the sample in dir ("" for the
// top level, "earlier_sample" for the first).
func (m *collectManifest) sample(dir string) (time.Time, float64, bool) {
	for _, s := range m.Samples {
		if s.Dir == dir && !s.Time.IsZero() {
			return s.Time, s.Uptime, true
		}
	}
	return time.Time{}, 0, false
}

// rdmaCounterSource is the directory collect names as the source of an
// RDMA counters file: "cd /sys/class/infiniband/mlx5_0/ports/1/counters
// && grep -H . *".
var rdmaCounterSource = regexp.MustCompile(`/sys/class/infiniband/([^/\s]+)/(?:ports/([0-9]+)/)?(counters|hw_counters)\b`)

// rdmaCounterFile is the name collect gives an RDMA counters file, used
// when the bundle has no manifest: ib_counters_mlx5_0_1.txt is port 1 of
// mlx5_0; hw_counters_rdmap0s6.txt, without a trailing port number, the
// device's own hw_counters.
var rdmaCounterFile = regexp.MustCompile(`^(ib_counters|hw_counters)_(.+?)(?:_([0-9]+))?\.txt$`)

// rdmaDir returns the sysfs directory, relative to /sys, of an RDMA
// counters file: from the manifest's source when it names one, else
// from the file name.
func rdmaDir(name string, m *collectManifest) (string, bool) {
	if m != nil {
		for _, f := range m.Files {
			if f.Name != name {
				continue
			}
			if s := rdmaCounterSource.FindStringSubmatch(f.Source); s != nil {
				if s[2] == "" {
					return path.Join("class/infiniband", s[1], s[3]), true
				}
				return path.Join("class/infiniband", s[1], "ports", s[2], s[3]), true
			}
		}
	}
	s := rdmaCounterFile.FindStringSubmatch(path.Base(name))
	if s == nil {
		return "", false
	}
	dir := "hw_counters"
	if s[1] == "ib_counters" {
		dir = "counters"
	}
	if s[3] == "" {
		if dir == "counters" {
			return "", false // IBA counters are per port
		}
		return path.Join("class/infiniband", s[2], dir), true
	}
	return path.Join("class/infiniband", s[2], "ports", s[3], dir), true
}

// rdmaCounterLine is a line of such a file: "symbol_error:0".
var rdmaCounterLine = regexp.MustCompile(`^([A-Za-z0-9_]+):\s*([0-9]+)$`)

// isRDMACounters reports whether every non-empty line of a file with an
// RDMA counters file's name is "name:count".
func isRDMACounters(name string, ls []string) bool {
	if rdmaCounterFile.FindStringSubmatch(path.Base(name)) == nil {
		return false
	}
	n := 0
	for _, l := range ls {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		if !rdmaCounterLine.MatchString(l) {
			return false
		}
		n++
	}
	return n > 0
}

// rdmaFile is one counter of an RDMA counters file, as the infiniband
// collector reads it from sysfs, and the file and line it came from.
type rdmaFile struct {
	path     string // relative to /sys
	value    string
	evidence string
}

// parseRDMACounters parses an RDMA counters file into the sysfs files
// the infiniband collector reads, under dir.
func parseRDMACounters(file, dir, text string) ([]rdmaFile, error) {
	var out []rdmaFile
	for i, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		m := rdmaCounterLine.FindStringSubmatch(l)
		if m == nil {
			return nil, fmt.Errorf("line %d: %q is not NAME:COUNT", i+1, l)
		}
		out = append(out, rdmaFile{path: path.Join(dir, m[1]), value: m[2] + "\n", evidence: fmt.Sprintf("%s:%d", file, i+1)})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no counters")
	}
	return out, nil
}

// rdmaFS is the sysfs tree the infiniband collector reads over a
// bundle's RDMA counters files: each device with its ports' counters and
// hw_counters and its own hw_counters, nothing else (the ports' states
// come from ibstat, as diagnose's own series).
func rdmaFS(files []rdmaFile) fs.FS {
	m := fstest.MapFS{}
	for _, f := range files {
		m[f.path] = &fstest.MapFile{Data: []byte(f.value), Mode: 0o444}
	}
	return m
}

// moduleIface is the interface in the name of collect's module file,
// ethtool_-m_eth0.txt.
var moduleIface = regexp.MustCompile(`^ethtool_-m_([A-Za-z0-9._-]+)\.txt$`)

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

// addPCISysfs adds the PCIe link and AER series of the functions of a
// PCI sysfs file, as the netdev collector exports them from the same
// attributes, with the function's address as device (the file does not
// say which interface a function backs).
func (b *bundleSeries) addPCISysfs(file string, fns []PCISysfsFunction) {
	for _, f := range fns {
		if f.CurSpeedGTs > 0 && f.MaxSpeedGTs > 0 && f.CurWidth > 0 && f.MaxWidth > 0 {
			degraded := f.CurSpeedGTs < f.MaxSpeedGTs || f.CurWidth < f.MaxWidth
			b.add(descPCIeDegraded, boolValue(degraded), fmt.Sprintf("%s:%d", file, f.LinkLine), f.Address, f.Address)
		}
		for _, sev := range []string{"correctable", "nonfatal", "fatal"} {
			if n, ok := f.AER[sev]; ok {
				b.add(descPCIeAER, float64(n), fmt.Sprintf("%s:%d", file, f.AERLine[sev]), f.Address, f.Address, sev)
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
	FlagsLine         Line
	// CarrierChanges is carrier_changes; HasCarrierChanges says it was
	// printed.
	HasCarrierChanges  bool
	CarrierChanges     uint64
	CarrierChangesLine Line
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
			it.HasFlags, it.AdminUp, it.FlagsLine = true, n&1 != 0, Line(i+1)
		case "carrier_changes":
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: carrier_changes %q is not a count", i+1, v)
			}
			it.HasCarrierChanges, it.CarrierChanges, it.CarrierChangesLine = true, n, Line(i+1)
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

// addNetdevSysfs adds the link series of the interfaces of a netdev
// sysfs file, as the netdev collector exports them: admin state from
// IFF_UP of flags, carrier (absent while administratively down, as the
// kernel refuses to read it then) and carrier changes.
func (b *bundleSeries) addNetdevSysfs(file string, ifs []NetdevSysfsInterface) {
	for _, it := range ifs {
		if it.HasFlags {
			b.add(descAdminUp, boolValue(it.AdminUp), fmt.Sprintf("%s:%d", file, it.FlagsLine), it.Name)
		}
		if it.HasCarrier && (!it.HasFlags || it.AdminUp) {
			b.add(descCarrier, boolValue(it.Carrier), fmt.Sprintf("%s:%d", file, it.CarrierLine), it.Name)
		}
		if it.HasCarrierChanges {
			b.add(descCarrierChanges, float64(it.CarrierChanges), fmt.Sprintf("%s:%d", file, it.CarrierChangesLine), it.Name)
		}
	}
}
