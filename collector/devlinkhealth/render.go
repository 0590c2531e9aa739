package devlinkhealth

import (
	"sort"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/devlink"
)

var (
	devlinkReporterLabels = []string{"device", "port", "netdev", "reporter"}

	devlinkHealthy = exposition.MustNewDesc("nic_devlink_health_reporter_healthy",
		"1 if the devlink health reporter is healthy, 0 if it is in error. mlx5: fw in error is a firmware issue; fw_fatal in error is critical (cold reboot, contact support); vnic in error is a VF issue.",
		exposition.Gauge, devlinkReporterLabels...)
	devlinkErrors = exposition.MustNewDesc("nic_devlink_health_reporter_errors_total",
		"Errors the driver reported to the devlink health reporter since it was created.",
		exposition.Counter, devlinkReporterLabels...)
	devlinkRecoveries = exposition.MustNewDesc("nic_devlink_health_reporter_recoveries_total",
		"Successful recoveries of the devlink health reporter since it was created.",
		exposition.Counter, devlinkReporterLabels...)
	devlinkAutoRecover = exposition.MustNewDesc("nic_devlink_health_reporter_auto_recover",
		"1 if the reporter recovers automatically after an error, else 0. Absent for reporters without a recover operation.",
		exposition.Gauge, devlinkReporterLabels...)
	devlinkGrace = exposition.MustNewDesc("nic_devlink_health_reporter_graceful_period_seconds",
		"Minimum time between two automatic recoveries of the reporter; an error within it stays unrecovered.",
		exposition.Gauge, devlinkReporterLabels...)
	devlinkLastDump = exposition.MustNewDesc("nic_devlink_health_reporter_last_dump_timestamp_seconds",
		"Wall-clock time of the reporter's stored dump. Absent when no dump is stored.",
		exposition.Gauge, devlinkReporterLabels...)
	devlinkEvents = exposition.MustNewDesc("nic_devlink_health_events_total",
		"Health reporter state notifications received from devlink's multicast group since the exporter started, by the state they announce (error or healthy).",
		exposition.Counter, "device", "port", "netdev", "reporter", "state")
	devlinkCaptures = exposition.MustNewDesc("nic_devlink_health_captures_total",
		"Evidence files (reporter attributes, diagnose and dump output) written to --collector.devlink.capture-dir since the exporter started.",
		exposition.Counter, devlinkReporterLabels...)
	devlinkInfo = exposition.MustNewDesc("nic_devlink_info",
		"Devlink device information, value 1: driver, serial number, board id (board.id or fw.psid) and running and stored firmware versions (fw.version or fw).",
		exposition.Gauge, "device", "driver", "serial_number", "board_id", "firmware_running", "firmware_stored")
)

// render writes the current state: the devices' information, then the
// reporters in key order.
func (d *Collector) render(p *collector.Poll) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := &d.state
	p.SetDevices(len(s.devices))
	for _, h := range s.devices {
		if info, ok := s.infos[h]; ok {
			renderInfo(p, h, info)
		}
	}
	keys := make([]reporterKey, 0, len(s.reporters))
	for k := range s.reporters {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].less(keys[j]) })
	for _, k := range keys {
		d.renderReporter(p, k)
	}
}

// renderInfo writes the information series of device h: serial number
// (the board's when the device has none), board id (fw.psid when there
// is no board.id) and firmware versions.
func renderInfo(p *collector.Poll, h devlink.Handle, info devlink.Info) {
	serial := info.SerialNumber
	if serial == "" {
		serial = info.BoardSerialNumber
	}
	board := devlink.Lookup(info.Fixed, "board.id")
	if board == "" {
		board = devlink.Lookup(info.Fixed, "fw.psid")
	}
	p.Add(devlinkInfo, 1, h.String(), info.Driver, serial, board, firmware(info.Running), firmware(info.Stored))
}

// renderReporter writes the series of reporter k: the attributes the
// kernel reported, the health events counted by state, and the captures
// when capture is on. The caller holds d.mu.
func (d *Collector) renderReporter(p *collector.Poll, k reporterKey) {
	s := &d.state
	r := s.reporters[k].r
	labels := []string{k.h.String(), k.port, s.netdev(r.ReporterID), k.name}
	if r.State != nil {
		p.Add(devlinkHealthy, collector.Bool(*r.State == devlink.HealthStateHealthy), labels...)
	}
	if r.ErrorCount != nil {
		p.Add(devlinkErrors, float64(*r.ErrorCount), labels...)
	}
	if r.RecoverCount != nil {
		p.Add(devlinkRecoveries, float64(*r.RecoverCount), labels...)
	}
	if r.AutoRecover != nil {
		p.Add(devlinkAutoRecover, collector.Bool(*r.AutoRecover), labels...)
	}
	if r.GracefulPeriod != nil {
		p.Add(devlinkGrace, r.GracefulPeriod.Seconds(), labels...)
	}
	if r.LastDump != nil {
		p.Add(devlinkLastDump, float64(r.LastDump.UnixNano())/1e9, labels...)
	}
	for _, state := range []string{"error", "healthy"} {
		if n, ok := s.events[eventKey{k, state}]; ok {
			p.Add(devlinkEvents, float64(n), append(labels, state)...)
		}
	}
	if d.capture != nil {
		p.Add(devlinkCaptures, float64(s.captures[k]), labels...)
	}
}

// firmware returns the firmware version among vs: fw.version, else fw.
func firmware(vs []devlink.Version) string {
	if v := devlink.Lookup(vs, "fw.version"); v != "" {
		return v
	}
	return devlink.Lookup(vs, "fw")
}
