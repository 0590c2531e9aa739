package diagnose

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nic-exporter/nic_exporter/collector/exposition"
)

// The families diagnose exports itself from tool outputs the daemon's
// collectors do not read (devlink health show, ethtool link settings,
// lspci, ibstat, and collect's PCI and netdev sysfs files and module
// dumps), under the names, types and labels the daemon's
// collectors give them (docs/metrics.md; TestBundleFamiliesDocumented).
// The ethtool -S and kernel log series come from the collectors
// themselves (collect).
var (
	bundleReporterLabels = []string{"device", "port", "netdev", "reporter"}

	descReporterHealthy = exposition.MustNewDesc("nic_devlink_health_reporter_healthy",
		"1 if the devlink health reporter is healthy, 0 if it is in error (devlink health show).",
		exposition.Gauge, bundleReporterLabels...)
	descReporterErrors = exposition.MustNewDesc("nic_devlink_health_reporter_errors_total",
		"Errors the driver reported to the devlink health reporter since it was created (devlink health show).",
		exposition.Counter, bundleReporterLabels...)
	descReporterRecoveries = exposition.MustNewDesc("nic_devlink_health_reporter_recoveries_total",
		"Successful recoveries of the devlink health reporter since it was created (devlink health show).",
		exposition.Counter, bundleReporterLabels...)
	descReporterAutoRecover = exposition.MustNewDesc("nic_devlink_health_reporter_auto_recover",
		"1 if the reporter recovers automatically after an error, else 0 (devlink health show).",
		exposition.Gauge, bundleReporterLabels...)
	descAdminUp = exposition.MustNewDesc("nic_netdev_admin_up",
		"1 if the interface is administratively up. From ethtool DEV, which does not say: an interface ethtool reported on is taken to be up.",
		exposition.Gauge, "device")
	descCarrier = exposition.MustNewDesc("nic_netdev_carrier",
		"1 if the interface has a carrier (ethtool DEV: Link detected), else 0.",
		exposition.Gauge, "device")
	descCarrierChanges = exposition.MustNewDesc("nic_netdev_carrier_changes_total",
		"Carrier changes (link flaps) since the interface was created (netdev sysfs carrier_changes).",
		exposition.Counter, "device")
	descPCIeDegraded = exposition.MustNewDesc("nic_pcie_link_degraded",
		"1 if the PCIe link trained below the device's capability (lspci -vvv: LnkSta below LnkCap; sysfs: current_link_speed or _width below max_), else 0.",
		exposition.Gauge, "device", "pci_address")
	descPCIeAER = exposition.MustNewDesc("nic_pcie_aer_errors_total",
		"PCIe errors of the function by severity: sysfs aer_dev_* TOTAL_ERR_* counts, or from lspci -vvv DevSta, whose error bits say only that one was detected since they were cleared, so at least 1.",
		exposition.Counter, "device", "pci_address", "severity")
	descIBState = exposition.MustNewDesc("nic_infiniband_port_state",
		"Logical port state (ibstat State): 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE, 5 ACTIVE_DEFER.",
		exposition.Gauge, "device", "port")
	descIBPhysState = exposition.MustNewDesc("nic_infiniband_port_phys_state",
		"Physical port state (ibstat Physical state): 1 Sleep, 2 Polling, 3 Disabled, 4 PortConfigurationTraining, 5 LinkUp, 6 LinkErrorRecovery, 7 PhyTest.",
		exposition.Gauge, "device", "port")
	descIBInfo = exposition.MustNewDesc("nic_infiniband_port_info",
		"Port facts, value 1: link layer (ibstat Link layer).",
		exposition.Gauge, "device", "port", "link_layer")
)

// bundleSample is one sample diagnose exports itself, with the file and
// line it was read from.
type bundleSample struct {
	desc     *exposition.Desc
	value    float64
	labels   []string
	evidence string
}

// bundleSeries are the samples diagnose exports itself, one per series:
// a later file's sample replaces an earlier one's.
type bundleSeries struct {
	samples []bundleSample
	index   map[string]int
}

func (b *bundleSeries) add(d *exposition.Desc, value float64, evidence string, labels ...string) {
	if b.index == nil {
		b.index = map[string]int{}
	}
	k := d.Name() + "\x00" + strings.Join(labels, "\x00")
	s := bundleSample{desc: d, value: value, labels: labels, evidence: evidence}
	if i, ok := b.index[k]; ok {
		b.samples[i] = s
		return
	}
	b.index[k] = len(b.samples)
	b.samples = append(b.samples, s)
}

// snapshot renders the samples, or returns nil when there are none.
func (b *bundleSeries) snapshot() *exposition.Snapshot {
	if len(b.samples) == 0 {
		return nil
	}
	bl := exposition.NewBuilder()
	for _, s := range b.samples {
		bl.Add(s.desc, s.value, s.labels...)
	}
	return bl.Snapshot()
}

// evidence records where each sample was read, by series key.
func (b *bundleSeries) evidence(into map[string]string) {
	for _, s := range b.samples {
		lbls := map[string]string{"__name__": s.desc.Name()}
		for i, n := range s.desc.Labels() {
			lbls[n] = s.labels[i]
		}
		into[seriesKey(lbls)] = s.evidence
	}
}

// seriesKey names a series by its metric name and labels, without the
// job and instance labels diagnose adds to every series.
func seriesKey(lbls map[string]string) string {
	names := make([]string, 0, len(lbls))
	for k := range lbls {
		if k != "__name__" && k != "job" && k != "instance" {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString(lbls["__name__"])
	b.WriteByte('{')
	for i, k := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%q", k, lbls[k])
	}
	b.WriteByte('}')
	return b.String()
}

// reporterHandle splits a devlink handle into the device and port labels
// the devlink collector gives a reporter: pci/0000:08:00.0/32768 is
// device pci/0000:08:00.0, port 32768.
func reporterHandle(h string) (device, port string) {
	parts := strings.Split(h, "/")
	if len(parts) == 3 {
		return parts[0] + "/" + parts[1], parts[2]
	}
	return h, ""
}

// addReporters adds the series of devlink health reporters.
func (b *bundleSeries) addReporters(file string, reps []Reporter) {
	for _, rep := range reps {
		ev := file
		if rep.Line > 0 {
			ev = fmt.Sprintf("%s:%d", file, rep.Line)
		}
		dev, port := reporterHandle(rep.Device)
		lbls := []string{dev, port, "", rep.Name}
		if rep.State != "" {
			b.add(descReporterHealthy, boolValue(rep.State == "healthy"), ev, lbls...)
		}
		b.add(descReporterErrors, float64(rep.Errors), ev, lbls...)
		b.add(descReporterRecoveries, float64(rep.Recover), ev, lbls...)
		if rep.AutoRecover != nil {
			b.add(descReporterAutoRecover, boolValue(*rep.AutoRecover), ev, lbls...)
		}
	}
}

// addLink adds the carrier of an `ethtool DEV` output that says whether
// a link was detected.
func (b *bundleSeries) addLink(file string, ls *LinkSettings) {
	if !ls.HasDetected || ls.Interface == "" {
		return
	}
	ev := fmt.Sprintf("%s:%d", file, ls.DetectedLine)
	b.add(descAdminUp, 1, ev, ls.Interface)
	b.add(descCarrier, boolValue(ls.Detected), ev, ls.Interface)
}

// addPCI adds the PCIe link and error state of the network functions of
// an lspci -vvv output.
func (b *bundleSeries) addPCI(file string, fns []PCIFunction) {
	for _, f := range fns {
		if !f.NetworkClass() {
			continue
		}
		addr := f.Address
		if addr == "" {
			addr = "(PCI function not named in the excerpt)"
		} else if strings.Count(addr, ":") == 1 {
			addr = "0000:" + addr
		}
		if f.LnkStaLine > 0 && f.CapWidth > 0 && f.StaWidth > 0 {
			b.add(descPCIeDegraded, boolValue(f.LinkDegraded()), fmt.Sprintf("%s:%d", file, f.LnkStaLine), addr, addr)
		}
		for _, bit := range f.DevStaErrors {
			sev := ""
			switch bit {
			case "FatalErr":
				sev = "fatal"
			case "NonFatalErr", "UncorrErr":
				sev = "nonfatal"
			case "CorrErr":
				sev = "correctable"
			}
			if sev != "" {
				b.add(descPCIeAER, 1, fmt.Sprintf("%s:%d", file, f.DevStaLine), addr, addr, sev)
			}
		}
	}
}

// ibPortStates and ibPhysStates number ibstat's state names as the
// infiniband collector does (sysfs state and phys_state).
var (
	ibPortStates = map[string]float64{"Down": 1, "Initializing": 2, "Init": 2, "Armed": 3, "Active": 4, "ActDefer": 5}
	ibPhysStates = map[string]float64{"Sleep": 1, "Polling": 2, "Disabled": 3, "PortConfigurationTraining": 4,
		"LinkUp": 5, "LinkErrorRecovery": 6, "PhyTest": 7}
)

// addIB adds the states of the ports of an ibstat output.
func (b *bundleSeries) addIB(file string, ports []IBPort) {
	for _, p := range ports {
		ev := fmt.Sprintf("%s:%d", file, p.Line)
		port := strconv.Itoa(p.Port)
		if p.LinkLayer != "" {
			b.add(descIBInfo, 1, ev, p.CA, port, p.LinkLayer)
		}
		if v, ok := ibPortStates[p.State]; ok {
			b.add(descIBState, v, ev, p.CA, port)
		}
		if v, ok := ibPhysStates[p.PhysicalState]; ok {
			b.add(descIBPhysState, v, ev, p.CA, port)
		}
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// uptimeFile is the content of /proc/uptime: seconds since boot and idle
// seconds.
var uptimeFile = regexp.MustCompile(`^\s*([0-9]+(?:\.[0-9]+)?) [0-9]+(?:\.[0-9]+)?\s*$`)

// kernelTimestamp is the time since boot in a kernel log line's prefix:
// "[ 1234.567890]".
var kernelTimestamp = regexp.MustCompile(`\[\s*([0-9]+\.[0-9]+)\]`)

// DefaultUptime is the time since boot diagnose assumes when the bundle
// has no /proc/uptime and no kernel log timestamp later than it (a log
// excerpt such as dmesg | grep mlx5 often ends at boot, so its latest
// timestamp is only a lower bound).
const DefaultUptime = 24 * time.Hour

// Uptime says how long the host had been up when the bundle was taken,
// and how diagnose knows.
type Uptime struct {
	Seconds float64 `json:"seconds"`
	// Source is the file and line it was read from, or "default".
	Source string `json:"source"`
}

// noteUptime records /proc/uptime, or the latest kernel log timestamp
// when no /proc/uptime has been read.
func (r *Report) noteUptime(file string, data []byte) {
	if m := uptimeFile.FindSubmatch(data); m != nil {
		if s, err := strconv.ParseFloat(string(m[1]), 64); err == nil && s > 0 {
			r.Uptime = Uptime{Seconds: s, Source: file + ":1"}
			r.uptimeFromProc = true
		}
		return
	}
	if r.uptimeFromProc {
		return
	}
	for i, l := range lines(data) {
		m := kernelTimestamp.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		if s, err := strconv.ParseFloat(m[1], 64); err == nil && s > r.Uptime.Seconds {
			r.Uptime = Uptime{Seconds: s, Source: fmt.Sprintf("%s:%d (latest kernel log timestamp)", file, i+1)}
		}
	}
}
