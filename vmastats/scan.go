package vmastats

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// PIDLister is implemented by a Liveness that can list the pids of the
// processes alive now. A Scanner given one finds statistics files by
// looking up vmastat.<pid> for each live pid, so the files of live
// processes are found at every scan whatever else the directory holds.
type PIDLister interface {
	// LivePIDs returns the pids of the processes alive now.
	LivePIDs() ([]int, error)
}

// DefaultMaxNames is the default of ScannerConfig.MaxNames.
const DefaultMaxNames = 65536

// maxPID is the kernel's PID_MAX_LIMIT on 64-bit systems, the highest
// pid_max can be set to; used when pid_max cannot be read.
const maxPID = 1 << 22

// ScannerConfig configures a Scanner.
type ScannerConfig struct {
	// Dirs are the statistics directories.
	Dirs []string
	// Prefix is the file name prefix before the pid; empty means
	// FilePrefix (libvma's "vmastat."). libxlio's is "xliostat.".
	Prefix string
	// ProcPath is the procfs mount point; pid_max is read from
	// <ProcPath>/sys/kernel/pid_max at every scan. Empty means /proc.
	ProcPath string
	// Liveness is asked, if it implements PIDLister, for the live pids,
	// and else, if it implements PIDChecker, whether a pid is alive.
	Liveness Liveness
	// MaxNames is the most directory entries read per scan; default
	// DefaultMaxNames.
	MaxNames int
}

// Scan is the result of one Scanner.Scan.
type Scan struct {
	// Candidates are the files worth opening, by directory order, then
	// pid.
	Candidates []Candidate
	// Stale is the number of vmastat.<pid> names whose pid names no live
	// process, or is above pid_max, found by the last complete pass over
	// the directories (until the first pass completes, by this one so
	// far). None of these files is opened or stat'ed.
	Stale int
	// NamesRead is the number of directory entries read by this scan,
	// at most the configured MaxNames.
	NamesRead int
	// Lookups is the number of names looked up (a statx each, no open).
	Lookups int
	// PassComplete reports whether this scan completed a pass over the
	// directories.
	PassComplete bool
}

// Scanner finds statistics files with bounded work per scan. The
// statistics directory is often world-writable (/tmp), so anyone can fill
// it with a million vmastat.<pid> names; reading them all at every poll
// took longer than the poll's timeout. A Scanner instead:
//
//   - with a Liveness that is a PIDLister (ProcLiveness), looks up
//     vmastat.<pid> in each directory for every live pid (one statx each,
//     which asks a FUSE daemon nothing), so live processes' files are
//     found at the first scan whatever the directory holds;
//   - reads at most MaxNames directory entries per scan, resuming where
//     the last scan stopped, to count the files of dead pids (Scan.Stale)
//     and, without a PIDLister, to find the candidates;
//   - rejects pids above the kernel's pid_max, which can name no process.
//
// Without a PIDLister, a file found in one part of a pass is a candidate
// in that scan only; the caller passes the files it wants to see again
// (those it exported) to Scan as known, and they are looked up by name.
// A Scanner is not safe for concurrent use.
type Scanner struct {
	cfg     ScannerConfig
	lister  PIDLister
	checker PIDChecker

	// The pass in progress: the directory (index into cfg.Dirs) and the
	// position in it (an opaque directory offset).
	dir   int
	pos   int64
	stale int
	// lastStale is Stale of the last complete pass; -1 before the first.
	lastStale int
}

// NewScanner returns a Scanner.
func NewScanner(cfg ScannerConfig) *Scanner {
	if cfg.ProcPath == "" {
		cfg.ProcPath = "/proc"
	}
	if cfg.MaxNames <= 0 {
		cfg.MaxNames = DefaultMaxNames
	}
	if cfg.Prefix == "" {
		cfg.Prefix = FilePrefix
	}
	s := &Scanner{cfg: cfg, lastStale: -1}
	s.lister, _ = cfg.Liveness.(PIDLister)
	s.checker, _ = cfg.Liveness.(PIDChecker)
	return s
}

// PIDMax reads the kernel's pid_max from the procfs at procPath.
func PIDMax(procPath string) (int, error) {
	b, err := os.ReadFile(filepath.Join(procPath, "sys", "kernel", "pid_max"))
	if err != nil {
		return 0, fmt.Errorf("reading pid_max: %w", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n <= 0 || n > maxPID {
		return 0, fmt.Errorf("reading pid_max: %q is not a pid limit", strings.TrimSpace(string(b)))
	}
	return n, nil
}

// Scan runs one scan. known are files to look up by name again (without
// a PIDLister): those the caller exported at its last poll. The error is
// ErrNoDir, wrapped, when none of the directories exists.
func (s *Scanner) Scan(known []Candidate) (Scan, error) {
	var out Scan
	found := 0
	for _, dir := range s.cfg.Dirs {
		fi, err := os.Stat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return Scan{}, fmt.Errorf("listing statistics directory: %w", err)
		case !fi.IsDir():
			return Scan{}, fmt.Errorf("listing statistics directory: %s: not a directory", dir)
		}
		found++
	}
	if found == 0 {
		return Scan{}, fmt.Errorf("%w: %s", ErrNoDir, strings.Join(s.cfg.Dirs, ", "))
	}
	pidMax, err := PIDMax(s.cfg.ProcPath)
	if err != nil {
		pidMax = maxPID // a procfs without sys/ (a fixture): the kernel's limit
	}

	var live map[int]bool
	type key struct {
		dir int
		pid int
	}
	seen := map[key]bool{}
	var cands []Candidate
	add := func(dir, pid int) {
		k := key{dir, pid}
		if !seen[k] {
			seen[k] = true
			cands = append(cands, Candidate{Path: filepath.Join(s.cfg.Dirs[dir], s.cfg.Prefix+strconv.Itoa(pid)), PID: pid})
		}
	}
	lookup := func(dir, pid int) {
		out.Lookups++
		if exists(filepath.Join(s.cfg.Dirs[dir], s.cfg.Prefix+strconv.Itoa(pid))) {
			add(dir, pid)
		}
	}
	if s.lister != nil {
		pids, err := s.lister.LivePIDs()
		if err != nil {
			return Scan{}, fmt.Errorf("listing live processes: %w", err)
		}
		live = make(map[int]bool, len(pids))
		for _, pid := range pids {
			live[pid] = true
		}
		sort.Ints(pids)
		for d := range s.cfg.Dirs {
			for _, pid := range pids {
				lookup(d, pid)
			}
		}
	} else {
		for _, c := range known {
			for d, dir := range s.cfg.Dirs {
				if filepath.Dir(c.Path) == filepath.Clean(dir) && c.PID > 0 && c.PID <= pidMax {
					lookup(d, c.PID)
				}
			}
		}
	}

	// The bounded part of the pass over the directories.
	budget := s.cfg.MaxNames
	alive := map[int]bool{}
	for budget > 0 {
		dir := s.cfg.Dirs[s.dir]
		names, next, done, err := readNamesAt(dir, s.pos, budget)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return Scan{}, fmt.Errorf("listing statistics directory: %w", err)
		}
		budget -= len(names)
		out.NamesRead += len(names)
		for _, name := range names {
			pid, ok := ParseNameWithPrefix(name, s.cfg.Prefix)
			if !ok {
				continue
			}
			switch {
			case pid > pidMax:
				s.stale++
			case live != nil:
				if !live[pid] {
					s.stale++
				}
			case s.checker != nil:
				a, ok := alive[pid]
				if !ok {
					a = s.checker.Alive(pid)
					alive[pid] = a
				}
				if !a {
					s.stale++
					continue
				}
				add(s.dir, pid)
			default:
				add(s.dir, pid)
			}
		}
		s.pos = next
		if err == nil && !done {
			continue
		}
		// This directory is done (or gone): on to the next, or the pass
		// is complete.
		s.dir, s.pos = s.dir+1, 0
		if s.dir == len(s.cfg.Dirs) {
			s.dir, s.lastStale, s.stale = 0, s.stale, 0
			out.PassComplete = true
			break
		}
	}
	out.Stale = s.lastStale
	if s.lastStale < 0 {
		out.Stale = s.stale
	}
	sort.SliceStable(cands, func(i, j int) bool {
		di, dj := filepath.Dir(cands[i].Path), filepath.Dir(cands[j].Path)
		if di != dj {
			return dirIndex(s.cfg.Dirs, di) < dirIndex(s.cfg.Dirs, dj)
		}
		return cands[i].PID < cands[j].PID
	})
	out.Candidates = cands
	return out, nil
}

func dirIndex(dirs []string, dir string) int {
	for i, d := range dirs {
		if filepath.Clean(d) == dir {
			return i
		}
	}
	return len(dirs)
}
