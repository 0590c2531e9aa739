package netdev

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/internal/errclass"
	"github.com/nic-exporter/nic_exporter/internal/sysfs"
)

// The temperatures of a NIC's hwmon device: mlx5 registers one per PCI
// function from kernel 6.6 (drivers/net/ethernet/mellanox/mlx5/core/hwmon.c,
// name "mlx5"), with a channel per ASIC sensor of the card's MTCAP sensor
// map and one for the module when it reports a temperature; each has
// temp<N>_input, temp<N>_highest (the maximum since the driver enabled
// tracking, or since a reset of the history), temp<N>_crit (the sensor's
// high threshold, MTMP temp_threshold_hi) and temp<N>_label (the sensor's
// name from the firmware, or "sensor<index>"). Other drivers' hwmon devices
// under a NIC function (sfc, ice, bnxt_en, ...) are read the same way, with
// temp<N>_emergency where they have it.
var (
	hwmonTemp = exposition.MustNewDesc("nic_hwmon_temperature_celsius",
		"Temperature of one sensor of the hwmon device of the PCI function behind the interface (temp<N>_input under /sys/bus/pci/devices/<pci_address>/hwmon/hwmon*/, in degrees Celsius). chip is the hwmon name (mlx5), sensor its temp<N>_label (mlx5: the firmware's sensor name, such as asic, or sensor<index>; the module's sensor when the module reports one), or temp<N> without a label. A function without a hwmon device falls back to its mlx5 thermal zone (kernels 6.4 and 6.5: the zone of type mlx5_<pci_address> under /sys/class/thermal), as chip thermal_zone, sensor asic. On mlx5 each read is a firmware command (MTMP).",
		exposition.Gauge, "device", "pci_address", "chip", "sensor")
	hwmonCrit = exposition.MustNewDesc("nic_hwmon_temperature_critical_celsius",
		"Critical threshold of the sensor (temp<N>_crit; mlx5: the sensor's high threshold as the firmware reports it, MTMP temp_threshold_hi), in degrees Celsius. The ConnectX-5 adapter manual puts a warning at 105 °C and the firmware's shutdown at 120 °C. Read once per interface identity.",
		exposition.Gauge, "device", "pci_address", "chip", "sensor")
	hwmonEmergency = exposition.MustNewDesc("nic_hwmon_temperature_emergency_celsius",
		"Emergency threshold of the sensor (temp<N>_emergency), in degrees Celsius, where the driver has one (mlx5 has none). Read once per interface identity.",
		exposition.Gauge, "device", "pci_address", "chip", "sensor")
	hwmonHighest = exposition.MustNewDesc("nic_hwmon_temperature_highest_celsius",
		"Highest temperature the sensor recorded since its history was last reset (temp<N>_highest; mlx5 enables the tracking at probe), in degrees Celsius: a peak between two polls shows here.",
		exposition.Gauge, "device", "pci_address", "chip", "sensor")
)

// maxHwmonChannels bounds the temperature channels read per PCI function:
// mlx5 has its ASIC sensors and one module sensor, a few in all; a tree
// under --path.sysfs with thousands costs no more than this.
const maxHwmonChannels = 64

// hwmonFile matches the input attribute of a temperature channel.
var hwmonFile = regexp.MustCompile(`^temp([0-9]+)_input$`)

// hwmonChannel is one temperature channel of a hwmon device or thermal
// zone: what is read once per interface identity (chip, sensor,
// thresholds) and the paths of its input and highest attributes (highest
// empty where the source has none).
type hwmonChannel struct {
	input, highest  string
	chip, sensor    string
	crit, emergency sysfs.Optional
}

// hwmonReading is one poll's reading of a channel.
type hwmonReading struct {
	ch             *hwmonChannel
	input, highest sysfs.Optional
}

// hwmonCache holds, per interface identity, the temperature channels of
// its PCI function, found and described at the first poll of that
// identity: the labels and thresholds do not change, and on mlx5 each
// attribute read is a firmware command. It is safe for concurrent use.
type hwmonCache struct {
	mu sync.Mutex
	m  map[string][]*hwmonChannel
}

func (c *hwmonCache) get(identity string) ([]*hwmonChannel, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	chs, ok := c.m[identity]
	return chs, ok
}

func (c *hwmonCache) put(identity string, chs []*hwmonChannel) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string][]*hwmonChannel)
	}
	c.m[identity] = chs
}

// retain forgets every identity not in keep.
func (c *hwmonCache) retain(keep map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id := range c.m {
		if !keep[id] {
			delete(c.m, id)
		}
	}
}

// parseMilliCelsius parses a hwmon temperature attribute (a decimal
// integer in millidegrees Celsius, hwmon sysfs-interface) into degrees.
func parseMilliCelsius(s string) (float64, error) {
	v, err := sysfs.ParseInt(s)
	if err != nil {
		return 0, fmt.Errorf("hwmon temperature: %w", err)
	}
	return float64(v) / 1000, nil
}

// hwmonFiles is where the temperature channels are read from: the
// collector's sysfs by path (through its readAttr, which tests replace),
// or an fs.FS rooted at the sysfs mount point (AddHwmonFS). Paths are
// joined with filepath.Join, which on Linux is path.Join.
type hwmonFiles struct {
	readDir  func(name string) ([]fs.DirEntry, error)
	readAttr func(name string) (string, error)
	// thermal is the directory of the thermal zones (class/thermal).
	thermal string
}

// files returns the collector's hwmonFiles: its sysfs by path.
func (n *Collector) files() hwmonFiles {
	return hwmonFiles{readDir: os.ReadDir, readAttr: n.readAttr, thermal: filepath.Join(n.cfg.SysfsPath, "class", "thermal")}
}

// fsFiles returns the hwmonFiles of fsys, whose root is the sysfs mount
// point.
func fsFiles(fsys fs.FS) hwmonFiles {
	buf := make([]byte, 4096)
	return hwmonFiles{
		readDir:  func(name string) ([]fs.DirEntry, error) { return fs.ReadDir(fsys, name) },
		readAttr: func(name string) (string, error) { return sysfs.ReadFSAttr(fsys, name, buf) },
		thermal:  "class/thermal",
	}
}

// AddHwmonFS adds to p the temperature series the collector exports for
// the interface device whose PCI function is the directory dir of fsys,
// a sysfs tree rooted at the sysfs mount point: the channels of the
// function's hwmon devices under dir/hwmon or, for a function without
// one, of its mlx5 thermal zone under class/thermal, with pci_address the
// base name of dir. The files are read as at an interface's first poll
// (every attribute once); failures are p's source errors, as in a poll.
// It is the collector's own reading, for a copy of those files: diagnose
// runs it over the files of a support bundle, and collect over the host's
// sysfs to learn which files to copy.
func AddHwmonFS(p *collector.Poll, fsys fs.FS, dir, device string) {
	h := fsFiles(fsys)
	chs := h.channels(dir, p)
	readings := make([]hwmonReading, 0, len(chs))
	for _, ch := range chs {
		readings = append(readings, h.read(ch, p))
	}
	emitHwmon(p, device, path.Base(dir), readings)
}

// channels finds the temperature channels of the hwmon devices of the
// PCI function in dir (its hwmon/hwmon*/ directories) and reads their
// names, labels and thresholds. A function without a hwmon device falls
// back to its mlx5 thermal zone (thermalZoneChannel); one with neither
// has none: nothing is reported.
func (h hwmonFiles) channels(dir string, p *collector.Poll) []*hwmonChannel {
	devs, err := h.readDir(filepath.Join(dir, "hwmon"))
	if err != nil {
		if !errclass.IsNotExist(err) {
			p.SourceError(filepath.Join(dir, "hwmon"), err)
			return nil
		}
		if ch := h.thermalZoneChannel(filepath.Base(dir), p); ch != nil {
			return []*hwmonChannel{ch}
		}
		return nil
	}
	var out []*hwmonChannel
	for _, d := range devs {
		hdir := filepath.Join(dir, "hwmon", d.Name())
		files, err := h.readDir(hdir)
		if err != nil {
			if !errclass.IsNotExist(err) {
				p.SourceError(hdir, err)
			}
			continue
		}
		chip, err := h.readAttr(filepath.Join(hdir, "name"))
		if err != nil {
			p.SourceError(filepath.Join(hdir, "name"), err)
			continue
		}
		var nums []int
		for _, f := range files {
			if m := hwmonFile.FindStringSubmatch(f.Name()); m != nil {
				if v, err := strconv.Atoi(m[1]); err == nil {
					nums = append(nums, v)
				}
			}
		}
		sort.Ints(nums)
		for _, num := range nums {
			if len(out) == maxHwmonChannels {
				p.SourceError(hdir, fmt.Errorf("%w: more than %d temperature channels under %s; the rest are not read", errclass.ErrParse, maxHwmonChannels, filepath.Join(dir, "hwmon")))
				return out
			}
			prefix := "temp" + strconv.Itoa(num)
			ch := &hwmonChannel{input: filepath.Join(hdir, prefix+"_input"), highest: filepath.Join(hdir, prefix+"_highest"),
				chip: chip, sensor: prefix}
			if s, err := h.readAttr(filepath.Join(hdir, prefix+"_label")); err == nil && s != "" {
				ch.sensor = s
			}
			ch.crit = h.readTemp(filepath.Join(hdir, prefix+"_crit"), p)
			ch.emergency = h.readTemp(filepath.Join(hdir, prefix+"_emergency"), p)
			out = append(out, ch)
		}
	}
	return out
}

// readTemp reads one temperature attribute. An absent attribute is no
// error; one that does not read or parse is reported and left out.
func (h hwmonFiles) readTemp(path string, p *collector.Poll) sysfs.Optional {
	s, err := h.readAttr(path)
	if err != nil {
		if !errclass.IsNotExist(err) {
			p.SourceError(path, err)
		}
		return sysfs.Optional{}
	}
	v, err := parseMilliCelsius(s)
	if err != nil {
		p.SourceError(path, err)
		return sysfs.Optional{}
	}
	return sysfs.Optional{V: v, OK: true}
}

// read reads the input and highest attributes of a channel.
func (h hwmonFiles) read(ch *hwmonChannel, p *collector.Poll) hwmonReading {
	r := hwmonReading{ch: ch, input: h.readTemp(ch.input, p)}
	if ch.highest != "" {
		r.highest = h.readTemp(ch.highest, p)
	}
	return r
}

// readHwmon reads the temperatures of the PCI function in dir for the
// interface identity: the channels found at the identity's first poll,
// their input and highest attributes at every poll.
func (n *Collector) readHwmon(dir, identity string, p *collector.Poll) []hwmonReading {
	h := n.files()
	chs, ok := n.hwmon.get(identity)
	if !ok {
		chs = h.channels(dir, p)
		n.hwmon.put(identity, chs)
	}
	out := make([]hwmonReading, 0, len(chs))
	for _, ch := range chs {
		out = append(out, h.read(ch, p))
	}
	return out
}

// emitHwmon adds the temperature series of one PCI function.
func emitHwmon(p *collector.Poll, device, pciAddr string, readings []hwmonReading) {
	for _, r := range readings {
		labels := []string{device, pciAddr, r.ch.chip, r.ch.sensor}
		sysfs.AddOpt(p, hwmonTemp, r.input, labels...)
		sysfs.AddOpt(p, hwmonHighest, r.highest, labels...)
		sysfs.AddOpt(p, hwmonCrit, r.ch.crit, labels...)
		sysfs.AddOpt(p, hwmonEmergency, r.ch.emergency, labels...)
	}
}

// mlx5 before its hwmon device (kernels 6.4 and 6.5, upstream commit
// c1fef618d611 "net/mlx5: Implement thermal zone" and the fix that named
// the zones per device) registers one thermal zone per physical function,
// /sys/class/thermal/thermal_zone<N>, whose type is "mlx5_" and the
// function's PCI address (THERMAL_NAME_LENGTH, 20 bytes, holds it) and
// whose temp is the ASIC's sensor (MTMP sensor index 0) in millidegrees
// Celsius. It registers no trip points; a zone that has a "critical" trip
// point gives its temperature as the critical threshold. Earlier driver
// versions (and MLNX_OFED's) registered a single zone "mlx5" for the
// first device only, which names no function and is not read.
const (
	thermalZonePrefix = "mlx5_"
	thermalZoneChip   = "thermal_zone"
	thermalZoneSensor = "asic"
	// maxThermalZones bounds the zones looked at per PCI function.
	maxThermalZones = 256
)

// thermalZoneChannel returns the channel of the mlx5 thermal zone of the
// PCI function pciAddr, or nil when there is none. It is called once per
// interface identity, and only for a function without a hwmon device.
func (h hwmonFiles) thermalZoneChannel(pciAddr string, p *collector.Poll) *hwmonChannel {
	root := h.thermal
	zones, err := h.readDir(root)
	if err != nil {
		if !errclass.IsNotExist(err) {
			p.SourceError(root, err)
		}
		return nil
	}
	want := thermalZonePrefix + pciAddr
	for i, z := range zones {
		if i == maxThermalZones {
			p.SourceError(root, fmt.Errorf("%w: more than %d thermal zones; the rest are not looked at", errclass.ErrParse, maxThermalZones))
			return nil
		}
		if !strings.HasPrefix(z.Name(), "thermal_zone") {
			continue
		}
		zdir := filepath.Join(root, z.Name())
		typ, err := h.readAttr(filepath.Join(zdir, "type"))
		if err != nil {
			if !errclass.IsNotExist(err) {
				p.SourceError(filepath.Join(zdir, "type"), err)
			}
			continue
		}
		if typ != want {
			continue
		}
		return &hwmonChannel{input: filepath.Join(zdir, "temp"), chip: thermalZoneChip, sensor: thermalZoneSensor,
			crit: h.criticalTrip(zdir, p)}
	}
	return nil
}

// criticalTrip returns the temperature of the zone's first trip point of
// type "critical", if it has one.
func (h hwmonFiles) criticalTrip(zdir string, p *collector.Poll) sysfs.Optional {
	for i := range maxThermalZones {
		prefix := filepath.Join(zdir, "trip_point_"+strconv.Itoa(i))
		typ, err := h.readAttr(prefix + "_type")
		if err != nil {
			if !errclass.IsNotExist(err) {
				p.SourceError(prefix+"_type", err)
			}
			return sysfs.Optional{}
		}
		if typ == "critical" {
			return h.readTemp(prefix+"_temp", p)
		}
	}
	return sysfs.Optional{}
}
