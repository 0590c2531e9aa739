// Package collect writes the support bundle that `nic_exporter diagnose`
// reads: the files of the ConnectX troubleshooting guide's
// collect_debug.sh, gathered natively from sysfs, the ethtool ioctls,
// devlink generic netlink and the kernel log, with the counters sampled
// twice an interval apart so that rates are real. It reads the same
// sources the daemon's collectors read, through the same interfaces, so
// `collect --demo` gathers the demo host.
//
// Collection is bounded in time (Config.Timeout) and size
// (Config.Limits), runs as any user with what that user can read, and
// records in manifest.json each file it wrote and each source it could
// not read, with the reason.
package collect

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/devlink"
)

// Names of the bundle's files and directories that do not depend on a
// device.
const (
	// ManifestFile lists the files, the samples and what could not be
	// read.
	ManifestFile = "manifest.json"
	// EarlierDir holds the first sample of the counters, taken
	// Config.Interval before the second one at the top level. diagnose
	// reads the top level as the bundle's state.
	EarlierDir = "earlier_sample"
)

// Limits bound what a bundle holds.
type Limits struct {
	// MaxFileSize is the largest file; a source that gives more is cut
	// there and the cut is noted in the manifest.
	MaxFileSize int
	// MaxTotal is the most bytes of all files together; files that
	// would pass it are left out and noted.
	MaxTotal int
}

// DefaultLimits keep a bundle small enough to attach to a ticket: a
// kernel log excerpt or lspci -vvv of a large host is well under a MiB,
// and a /metrics snapshot of the large host (docs/benchmarks.md) a few.
var DefaultLimits = Limits{MaxFileSize: 16 << 20, MaxTotal: 64 << 20}

// Config configures Run.
type Config struct {
	// Sources are what is collected: this host's or the demo host's.
	Sources Sources
	// Interval is the time between the two samples of the counters; 0
	// takes one sample only.
	Interval time.Duration
	// Timeout bounds the whole collection. A sample or source that is
	// not done when it passes is noted in the manifest and left out.
	Timeout time.Duration
	// CommandTimeout bounds each external command (lspci, journalctl);
	// 0 means 10 s.
	CommandTimeout time.Duration
	// URL is the exporter's metrics URL, read once per sample; empty
	// reads none.
	URL string
	// Limits bound the bundle; zero fields take DefaultLimits' values.
	Limits Limits
	// Stats bound the applications' statistics files in the bundle;
	// zero fields take DefaultStatsLimits' values.
	Stats StatsLimits
	// Now is the clock of the manifest's times; nil means time.Now.
	Now func() time.Time
	// Wait waits d or until ctx is done, between the samples; nil uses
	// a timer. Tests step the demo clock instead of waiting.
	Wait func(ctx context.Context, d time.Duration) error
}

// Bundle is a collected support bundle in memory: its files by name
// (slash-separated, relative to the bundle's directory) and its manifest.
type Bundle struct {
	Files    map[string][]byte
	Manifest Manifest

	limits Limits
	total  int
}

// Manifest is manifest.json: what was collected, when, and what could
// not be.
type Manifest struct {
	// Tool is "nic_exporter collect".
	Tool string `json:"tool"`
	// Host names the host collected: its host name, or "demo".
	Host string `json:"host"`
	// Samples are the samples of the counters, the earlier first.
	Samples []Sample `json:"samples"`
	// Files lists every file of the bundle but the manifest, sorted.
	Files []FileEntry `json:"files"`
	// Unreadable lists the sources that could not be read and why.
	Unreadable []Unreadable `json:"unreadable"`
}

// Sample is one sample of the counters.
type Sample struct {
	// Dir is the directory of its files: EarlierDir or "" (the top
	// level).
	Dir string `json:"dir"`
	// Time is when the sample started, RFC 3339 with nanoseconds.
	Time string `json:"time"`
	// UptimeSeconds is the host's uptime then, when known.
	UptimeSeconds *float64 `json:"uptime_seconds,omitempty"`
}

// FileEntry is one file of the bundle.
type FileEntry struct {
	Name string `json:"name"`
	// Source says where its content came from: a command line as
	// collect_debug.sh would run it, or the native source read.
	Source string `json:"source"`
	Bytes  int    `json:"bytes"`
	// Truncated is set when the source gave more than MaxFileSize.
	Truncated bool `json:"truncated,omitempty"`
	// Process is, for a libvma or libxlio statistics file, its writer.
	Process *ProcessEntry `json:"process,omitempty"`
}

// Unreadable is a source that could not be read.
type Unreadable struct {
	Source string `json:"source"`
	Reason string `json:"reason"`
}

// add adds a file to the bundle within the limits; a file over the
// per-file limit is cut, one over the total left out, both noted. It
// reports whether the file was added, as the last of Manifest.Files.
func (b *Bundle) add(name, source string, data []byte) bool {
	e := FileEntry{Name: name, Source: source}
	if len(data) > b.limits.MaxFileSize {
		data, e.Truncated = data[:b.limits.MaxFileSize], true
	}
	if b.total+len(data) > b.limits.MaxTotal {
		b.unreadable(source, fmt.Sprintf("left out: %s would pass the bundle's limit of %d bytes", name, b.limits.MaxTotal))
		return false
	}
	if _, dup := b.Files[name]; dup {
		b.unreadable(source, "left out: a second file named "+name)
		return false
	}
	b.total += len(data)
	e.Bytes = len(data)
	b.Files[name] = data
	b.Manifest.Files = append(b.Manifest.Files, e)
	return true
}

// unreadable notes a source that could not be read, once: each sample
// tries devlink and ethtool again.
func (b *Bundle) unreadable(source, reason string) {
	for _, u := range b.Manifest.Unreadable {
		if u.Source == source && u.Reason == reason {
			return
		}
	}
	b.Manifest.Unreadable = append(b.Manifest.Unreadable, Unreadable{Source: source, Reason: reason})
}

// unreadableErr notes a source that failed with err.
func (b *Bundle) unreadableErr(source string, err error) {
	b.unreadable(source, err.Error())
}

// Run collects a bundle from cfg.Sources: the parts that do not change
// within seconds once, the counters twice cfg.Interval apart (the first
// sample under EarlierDir), within cfg.Timeout. It returns the bundle
// even when sources failed (they are in the manifest); the error is for a
// collection that produced nothing usable.
func Run(ctx context.Context, cfg Config, log *zap.Logger) (*Bundle, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Wait == nil {
		cfg.Wait = waitTimer
	}
	if cfg.CommandTimeout <= 0 {
		cfg.CommandTimeout = 10 * time.Second
	}
	if cfg.Limits.MaxFileSize <= 0 {
		cfg.Limits.MaxFileSize = DefaultLimits.MaxFileSize
	}
	if cfg.Limits.MaxTotal <= 0 {
		cfg.Limits.MaxTotal = DefaultLimits.MaxTotal
	}
	if cfg.Stats.MaxFileSize <= 0 {
		cfg.Stats.MaxFileSize = DefaultStatsLimits.MaxFileSize
	}
	if cfg.Stats.MaxProcesses <= 0 {
		cfg.Stats.MaxProcesses = DefaultStatsLimits.MaxProcesses
	}
	if cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Timeout)
		defer cancel()
	}
	src := cfg.Sources
	b := &Bundle{Files: map[string][]byte{}, limits: cfg.Limits,
		Manifest: Manifest{Tool: "nic_exporter collect", Host: src.Host, Files: []FileEntry{}, Unreadable: []Unreadable{}}}
	c := &collector{cfg: cfg, src: src, b: b, log: log}
	c.mr = c.openModules()
	if cl, ok := c.mr.(interface{ Close() error }); ok {
		defer cl.Close()
	}

	dirs := []string{""}
	if cfg.Interval > 0 {
		dirs = []string{EarlierDir, ""}
	}
	for i, dir := range dirs {
		if i > 0 {
			if err := cfg.Wait(ctx, cfg.Interval); err != nil {
				b.unreadable("second sample", fmt.Sprintf("not taken: %v (the earlier sample in %s/ is the bundle's only one)", err, EarlierDir))
				promoteEarlier(b)
				break
			}
		}
		if err := ctx.Err(); err != nil {
			b.unreadable("sample "+dirOrTop(dir), fmt.Sprintf("not taken: %v", err))
			break
		}
		c.sample(ctx, dir)
	}
	if ctx.Err() == nil {
		c.once(ctx)
	} else {
		b.unreadable("host state (ibstat, lspci, devlink dev info, kernel log)", fmt.Sprintf("not read: %v", ctx.Err()))
	}
	sort.Slice(b.Manifest.Files, func(i, j int) bool { return b.Manifest.Files[i].Name < b.Manifest.Files[j].Name })
	if len(b.Files) == 0 {
		return b, errors.New("nothing could be collected (see the reasons in the manifest)")
	}
	return b, nil
}

// dirOrTop names a sample directory for messages.
func dirOrTop(dir string) string {
	if dir == "" {
		return "at the top level"
	}
	return "in " + dir + "/"
}

// promoteEarlier moves the only sample to the top level, where diagnose
// reads the bundle's state, when the second could not be taken.
func promoteEarlier(b *Bundle) {
	for i := range b.Manifest.Files {
		e := &b.Manifest.Files[i]
		if rest, ok := strings.CutPrefix(e.Name, EarlierDir+"/"); ok {
			b.Files[rest] = b.Files[e.Name]
			delete(b.Files, e.Name)
			e.Name = rest
		}
	}
	for i := range b.Manifest.Samples {
		b.Manifest.Samples[i].Dir = ""
	}
}

// waitTimer waits d or until ctx is done.
func waitTimer(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// collector is one collection in progress.
type collector struct {
	cfg Config
	src Sources
	b   *Bundle
	log *zap.Logger
	// lastReporters are the health reporters of the last sample.
	lastReporters []devlink.HealthReporter
	// mr is the pluggable module reader (the phy collector's ethtool
	// netlink source), nil when there is none; it also gives the link
	// state and the FEC statistics where it implements them.
	mr ModuleReader
}

// name returns the bundle path of a file of the sample in dir.
func name(dir, file string) string {
	if dir == "" {
		return file
	}
	return path.Join(dir, file)
}

// sample takes one sample of the counters into dir: ethtool -S, the
// devlink health reporters, the PCIe link and AER attributes, the NIC
// functions' temperatures, the InfiniBand counters, the VMA/XLIO
// applications' statistics files and the exporter's /metrics.
func (c *collector) sample(ctx context.Context, dir string) {
	if c.src.Refresh != nil {
		if err := c.src.Refresh(); err != nil {
			c.b.unreadableErr("refreshing the host before the sample", err)
		}
	}
	now := c.cfg.Now()
	s := Sample{Dir: dir, Time: now.UTC().Format(time.RFC3339Nano)}
	if c.src.Uptime != nil {
		if up, err := c.src.Uptime(); err != nil {
			c.b.unreadableErr("uptime", err)
		} else {
			secs := up.Seconds()
			s.UptimeSeconds = &secs
		}
	}
	c.b.Manifest.Samples = append(c.b.Manifest.Samples, s)
	c.ethtoolSample(dir)
	c.fecSample(dir)
	c.devlinkSample(ctx, dir)
	c.pciSample(dir)
	c.hwmonSample(dir)
	c.netdevSample(dir)
	c.infinibandSample(dir)
	c.statsSample(ctx, dir)
	if c.cfg.URL != "" {
		c.metricsSample(ctx, dir)
	}
}

// once collects what is read once, after the samples: identity, ethtool
// -i and link settings, ibstat, lspci, devlink dev info, the reporters'
// diagnose output, and the kernel log.
func (c *collector) once(ctx context.Context) {
	c.identity()
	c.ethtoolOnce(c.mr)
	c.moduleOnce(c.mr)
	c.ibstat()
	c.lspci(ctx)
	c.devlinkOnce(ctx)
	c.kernelLog(ctx)
	c.journal(ctx)
}
