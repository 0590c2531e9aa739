package vma

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/vmastats"
)

// File states of nic_vma_files and nic_xlio_files.
const (
	vmaLive        = "live"
	vmaStale       = "stale"
	vmaUnsupported = "unsupported"
	vmaRefused     = "refused"
	vmaFailed      = "error"
	vmaSkipped     = "skipped"
)

var vmaStates = []string{vmaLive, vmaStale, vmaUnsupported, vmaRefused, vmaFailed, vmaSkipped}

// fileMeta is what the file loop needs of one loaded file, whatever the
// library that wrote it.
type fileMeta struct {
	proc vmastats.Process
	info vmastats.FileInfo
	// readerCounter is the file's reader_counter.
	readerCounter int32
}

// tracked is the state kept for one file across polls: the process it
// belongs to and the library-specific aggregation state.
type tracked[P any] struct {
	pid        int
	startTicks uint64
	// readerCounter is the file's reader_counter at the last poll.
	// Readers only increment it and the library only zeroes it when it
	// (re)creates the file, so a lower value means the library started
	// over within the same process (after an exec) with all counters at 0.
	readerCounter int32
	state         *P
}

// fileLoop is the part of a collector that finds statistics files with
// bounded work, opens at most maxFiles of them per poll (the files of
// processes exported at the last poll first, the others in turns),
// classifies every failure into a file state, and keeps per-process state
// across polls. The vma and xlio collectors share it; they differ in the
// loader and in what they do with a loaded file. L is the loaded file, P
// the per-process state.
type fileLoop[L, P any] struct {
	log      *zap.Logger
	what     string // "libvma", "libxlio": for log lines
	maxFiles int
	settle   time.Duration
	liveness vmastats.Liveness
	filter   collector.NameFilter
	// load reads one file; tests replace it to count the files opened.
	load func(vmastats.Candidate, vmastats.LoadOptions) (L, error)
	// noHandshake loads read-only.
	noHandshake bool
	meta        func(L) fileMeta
	// unsupported reports whether an error means an unknown or
	// inconsistent layout.
	unsupported func(error) bool
	fresh       func(vmastats.Process) *P
	// use folds a loaded file into its state and renders its series.
	use func(p *collector.Poll, l L, st *P)

	// scan finds the candidates: a vmastats.Scanner's Scan, or the
	// listing of files loaded elsewhere (loadedSource).
	scan func(known []vmastats.Candidate) (vmastats.Scan, error)
	// lastScan is what the last poll's scan did, for tests.
	lastScan vmastats.Scan
	procs    map[string]*tracked[P] // by file path
	// turn rotates the files of processes not exported at the last poll,
	// so that past maxFiles each gets its turn.
	turn int
}

// vmaFileID is a file's device and inode.
type vmaFileID struct{ dev, ino uint64 }

// vmaExported is the file a process was exported from in one poll.
type vmaExported struct {
	id   vmaFileID
	path string
}

// poll runs one poll and returns the number of files in each state. The
// error is collector.ErrNoSource when no statistics directory exists.
func (f *fileLoop[L, P]) poll(ctx context.Context, p *collector.Poll) (map[string]int, error) {
	known := make([]vmastats.Candidate, 0, len(f.procs))
	for path, st := range f.procs {
		known = append(known, vmastats.Candidate{Path: path, PID: st.pid})
	}
	scan, err := f.scan(known)
	f.lastScan = scan
	if errors.Is(err, vmastats.ErrNoDir) {
		return nil, fmt.Errorf("%w: %v", collector.ErrNoSource, err)
	}
	if err != nil {
		return nil, err
	}
	cands := scan.Candidates
	counts := make(map[string]int, len(vmaStates))
	// keep lists the files whose state survives this poll: live ones, and
	// those that failed for a reason that may pass (a read that raced the
	// writer), so one bad poll does not drop the totals of closed sockets.
	keep := make(map[string]bool, len(cands))
	exported := make(map[int]vmaExported, len(cands))
	order, nKnown := f.schedule(cands)
	counts[vmaStale] += scan.Stale
	if len(order) > f.maxFiles {
		for _, c := range order[f.maxFiles:] {
			if f.procs[c.Path] != nil {
				keep[c.Path] = true // not read this poll; its totals stay
			}
		}
		counts[vmaSkipped] = len(order) - f.maxFiles
		f.turn += f.maxFiles - min(nKnown, f.maxFiles)
		order = order[:f.maxFiles]
	}
	for _, c := range order {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		prev := f.procs[c.Path]
		opts := vmastats.LoadOptions{Liveness: f.liveness, NoHandshake: f.noHandshake, Accept: func(pr vmastats.Process) bool { return f.filter.Match(pr.Comm) }}
		if prev == nil {
			opts.Settle = f.settle
		}
		l, err := f.load(c, opts)
		state := vmaLive
		switch {
		case errors.Is(err, vmastats.ErrFiltered):
			continue
		case errors.Is(err, vmastats.ErrStale):
			// Left behind by a process that is gone; ignored, never deleted.
			counts[vmaStale]++
			f.log.Debug("ignoring stale "+f.what+" statistics file", zap.String("path", c.Path), zap.Error(err))
			continue
		case errors.Is(err, vmastats.ErrRefused):
			state = vmaRefused
		case err != nil && f.unsupported(err):
			state = vmaUnsupported
		case err != nil:
			state = vmaFailed
		}
		if err != nil {
			counts[state]++
			p.SourceError(c.Path, err)
			keep[c.Path] = true
			continue
		}
		m := f.meta(l)
		// One process is exported once. The same file under a second name
		// (a directory listed twice or through a symlink) is skipped; a
		// second file the process maps is refused, since its series would
		// repeat the first file's labels.
		id := vmaFileID{m.info.Dev, m.info.Ino}
		if first, ok := exported[m.proc.PID]; ok {
			if first.id != id {
				counts[vmaRefused]++
				p.SourceError(c.Path, fmt.Errorf("%w: %s: process %d is already exported from %s", vmastats.ErrRefused, c.Path, m.proc.PID, first.path))
			}
			continue
		}
		exported[m.proc.PID] = vmaExported{id: id, path: c.Path}
		counts[vmaLive]++
		keep[c.Path] = true
		if prev == nil || prev.pid != m.proc.PID || prev.startTicks != m.proc.StartTicks || m.readerCounter < prev.readerCounter {
			prev = &tracked[P]{pid: m.proc.PID, startTicks: m.proc.StartTicks, state: f.fresh(m.proc)}
			f.procs[c.Path] = prev
		}
		prev.readerCounter = m.readerCounter
		f.use(p, l, prev.state)
	}
	for path := range f.procs {
		if !keep[path] {
			delete(f.procs, path)
		}
	}
	return counts, nil
}

// schedule orders the candidates of one poll for opening: the files
// exported at the last poll first (known of them), then the others,
// rotated by f.turn. The scanner has already left out files of pids that
// name no process.
func (f *fileLoop[L, P]) schedule(cands []vmastats.Candidate) (order []vmastats.Candidate, known int) {
	var fresh []vmastats.Candidate
	for _, c := range cands {
		if f.procs[c.Path] != nil {
			order = append(order, c)
		} else {
			fresh = append(fresh, c)
		}
	}
	known = len(order)
	if len(fresh) > 0 {
		k := f.turn % len(fresh)
		order = append(append(order, fresh[k:]...), fresh[:k]...)
	}
	return order, known
}

// loadedSource serves statistics files read and decoded elsewhere (a
// support bundle's) to a file loop: a scan lists them by name, in name
// order, and a load returns the file of that name if the filter accepts
// its process. Nothing on the host is read. files is asked once per scan.
type loadedSource[L any] struct {
	files func() map[string]L
	proc  func(L) vmastats.Process
	cur   map[string]L
}

func (s *loadedSource[L]) scan([]vmastats.Candidate) (vmastats.Scan, error) {
	s.cur = s.files()
	out := vmastats.Scan{Candidates: make([]vmastats.Candidate, 0, len(s.cur)), PassComplete: true}
	for name, l := range s.cur {
		out.Candidates = append(out.Candidates, vmastats.Candidate{Path: name, PID: s.proc(l).PID})
	}
	sort.Slice(out.Candidates, func(i, j int) bool { return out.Candidates[i].Path < out.Candidates[j].Path })
	return out, nil
}

func (s *loadedSource[L]) load(c vmastats.Candidate, opts vmastats.LoadOptions) (L, error) {
	l, ok := s.cur[c.Path]
	if !ok {
		var zero L
		return zero, fmt.Errorf("%w: %s vanished", vmastats.ErrStale, c.Path)
	}
	if opts.Accept != nil && !opts.Accept(s.proc(l)) {
		var zero L
		return zero, vmastats.ErrFiltered
	}
	return l, nil
}
