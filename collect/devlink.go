package collect

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/nic-exporter/nic_exporter/devlink"
)

// withDevlink opens devlink and calls fn with it, noting a client that
// cannot be opened (no devlink in the kernel, or no permission).
func (c *collector) withDevlink(fn func(dl Devlink)) {
	if c.src.Devlink == nil {
		return
	}
	dl, err := c.src.Devlink()
	if err != nil {
		c.b.unreadableErr("devlink (generic netlink)", err)
		return
	}
	defer dl.Close()
	fn(dl)
}

// devlinkSample writes devlink health show into dir and remembers the
// reporters for the diagnose output of the ones in error.
func (c *collector) devlinkSample(ctx context.Context, dir string) {
	c.withDevlink(func(dl Devlink) {
		reps, err := dl.HealthReporters(ctx)
		if err != nil {
			c.b.unreadableErr("devlink health show", err)
			return
		}
		c.b.add(name(dir, "devlink_health.txt"), "devlink health show (DEVLINK_CMD_HEALTH_REPORTER_GET)", []byte(renderHealth(reps)))
		c.lastReporters = reps
	})
}

// devlinkOnce writes devlink dev info and, for each reporter in error
// in the last sample, devlink health diagnose. It does not take dumps:
// `devlink health dump show` makes the driver take one when none is
// stored, and collect only reads.
func (c *collector) devlinkOnce(ctx context.Context) {
	c.withDevlink(func(dl Devlink) {
		devs, err := dl.Devices(ctx)
		if err != nil {
			c.b.unreadableErr("devlink dev info", err)
		} else {
			var b strings.Builder
			for _, d := range devs {
				info, err := dl.Info(ctx, d.Handle)
				if err != nil {
					c.b.unreadableErr("devlink dev info "+d.Handle.String(), err)
					continue
				}
				renderInfo(&b, info)
			}
			if b.Len() > 0 {
				c.b.add("devlink_dev_info.txt", "devlink dev info (DEVLINK_CMD_INFO_GET)", []byte(b.String()))
			}
		}
		for _, r := range c.lastReporters {
			if r.State == nil || *r.State == devlink.HealthStateHealthy {
				continue
			}
			cmd := "devlink -j health diagnose " + reporterDev(r.ReporterID) + " reporter " + r.Name
			obj, err := dl.Diagnose(ctx, r.ReporterID)
			if err != nil {
				c.b.unreadableErr(cmd, err)
				continue
			}
			// One line, as devlink -j prints it.
			data, err := json.Marshal(obj)
			if err != nil {
				c.b.unreadableErr(cmd, err)
				continue
			}
			file := "devlink_health_diagnose_" + fileSafe(reporterDev(r.ReporterID)) + "_" + fileSafe(r.Name) + ".json"
			c.b.add(file, cmd+" (DEVLINK_CMD_HEALTH_REPORTER_DIAGNOSE)", append(data, '\n'))
		}
	})
}

// reporterDev is the devlink handle of a reporter's device or port, as
// devlink(8) prints it: pci/0000:08:00.1 or pci/0000:08:00.1/65535.
func reporterDev(id devlink.ReporterID) string {
	s := id.Handle.String()
	if id.Port != nil {
		s += "/" + strconv.FormatUint(uint64(*id.Port), 10)
	}
	return s
}

// fileSafe replaces the characters of s that do not belong in a file
// name (the slashes and colons of a devlink handle among them) with _.
func fileSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}

// renderHealth prints health reporters as devlink health show does
// (iproute2 6.x): the device or port handle, then per reporter its name
// and one line of state, counts and settings.
func renderHealth(reps []devlink.HealthReporter) string {
	sorted := append([]devlink.HealthReporter(nil), reps...)
	sort.SliceStable(sorted, func(i, j int) bool { return reporterDev(sorted[i].ReporterID) < reporterDev(sorted[j].ReporterID) })
	var b strings.Builder
	last := ""
	for _, r := range sorted {
		if d := reporterDev(r.ReporterID); d != last {
			fmt.Fprintf(&b, "%s:\n", d)
			last = d
		}
		fmt.Fprintf(&b, "  reporter %s\n    ", r.Name)
		var f []string
		if r.State != nil {
			f = append(f, "state "+r.State.String())
		}
		if r.ErrorCount != nil {
			f = append(f, fmt.Sprintf("error %d", *r.ErrorCount))
		}
		if r.RecoverCount != nil {
			f = append(f, fmt.Sprintf("recover %d", *r.RecoverCount))
		}
		if r.GracefulPeriod != nil {
			f = append(f, fmt.Sprintf("grace_period %d", r.GracefulPeriod.Milliseconds()))
		}
		if r.AutoRecover != nil {
			f = append(f, fmt.Sprintf("auto_recover %t", *r.AutoRecover))
		}
		if r.AutoDump != nil {
			f = append(f, fmt.Sprintf("auto_dump %t", *r.AutoDump))
		}
		b.WriteString(strings.Join(f, " ") + "\n")
	}
	return b.String()
}

// renderInfo prints one device's information as devlink dev info does.
func renderInfo(b *strings.Builder, info devlink.Info) {
	fmt.Fprintf(b, "%s:\n", info.Handle)
	if info.Driver != "" {
		fmt.Fprintf(b, "  driver %s\n", info.Driver)
	}
	if info.SerialNumber != "" {
		fmt.Fprintf(b, "  serial_number %s\n", info.SerialNumber)
	}
	if info.BoardSerialNumber != "" {
		fmt.Fprintf(b, "  board.serial_number %s\n", info.BoardSerialNumber)
	}
	if len(info.Fixed)+len(info.Running)+len(info.Stored) == 0 {
		return
	}
	b.WriteString("  versions:\n")
	for _, g := range []struct {
		name string
		vs   []devlink.Version
	}{{"fixed", info.Fixed}, {"running", info.Running}, {"stored", info.Stored}} {
		if len(g.vs) == 0 {
			continue
		}
		fmt.Fprintf(b, "      %s:\n", g.name)
		for _, v := range g.vs {
			fmt.Fprintf(b, "        %s %s\n", v.Name, v.Value)
		}
	}
}
