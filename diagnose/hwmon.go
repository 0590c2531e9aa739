package diagnose

import (
	"fmt"
	"io/fs"
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
