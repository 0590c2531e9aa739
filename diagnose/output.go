package diagnose

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/ethtool"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/collector/infiniband"
	"github.com/nic-exporter/nic_exporter/collector/kmsg"
	"github.com/nic-exporter/nic_exporter/internal/ethtooldump"
	"github.com/nic-exporter/nic_exporter/internal/ethtoolioctl"
	"github.com/nic-exporter/nic_exporter/internal/logrules"
)

// WriteText writes the reports for people: findings first, then the
// files read and ignored. Every string is escaped (see Escape): names,
// fields and notes come from the bundle and go to a terminal.
func WriteText(w io.Writer, reports []*Report) error {
	var t textWriter
	for _, r := range reports {
		n := r.Counted()
		count := strconv.Itoa(n) + " finding(s)"
		if only := len(r.Findings) - n; only > 0 {
			count += " and " + strconv.Itoa(only) + " only since boot"
		}
		t.printf("bundle %s: %s, uptime %s (%s)\n", r.Source, count, formatUptime(r.Uptime.Seconds), r.Uptime.Source)
		if r.Host.Kernel != "" || r.Host.OS != "" {
			t.printf("  host: %s, kernel %s\n", orDash(r.Host.OS), orDash(r.Host.Kernel))
		}
		for _, f := range r.Findings {
			t.printf("  %-7s %s %s: %s\n", strings.ToUpper(f.Severity), f.Alert, f.Device, f.Condition)
			t.printf("          evidence: %s\n          detail:   %s\n          runbook:  %s\n", f.Evidence, f.Detail, f.Runbook)
		}
		for _, d := range r.Firmware {
			fw := d.Versions["FW"]
			t.printf("  firmware %s %s (%s, PSID %s): FW %s, available %s\n", d.PCIName, d.DeviceType, d.PartNumber, d.PSID, fw[0], fw[1])
		}
		for _, f := range r.Files {
			kind := f.Kind
			if kind == "" {
				kind = "-"
			}
			if f.Note != "" {
				t.printf("  file %s: %s (%s)\n", f.Name, kind, f.Note)
			} else {
				t.printf("  file %s: %s\n", f.Name, kind)
			}
		}
	}
	_, err := w.Write(t.b.Bytes())
	return err
}

// textWriter builds the text output. Its arguments are strings only, so
// none reaches the output without Escape.
type textWriter struct{ b bytes.Buffer }

func (t *textWriter) printf(format string, args ...string) {
	esc := make([]any, len(args))
	for i, a := range args {
		esc[i] = Escape(a)
	}
	fmt.Fprintf(&t.b, format, esc...)
}

// WriteJSON writes the reports as one JSON document for tools.
func WriteJSON(w io.Writer, reports []*Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Bundles []*Report `json:"bundles"`
	}{reports})
}

// WriteOpenMetrics writes the series the daemon's collectors export when
// they run over the bundle (the ethtool collector over the recorded
// ethtool -i/-S dumps and link settings, the kmsg collector over the
// kernel log lines) and the series diagnose builds from the other tool
// outputs (series.go): the series the alert rules are evaluated over,
// without the up series of the scrape they stand for. Every sample carries the timestamp at, so the output
// can be backfilled (whole seconds, which the Prometheus text parser of
// promtool check metrics also reads) with promtool tsdb create-blocks-from openmetrics.
// Several bundles are one host each, told apart by the instance label.
func WriteOpenMetrics(w io.Writer, reports []*Report, rules *logrules.Engine, at time.Time, log *zap.Logger) error {
	return writeExposition(w, reports, rules, at, log, exposition.OpenMetrics)
}

// writeExposition writes the collectors' series in format; the Prometheus
// text format (timestamps in milliseconds) is what promtool check metrics
// lints.
func writeExposition(w io.Writer, reports []*Report, rules *logrules.Engine, at time.Time, log *zap.Logger, format exposition.Format) error {
	ts := strconv.FormatInt(at.Unix(), 10)
	if format != exposition.OpenMetrics {
		ts = strconv.FormatInt(at.UnixMilli(), 10)
	}
	var out bytes.Buffer
	fams := map[string][]string{} // family -> samples
	var order []string
	headers := map[string][]string{}
	for _, r := range reports {
		snaps, err := collect(r, rules, at, log)
		if err != nil {
			return err
		}
		for _, s := range snaps {
			var buf bytes.Buffer
			if _, err := s.WriteTo(&buf, format); err != nil {
				return err
			}
			fam := ""
			for _, l := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
				if strings.HasPrefix(l, "# ") {
					f := strings.Fields(l)
					if len(f) >= 3 {
						fam = f[2]
						if _, ok := fams[fam]; !ok {
							fams[fam] = nil
							order = append(order, fam)
							headers[fam] = nil
						}
						if len(headers[fam]) < 3 && !contains(headers[fam], l) {
							headers[fam] = append(headers[fam], l)
						}
					}
					continue
				}
				if l == "" {
					continue
				}
				fams[fam] = append(fams[fam], withInstance(l, r.Source)+" "+ts)
			}
		}
	}
	for _, fam := range order {
		if len(fams[fam]) == 0 {
			continue
		}
		for _, h := range headers[fam] {
			out.WriteString(h + "\n")
		}
		for _, s := range fams[fam] {
			out.WriteString(s + "\n")
		}
	}
	if format == exposition.OpenMetrics {
		out.WriteString("# EOF\n")
	}
	_, err := w.Write(out.Bytes())
	return err
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// withInstance adds instance="<bundle>" to one sample line.
func withInstance(sample, instance string) string {
	inst := `instance="` + escapeLabel(instance) + `"`
	if i := strings.IndexByte(sample, '{'); i >= 0 && i < strings.IndexByte(sample, ' ') {
		if sample[i+1] == '}' {
			return sample[:i+1] + inst + sample[i+1:]
		}
		return sample[:i+1] + inst + "," + sample[i+1:]
	}
	sp := strings.IndexByte(sample, ' ')
	return sample[:sp] + "{" + inst + "}" + sample[sp:]
}

func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// collect runs the daemon's collectors over the sources built from r and
// adds the series diagnose exports itself (series.go).
func collect(r *Report, rules *logrules.Engine, at time.Time, log *zap.Logger) ([]*exposition.Snapshot, error) {
	var snaps []*exposition.Snapshot
	if len(r.ethIfaces) > 0 {
		var devs []*ethtooldump.Device
		for i, it := range r.ethIfaces {
			d := &ethtooldump.Device{Name: it.name, Index: i + 1, Dump: it.dump}
			if ls := it.link; ls != nil {
				d.Link = ethtoolioctl.Link{HasSettings: ls.HasSettings, SpeedMbps: ls.SpeedMbps, Duplex: duplex(ls.Duplex),
					HasDetected: ls.HasDetected, Detected: ls.Detected}
				if ls.Autoneg {
					d.Link.Autoneg = 1
				}
			}
			devs = append(devs, d)
		}
		c, err := ethtool.New(ethtool.Config{Source: ethtooldump.NewSource(devs...)}, log)
		if err != nil {
			return nil, fmt.Errorf("ethtool collector: %w", err)
		}
		s, err := poll(c, log)
		if err != nil {
			return nil, err
		}
		snaps = append(snaps, s)
	}
	if len(r.kmsgLines) > 0 {
		recs := make([][]byte, len(r.kmsgLines))
		for i, l := range r.kmsgLines {
			recs[i] = []byte(fmt.Sprintf("6,%d,0,-;%s", i+1, l))
		}
		cfg := kmsg.Config{
			Open:     func() (kmsg.Device, error) { return &lineDevice{recs: recs}, nil },
			Rules:    rules,
			Replay:   true,
			BootTime: at,
		}
		if len(r.pciClasses) > 0 {
			cfg.Devices = r.pciClasses
		}
		c := kmsg.New(cfg, log)
		s, err := poll(c, log)
		if err != nil {
			return nil, err
		}
		snaps = append(snaps, s)
	}
	if len(r.rdmaFiles) > 0 {
		c := infiniband.New(infiniband.Config{SysfsPath: "(bundle)", FS: rdmaFS(r.rdmaFiles)}, log)
		s, err := poll(c, log)
		if err != nil {
			return nil, err
		}
		snaps = append(snaps, s)
	}
	if s, err := phySnapshot(&r.phy, at, log); err != nil {
		return nil, fmt.Errorf("phy collector: %w", err)
	} else if s != nil {
		snaps = append(snaps, s)
	}
	if s := hwmonSnapshot(r, log); s != nil {
		snaps = append(snaps, s)
	}
	if len(r.statsFiles) > 0 {
		s, err := statsSnapshots(r.statsFiles, log)
		if err != nil {
			return nil, err
		}
		snaps = append(snaps, s...)
	}
	if s := r.series.snapshot(); s != nil {
		snaps = append(snaps, s)
	}
	return snaps, nil
}

func duplex(s string) uint8 {
	switch s {
	case "Full":
		return 1
	case "Half":
		return 0
	}
	return 0xff
}

func poll(c collector.Collector, log *zap.Logger) (*exposition.Snapshot, error) {
	b := exposition.NewBuilder()
	if err := c.Update(context.Background(), collector.NewPoll(b, collector.NewSourceErrors(log, 0))); err != nil {
		return nil, fmt.Errorf("%s collector: %w", c.Name(), err)
	}
	return b.Snapshot(), nil
}

// lineDevice serves kernel log lines read from a bundle as /dev/kmsg
// records, so the kmsg collector counts them as it counts the kernel's.
type lineDevice struct {
	recs [][]byte
	next int
}

func (d *lineDevice) Read(p []byte) (int, error) {
	if d.next >= len(d.recs) {
		return 0, syscall.EAGAIN
	}
	n := copy(p, d.recs[d.next])
	d.next++
	return n, nil
}

func (d *lineDevice) Pending() (bool, error) { return d.next < len(d.recs), nil }
func (d *lineDevice) SeekEnd() error         { d.next = len(d.recs); return nil }
func (d *lineDevice) Close() error           { return nil }

// orDash returns s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
