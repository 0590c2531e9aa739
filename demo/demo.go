// Package demo provides the embedded reference host that nic_exporter
// --demo runs its real collectors against. It swaps only the sources: it
// extracts a sysfs tree to a temporary directory and keeps rewriting its
// files as a live host would change them, with counters that advance and
// documented faults applied on a schedule.
package demo

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

//go:embed host.txtar
var hostTree string

// Config configures the demo host.
type Config struct {
	// Faults schedules documented faults, for example
	// "pcie_degraded@4m,link_flap@2m-3m".
	Faults string
	// Elapsed, when positive, freezes the demo clock at this time after
	// the start, so output is reproducible (golden files, screenshots).
	Elapsed time.Duration
	// UpdateInterval is how often the files are rewritten; default 1 s.
	UpdateInterval time.Duration
	// Start, when not zero, is the wall-clock time the demo clock counts
	// from, instead of the time New runs. A demo host restarted with the
	// same Start is the same host further on in its day: faults scheduled
	// before now have already begun, counters have their values, and the
	// kernel log holds the same records, as a real host's ring buffer does
	// when only the exporter restarts. It must not be in the future.
	Start time.Time
	// Now is the wall clock the demo clock runs on; nil means time.Now.
	// Tests step it and call Update to walk the demo through a fault
	// schedule without waiting.
	Now func() time.Time
}

// Fault is one scheduled fault.
type Fault struct {
	Name  string
	Start time.Duration
	End   time.Duration // zero: until the exporter stops
}

// A part is one source of the reference host: the files or fake devices
// one collector reads, the faults it knows and how it advances over time.
// Each part lives in its own file of this package.
type part struct {
	// faults maps each fault name the part knows to what it does.
	faults map[string]string
	// update rewrites the part's state for the current demo clock. It is
	// called once at start and then every UpdateInterval.
	update func(h *Host) error
	// tree, if not empty, is the part's own tree file, extracted into the
	// host directory after host.txtar.
	tree string
}

// parts lists the parts of the reference host.
func parts() []part {
	return []part{netdevPart, infinibandPart, vmaPart, xlioPart, ethtoolPart, kmsgPart, applogPart, devlinkPart, phyPart, fabricPart, hwmonPart, efaPart, topologyPart}
}

// faultHelp returns every known fault with what it does.
func faultHelp() map[string]string {
	out := make(map[string]string)
	for _, p := range parts() {
		for name, help := range p.faults {
			out[name] = help
		}
	}
	return out
}

// Faults returns the names of the faults the demo host knows, sorted.
func Faults() []string {
	help := faultHelp()
	out := make([]string, 0, len(help))
	for n := range help {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ParseFaults parses a fault schedule such as "fw_fatal@2m,link_flap@1m-90s".
func ParseFaults(s string) ([]Fault, error) {
	var out []Fault
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, when, ok := strings.Cut(item, "@")
		if !ok {
			return nil, fmt.Errorf("demo fault %q: want name@start or name@start-end, for example pcie_degraded@4m", item)
		}
		if _, known := faultHelp()[name]; !known {
			return nil, fmt.Errorf("unknown demo fault %q; known faults: %s", name, strings.Join(Faults(), ", "))
		}
		startS, endS, hasEnd := strings.Cut(when, "-")
		f := Fault{Name: name}
		var err error
		if f.Start, err = time.ParseDuration(startS); err != nil || f.Start < 0 {
			return nil, fmt.Errorf("demo fault %q: bad start %q", item, startS)
		}
		if hasEnd {
			if f.End, err = time.ParseDuration(endS); err != nil || f.End <= f.Start {
				return nil, fmt.Errorf("demo fault %q: end %q must be a duration after the start", item, endS)
			}
		}
		out = append(out, f)
	}
	return out, nil
}

// Host is a running demo host.
type Host struct {
	cfg     Config
	log     *zap.Logger
	faults  []Fault
	dir     string
	scratch string
	start   time.Time
	now     func() time.Time
	// at is the wall-clock time of the current update, in nanoseconds
	// since the epoch. The demo clock counts to it, so every value one
	// update writes derives from one reading of the clock: two readings
	// (the time and how long a fault has been active) would differ by
	// the time between them, and counters computed as their difference
	// would step back. Atomic, as the fake devices answer the collectors
	// while Run updates.
	at      atomic.Int64
	ethtool *demoEthtool // the ethtool part's fake source, made by its first update
	phy     *demoPhy     // the phy part's optic state (phy.go), made on first use
	xlio    xlioState    // what the XLIO application's libxlio remembers (xlio.go)

	klog       *kernelLog     // the fake /dev/kmsg (kmsg.go)
	vmaPrinted map[string]int // VMA log lines printed per fault (applog.go)

	// mu orders Update and Close: an update that Run started before a
	// shutdown whose grace ran out (a busy machine) would otherwise
	// write into the directory while Close removes it, and the removal
	// fails on the files written after it listed them, leaving the
	// directory behind. closed makes later updates do nothing.
	mu     sync.Mutex
	closed bool
}

// New extracts the reference host into a new temporary directory.
func New(cfg Config, log *zap.Logger) (*Host, error) {
	faults, err := ParseFaults(cfg.Faults)
	if err != nil {
		return nil, err
	}
	if cfg.UpdateInterval <= 0 {
		cfg.UpdateInterval = time.Second
	}
	entries, err := parseTree(hostTree)
	if err != nil {
		return nil, fmt.Errorf("embedded demo host: %w", err)
	}
	dir, err := os.MkdirTemp("", "nic_exporter-demo-")
	if err != nil {
		return nil, fmt.Errorf("creating the demo host directory: %w", err)
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	h := &Host{cfg: cfg, log: log, faults: faults, dir: dir, scratch: filepath.Join(dir, "scratch"), now: now, klog: newKernelLog()}
	if err := os.Mkdir(h.scratch, 0o755); err != nil {
		h.Close()
		return nil, err
	}
	if err := writeTree(dir, entries); err != nil {
		h.Close()
		return nil, fmt.Errorf("extracting the demo host: %w", err)
	}
	for _, p := range parts() {
		if p.tree == "" {
			continue
		}
		if err := WriteTree(dir, p.tree); err != nil {
			h.Close()
			return nil, fmt.Errorf("extracting the demo host: %w", err)
		}
	}
	h.start = h.now()
	if !cfg.Start.IsZero() {
		if cfg.Start.After(h.start) {
			h.Close()
			return nil, fmt.Errorf("demo start %s is in the future", cfg.Start.Format(time.RFC3339))
		}
		h.start = cfg.Start
	}
	h.at.Store(h.start.UnixNano())
	if err := h.Update(); err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

// SysfsPath returns the root of the demo host's sysfs.
func (h *Host) SysfsPath() string { return filepath.Join(h.dir, "sys") }

// Elapsed returns the demo clock: the time from the start to the last
// Update, or the frozen time from Config.Elapsed.
func (h *Host) Elapsed() time.Duration {
	if h.cfg.Elapsed > 0 {
		return h.cfg.Elapsed
	}
	return time.Unix(0, h.at.Load()).Sub(h.start)
}

// frozenEpoch is the wall-clock start of a demo host whose clock is
// frozen (Config.Elapsed), so absolute timestamps are reproducible too.
var frozenEpoch = time.Unix(1700000000, 0)

// Start returns the wall-clock time the demo clock counts from: the real
// start, or a fixed date when the clock is frozen.
func (h *Host) Start() time.Time {
	if h.cfg.Elapsed > 0 {
		return frozenEpoch
	}
	return h.start
}

// Active reports whether the named fault is in effect now.
func (h *Host) Active(name string) bool {
	t := h.Elapsed()
	for _, f := range h.faults {
		if f.Name == name && t >= f.Start && (f.End == 0 || t < f.End) {
			return true
		}
	}
	return false
}

// Spans returns, for each time the named fault has started, for how long
// it has been (or was) in effect, in the order of the schedule.
func (h *Host) Spans(name string) []time.Duration {
	t := h.Elapsed()
	var out []time.Duration
	for _, f := range h.faults {
		if f.Name != name || t < f.Start {
			continue
		}
		end := t
		if f.End != 0 && f.End < t {
			end = f.End
		}
		out = append(out, end-f.Start)
	}
	return out
}

// Started returns how many times the named fault has started.
func (h *Host) Started(name string) int { return len(h.Spans(name)) }

// Current returns for how long the named fault has been in effect, if it
// is in effect now.
func (h *Host) Current(name string) (time.Duration, bool) {
	t := h.Elapsed()
	for _, f := range h.faults {
		if f.Name == name && t >= f.Start && (f.End == 0 || t < f.End) {
			return t - f.Start, true
		}
	}
	return 0, false
}

// ActiveFor returns for how long the named fault has been in effect.
func (h *Host) ActiveFor(name string) time.Duration {
	t := h.Elapsed()
	var d time.Duration
	for _, f := range h.faults {
		if f.Name != name || t < f.Start {
			continue
		}
		end := t
		if f.End != 0 && f.End < t {
			end = f.End
		}
		d += end - f.Start
	}
	return d
}

// Run rewrites the host's files every UpdateInterval until ctx is done.
func (h *Host) Run(ctx context.Context) {
	t := time.NewTicker(h.cfg.UpdateInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := h.Update(); err != nil {
				h.log.Warn("updating the demo host failed", zap.Error(err))
			}
		}
	}
}

// Close waits for an update in progress, stops later ones, and removes
// the host's directory.
func (h *Host) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	if err := os.RemoveAll(h.dir); err != nil {
		return fmt.Errorf("removing the demo host directory: %w", err)
	}
	return nil
}

// Update rewrites the host's files and fake devices for the demo clock
// now. Run calls it every UpdateInterval.
func (h *Host) Update() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	h.at.Store(h.now().UnixNano())
	for _, p := range parts() {
		if err := p.update(h); err != nil {
			return err
		}
	}
	return nil
}

func (h *Host) write(rel, content string) error {
	return writeAtomic(h.scratch, filepath.Join(h.dir, filepath.FromSlash(rel)), content)
}
