package diagnose

import (
	"fmt"
	"io/fs"
	"math"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing/fstest"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/collector/netdev"
	"github.com/nic-exporter/nic_exporter/internal/sysfs"
)

// KindHwmonSysfs is `grep -H .` in /sys of the temperature attributes of
// PCI functions: their hwmon devices, their mlx5 thermal zones and the
// ifindex of the interfaces they back (collect's hwmon_sysfs.txt).
const KindHwmonSysfs = "hwmon sysfs attributes"

// hwmonSysfsLine is one line of such a file, with or without /sys/:
// "bus/pci/devices/0000:08:00.1/hwmon/hwmon3/temp1_input:59500",
// "bus/pci/devices/0000:08:00.1/net/enp8s0f1np1/ifindex:4" or
// "class/thermal/thermal_zone2/type:mlx5_0000:a2:00.0". The groups are
// the path under /sys, the function's address, the interface and the
// value.
var hwmonSysfsLine = regexp.MustCompile(`^(?:/sys/)?((?:bus/pci/devices/([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])/(?:hwmon/hwmon[0-9]+/[a-z0-9_]+|net/([A-Za-z0-9._@:-]+)/ifindex))|class/thermal/thermal_zone[0-9]+/[a-z0-9_]+):(.*)$`)

// hwmonTempAttr names the attributes whose value is a temperature in
// millidegrees Celsius.
var hwmonTempAttr = regexp.MustCompile(`^(?:temp[0-9]+_(?:input|crit|emergency|highest)|temp|trip_point_[0-9]+_temp)$`)

// HwmonAttr is one attribute of a hwmon sysfs file: its value and line.
type HwmonAttr struct {
	Value string
	Line  Line
}

// HwmonSysfs is what a hwmon sysfs file holds.
type HwmonSysfs struct {
	// Attrs are the attributes by their path under /sys; an attribute
	// printed on several lines has them joined with newlines, and the
	// line of the first.
	Attrs map[string]HwmonAttr
	// Functions are the PCI functions the file has hwmon devices or
	// interfaces of, or an mlx5 thermal zone for, by address, sorted;
	// Interfaces lists the interfaces of each, sorted.
	Functions []HwmonFunction
	// Rejected says which lines were left out: temperatures that are not
	// integral millidegrees Celsius.
	Rejected []string
}

// HwmonFunction is a PCI function of a hwmon sysfs file.
type HwmonFunction struct {
	Address    string
	Interfaces []string
}

// ParseHwmonSysfs parses `grep -H .` output of the temperature attributes
// of PCI functions (collect's hwmon_sysfs.txt). Lines of other files are
// skipped; a temperature that is not an integer number of millidegrees is
// left out and noted in Rejected, so the reading of the others goes on.
// The format is grep's, which no library reads; the attributes are read
// afterwards by the netdev collector's own reading (netdev.AddHwmonFS).
func ParseHwmonSysfs(text string) (*HwmonSysfs, error) {
	h := &HwmonSysfs{Attrs: map[string]HwmonAttr{}}
	ifaces := map[string]map[string]bool{}
	fn := func(addr string) map[string]bool {
		if ifaces[addr] == nil {
			ifaces[addr] = map[string]bool{}
		}
		return ifaces[addr]
	}
	for i, l := range strings.Split(text, "\n") {
		m := hwmonSysfsLine.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			continue
		}
		p, addr, iface, val := m[1], strings.ToLower(m[2]), m[3], strings.TrimSpace(m[4])
		if addr != "" {
			p = path.Join("bus/pci/devices", addr, strings.SplitN(p, "/", 5)[4])
		}
		if hwmonTempAttr.MatchString(path.Base(p)) {
			if _, err := sysfs.ParseInt(val); err != nil {
				h.Rejected = append(h.Rejected, fmt.Sprintf("line %d: %s %q is not millidegrees Celsius", i+1, path.Base(p), val))
				continue
			}
		}
		if a, ok := h.Attrs[p]; ok {
			a.Value += "\n" + val
			h.Attrs[p] = a
		} else {
			h.Attrs[p] = HwmonAttr{Value: val, Line: Line(i + 1)}
		}
		switch {
		case iface != "":
			fn(addr)[iface] = true
		case addr != "":
			fn(addr)
		case path.Base(p) == "type" && strings.HasPrefix(val, "mlx5_"):
			if a := strings.TrimPrefix(val, "mlx5_"); pciAddress.MatchString(a) {
				fn(a)
			}
		}
	}
	if len(h.Attrs) == 0 {
		return nil, fmt.Errorf("no hwmon or thermal zone attributes")
	}
	for addr, set := range ifaces {
		f := HwmonFunction{Address: addr}
		for n := range set {
			f.Interfaces = append(f.Interfaces, n)
		}
		sort.Strings(f.Interfaces)
		h.Functions = append(h.Functions, f)
	}
	sort.Slice(h.Functions, func(i, j int) bool { return h.Functions[i].Address < h.Functions[j].Address })
	return h, nil
}

// pciAddress is a PCI function's full address.
var pciAddress = regexp.MustCompile(`^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)

// hwmonInput is a parsed hwmon sysfs file of the sample.
type hwmonInput struct {
	file string
	h    *HwmonSysfs
}

// hwmonFS is the sysfs tree the netdev collector's temperature reading
// reads over a sample's hwmon sysfs files: their attributes, nothing else.
func hwmonFS(in []hwmonInput) fs.FS {
	m := fstest.MapFS{}
	for _, f := range in {
		for p, a := range f.h.Attrs {
			m[p] = &fstest.MapFile{Data: []byte(a.Value + "\n"), Mode: 0o444}
		}
	}
	return m
}

// hwmonSnapshot returns the temperature series of the sample's hwmon
// sysfs files, read by the netdev collector's own reading
// (netdev.AddHwmonFS) for each interface of each function, as the daemon
// exports them; a function the files name no interface of gets its
// address as device, as the PCI sysfs series do. It returns nil without
// such files.
func hwmonSnapshot(r *Report, log *zap.Logger) *exposition.Snapshot {
	if len(r.hwmon) == 0 {
		return nil
	}
	fsys := hwmonFS(r.hwmon)
	b := exposition.NewBuilder()
	p := collector.NewPoll(b, collector.NewSourceErrors(log, 0))
	for _, d := range hwmonDevices(r.hwmon) {
		netdev.AddHwmonFS(p, fsys, path.Join("bus/pci/devices", d[1]), d[0])
	}
	return b.Snapshot()
}

// hwmonDevices returns the (device, PCI address) pairs of the functions of
// the files: each interface of a function, or the function's address for
// one without.
func hwmonDevices(in []hwmonInput) [][2]string {
	seen := map[[2]string]bool{}
	var out [][2]string
	for _, f := range in {
		for _, fn := range f.h.Functions {
			devs := fn.Interfaces
			if len(devs) == 0 {
				devs = []string{fn.Address}
			}
			for _, d := range devs {
				if k := [2]string{d, fn.Address}; !seen[k] {
					seen[k] = true
					out = append(out, k)
				}
			}
		}
	}
	return out
}

// hwmonEvidence records the file and line each temperature series was
// read from, by series key: the channel's attribute (temp<N>_input for
// the temperature, _crit, _highest, _emergency), or the thermal zone's
// temp and critical trip point.
func hwmonEvidence(in []hwmonInput, into map[string]string) {
	suffix := map[string]string{"nic_hwmon_temperature_celsius": "_input", "nic_hwmon_temperature_critical_celsius": "_crit",
		"nic_hwmon_temperature_highest_celsius": "_highest", "nic_hwmon_temperature_emergency_celsius": "_emergency"}
	for _, f := range in {
		at := func(p string) (string, bool) {
			a, ok := f.h.Attrs[p]
			return fmt.Sprintf("%s:%d", f.file, a.Line), ok
		}
		add := func(dev, addr, chip, sensor, metric, p string) {
			if ev, ok := at(p); ok {
				into[seriesKey(map[string]string{"__name__": metric, "device": dev, "pci_address": addr, "chip": chip, "sensor": sensor})] = ev
			}
		}
		for _, d := range hwmonDevices([]hwmonInput{f}) {
			dev, addr := d[0], d[1]
			prefix := path.Join("bus/pci/devices", addr, "hwmon") + "/"
			for p := range f.h.Attrs {
				rest, ok := strings.CutPrefix(p, prefix)
				if !ok || !strings.HasSuffix(rest, "_input") {
					continue
				}
				dir, ch := path.Split(rest)
				ch = strings.TrimSuffix(ch, "_input")
				chip := f.h.Attrs[prefix+dir+"name"].Value
				sensor := ch
				if l := f.h.Attrs[prefix+dir+ch+"_label"].Value; l != "" {
					sensor = l
				}
				for metric, sfx := range suffix {
					add(dev, addr, chip, sensor, metric, prefix+dir+ch+sfx)
				}
			}
			for p, a := range f.h.Attrs {
				zone, ok := strings.CutSuffix(p, "/type")
				if !ok || !strings.HasPrefix(p, "class/thermal/") || a.Value != "mlx5_"+addr {
					continue
				}
				add(dev, addr, "thermal_zone", "asic", "nic_hwmon_temperature_celsius", zone+"/temp")
				for i := 0; ; i++ {
					t, ok := f.h.Attrs[zone+"/trip_point_"+strconv.Itoa(i)+"_type"]
					if !ok {
						break
					}
					if t.Value == "critical" {
						add(dev, addr, "thermal_zone", "asic", "nic_hwmon_temperature_critical_celsius", zone+"/trip_point_"+strconv.Itoa(i)+"_temp")
						break
					}
				}
			}
		}
	}
}

// KindSensors is the text output of lm-sensors' `sensors`; diagnose
// reads its mlx5 chips.
const KindSensors = "sensors (lm-sensors)"

// sensorsChip is the heading of a chip in `sensors` output:
// "mlx5-pci-bc01", "coretemp-isa-0000", "mlx5_0000:a2:00.0-virtual-0".
var sensorsChip = regexp.MustCompile(`^(\S+)-([a-z0-9]+)-([0-9a-f]+)$`)

// sensorsMlx5Zone is the name of an mlx5 thermal zone (kernels 6.4 and
// 6.5), which libsensors shows as a virtual chip named after the zone's
// type: "mlx5_0000:a2:00.0-virtual-0".
var sensorsMlx5Zone = regexp.MustCompile(`^mlx5_([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])$`)

// sensorsTemp is a temperature line of a chip: "asic:  +62.0°C  (crit =
// +105.0°C, highest = +74.0°C)". The degree sign is "°" in a UTF-8
// locale, byte 0xb0 in Latin-1 and absent in others.
var sensorsTemp = regexp.MustCompile(`^([^:]+):\s+(\S+?)\s?(?:°|\x{fffd})?C(?:\s+(.*))?$`)

// sensorsLimit is one limit in the parentheses after a temperature; the
// ones the hwmon attributes the daemon reads have: crit (temp<N>_crit),
// emerg (temp<N>_emergency) and highest (temp<N>_highest).
var sensorsLimit = regexp.MustCompile(`\b(crit|emerg|highest)\s*=\s*([+-]?[0-9]+(?:\.[0-9]+)?)`)

// ParseSensors parses the text output of lm-sensors' `sensors` into the
// sysfs attributes it was printed from, for the chips of mlx5 functions:
// a chip mlx5-pci-ADDR is the hwmon device (named mlx5) of the PCI
// function ADDR gives (libsensors writes (domain << 16) + (bus << 8) +
// (device << 3) + function in hex), each of its temperatures a channel
// with its label (sensors prints the temp<N>_label, or temp<N> without
// one, as the daemon names the sensor) and its value, crit, emerg and
// highest in millidegrees; a chip mlx5_ADDR-virtual-N is the function's
// mlx5 thermal zone (its type and temp). Other chips (coretemp, nvme) are
// not NICs and are skipped. sensors prints a tenth of a degree, so the
// values are rounded as printed, and names no interface, so the series
// get the function's address as device. A temperature that does not parse
// (N/A for a failed read) is left out and noted in Rejected. Like grep's,
// the format has no library reader in Go.
func ParseSensors(text string) (*HwmonSysfs, error) {
	h := &HwmonSysfs{Attrs: map[string]HwmonAttr{}}
	seen := map[string]bool{}
	dir, zone, channel, chips := "", false, 0, 0
	set := func(p, v string, line int) { h.Attrs[p] = HwmonAttr{Value: v, Line: Line(line)} }
	function := func(addr string) {
		if !seen[addr] {
			seen[addr] = true
			h.Functions = append(h.Functions, HwmonFunction{Address: addr})
		}
	}
	limits := func(s, prefix string, line int) {
		for _, m := range sensorsLimit.FindAllStringSubmatch(s, -1) {
			if v, ok := millidegrees(m[2]); ok {
				set(prefix+map[string]string{"crit": "_crit", "emerg": "_emergency", "highest": "_highest"}[m[1]], v, line)
			}
		}
	}
	for i, raw := range strings.Split(text, "\n") {
		l := strings.TrimSpace(raw)
		if l == "" {
			dir = ""
			continue
		}
		if m := sensorsChip.FindStringSubmatch(l); m != nil {
			dir, channel = "", 0
			if a := sensorsMlx5Zone.FindStringSubmatch(m[1]); a != nil && m[2] == "virtual" {
				dir, zone = path.Join("class/thermal", "thermal_zone"+strconv.Itoa(chips)), true
				set(dir+"/type", m[1], i+1)
				function(a[1])
			} else if v, err := strconv.ParseUint(m[3], 16, 32); err == nil && m[1] == "mlx5" && m[2] == "pci" {
				addr := fmt.Sprintf("%04x:%02x:%02x.%x", v>>16, (v>>8)&0xff, (v>>3)&0x1f, v&7)
				dir, zone = path.Join("bus/pci/devices", addr, "hwmon", "hwmon"+strconv.Itoa(chips)), false
				set(dir+"/name", m[1], i+1)
				function(addr)
			}
			if dir != "" {
				chips++
			}
			continue
		}
		switch {
		case dir == "" || strings.HasPrefix(l, "Adapter:"):
		case strings.HasPrefix(l, "(") && channel > 0 && !zone:
			limits(l, fmt.Sprintf("%s/temp%d", dir, channel), i+1)
		default:
			m := sensorsTemp.FindStringSubmatch(l)
			v, ok := "", false
			if m != nil {
				v, ok = millidegrees(m[2])
			}
			if !ok {
				if label, val, found := strings.Cut(l, ":"); found {
					h.Rejected = append(h.Rejected, fmt.Sprintf("line %d: %s %q is not a temperature", i+1, label, strings.TrimSpace(val)))
				}
				continue
			}
			channel++
			if zone {
				if channel == 1 { // a zone has one temperature
					set(dir+"/temp", v, i+1)
				}
				continue
			}
			prefix := fmt.Sprintf("%s/temp%d", dir, channel)
			set(prefix+"_input", v, i+1)
			set(prefix+"_label", m[1], i+1)
			limits(m[3], prefix, i+1)
		}
	}
	if chips == 0 {
		return nil, fmt.Errorf("no mlx5 chips")
	}
	sort.Slice(h.Functions, func(i, j int) bool { return h.Functions[i].Address < h.Functions[j].Address })
	return h, nil
}

// millidegrees converts a temperature sensors printed ("+62.0") to the
// millidegrees of the hwmon attribute.
func millidegrees(s string) (string, bool) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > 1e6 {
		return "", false
	}
	return strconv.FormatInt(int64(math.Round(v*1000)), 10), true
}

// isSensorsMlx5Chip reports whether a line is the heading of an mlx5
// chip of `sensors` output.
func isSensorsMlx5Chip(l string) bool {
	m := sensorsChip.FindStringSubmatch(l)
	return m != nil && (m[1] == "mlx5" && m[2] == "pci" || m[2] == "virtual" && sensorsMlx5Zone.MatchString(m[1]))
}
