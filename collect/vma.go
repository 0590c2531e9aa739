package collect

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nic-exporter/nic_exporter/vmastats"
	"github.com/nic-exporter/nic_exporter/xliostats"
)

// Directories of the bundle that hold the applications' statistics
// files, in each sample, under their own names (vmastat.<pid>,
// xliostat.<pid>), so that a support engineer can point the libraries'
// own readers at them as at the shared-memory directory (xlio_stats
// takes it with -k/--directory).
const (
	VMADir  = "vma"
	XLIODir = "xlio"
)

// StatsLimits bound the applications' statistics files a bundle holds.
type StatsLimits struct {
	// MaxFileSize is the largest statistics file copied; a larger one is
	// not read and is noted. Every known layout fits in 600 KiB (libvma
	// with 1024 socket slots, libxlio 3.70 with its largest).
	MaxFileSize int64
	// MaxProcesses is the most files copied per library and sample, in
	// the order of the directories and then of the pids; the rest are
	// noted.
	MaxProcesses int
}

// DefaultStatsLimits are StatsLimits' defaults: every known layout, and
// more accelerated processes than a host runs, within the bundle's
// limits with both samples.
var DefaultStatsLimits = StatsLimits{MaxFileSize: 1 << 20, MaxProcesses: 32}

// statsSettle is how long to wait after the reader handshake before
// reading a file, as the vma and xlio collectors wait at their first
// poll of a process: the libraries copy their counters every 10 ms.
const statsSettle = 20 * time.Millisecond

// ProcessEntry is, in the manifest, the process whose statistics file a
// bundle file is: what procfs said of the writer, and whether collect
// could make the reader handshake (without it the counters are as the
// library last copied them, maybe long ago).
type ProcessEntry struct {
	PID       int    `json:"pid"`
	Comm      string `json:"comm"`
	Start     string `json:"start,omitempty"`
	Handshake bool   `json:"reader_handshake"`
}

// statsLibrary is one library whose statistics files collect copies.
type statsLibrary struct {
	what, tool, prefix, dir string
	dirs                    []string
	liveness                vmastats.Liveness
	load                    func(vmastats.Candidate, vmastats.LoadOptions) (loadedStats, error)
}

// loadedStats is what collect keeps of a loaded file of either library.
type loadedStats struct {
	raw       []byte
	proc      vmastats.Process
	handshake bool
}

// statsLibraries returns the libraries of the sources.
func (c *collector) statsLibraries() []statsLibrary {
	return []statsLibrary{
		{what: "libvma", tool: "vma_stats", prefix: vmastats.FilePrefix, dir: VMADir, dirs: c.src.VMADirs, liveness: c.src.VMALiveness,
			load: func(cand vmastats.Candidate, o vmastats.LoadOptions) (loadedStats, error) {
				l, err := vmastats.Load(cand, o)
				if err != nil {
					return loadedStats{}, err
				}
				return loadedStats{l.Raw, l.Process, l.Handshake}, nil
			}},
		{what: "libxlio", tool: "xlio_stats", prefix: xliostats.FilePrefix, dir: XLIODir, dirs: c.src.XLIODirs, liveness: c.src.XLIOLiveness,
			load: func(cand vmastats.Candidate, o vmastats.LoadOptions) (loadedStats, error) {
				l, err := xliostats.Load(cand, o)
				if err != nil {
					return loadedStats{}, err
				}
				return loadedStats{l.Raw, l.Process, l.Handshake}, nil
			}},
	}
}

// statsSample copies the statistics files of the accelerated processes
// into dir: found and verified as the vma and xlio collectors find and
// verify them (vmastats.Scanner and Load: live writer that maps the
// file, no link, size and layout checked, reader handshake), within
// c.cfg.Stats. A file of a process that is gone is passed over, as the
// collectors pass over it; any other file that could not be read is
// noted with the reason, and so are the files left when ctx is done.
func (c *collector) statsSample(ctx context.Context, dir string) {
	for _, lib := range c.statsLibraries() {
		if len(lib.dirs) == 0 {
			continue
		}
		liveness := lib.liveness
		if liveness == nil {
			liveness = vmastats.NewProcLiveness(c.src.ProcPath)
		}
		sc := vmastats.NewScanner(vmastats.ScannerConfig{Dirs: lib.dirs, Prefix: lib.prefix, ProcPath: c.src.ProcPath, Liveness: liveness})
		scan, err := sc.Scan(nil)
		if errors.Is(err, vmastats.ErrNoDir) {
			continue // no application of this library runs here
		}
		if err != nil {
			c.b.unreadableErr(lib.what+" statistics directories", err)
			continue
		}
		cands := scan.Candidates
		if n := len(cands) - c.cfg.Stats.MaxProcesses; n > 0 {
			c.b.unreadable(lib.what+" statistics files", fmt.Sprintf("left out: %d files over the limit of %d processes per sample", n, c.cfg.Stats.MaxProcesses))
			cands = cands[:c.cfg.Stats.MaxProcesses]
		}
		seen := map[int]string{}
		for i, cand := range cands {
			if err := ctx.Err(); err != nil {
				c.b.unreadable(lib.what+" statistics files", fmt.Sprintf("left out: %d files not read: %v", len(cands)-i, err))
				break
			}
			l, err := lib.load(cand, vmastats.LoadOptions{Liveness: liveness, Settle: statsSettle, MaxSize: c.cfg.Stats.MaxFileSize})
			if errors.Is(err, vmastats.ErrStale) {
				continue
			}
			if err != nil {
				c.b.unreadableErr(cand.Path, err)
				continue
			}
			if first, dup := seen[l.proc.PID]; dup {
				c.b.unreadable(cand.Path, "left out: process "+strconv.Itoa(l.proc.PID)+" is in the bundle from "+first)
				continue
			}
			seen[l.proc.PID] = cand.Path
			p := &ProcessEntry{PID: l.proc.PID, Comm: l.proc.Comm, Handshake: l.handshake}
			if !l.proc.Start.IsZero() {
				p.Start = l.proc.Start.UTC().Format(time.RFC3339Nano)
			}
			c.b.addProcess(name(dir, path.Join(lib.dir, filepath.Base(cand.Path))), cand.Path+" ("+lib.what+" shared-memory statistics, the file "+lib.tool+" reads)", l.raw, p)
		}
	}
}

// addProcess adds a statistics file with its process to the bundle.
func (b *Bundle) addProcess(name, source string, data []byte, p *ProcessEntry) {
	if b.add(name, source, data) {
		b.Manifest.Files[len(b.Manifest.Files)-1].Process = p
	}
}
