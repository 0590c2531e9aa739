// Package applog is the applog collector: it follows application log files
// named by globs, through rotation and truncation, and counts the lines that
// match the documented VMA error rules as nic_app_log_events_total.
package applog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/internal/logrules"
)

// Config configures the applog collector.
type Config struct {
	// Globs select the log files, for example /var/log/vma/*.log (the
	// VMA_LOG_FILE paths of the applications).
	Globs []string
	// Rules is the rule table; usually logrules.Load(file, VMARules()).
	Rules *logrules.Engine
	// FromStart also counts the lines already in files that exist when the
	// collector starts. By default those are skipped (files can hold a long
	// history); files that appear later are always read from the start.
	FromStart bool
	// Filter selects files by path.
	Filter collector.NameFilter
	// TrimPrefix is removed from the paths used as file labels; the demo
	// host sets it to its temporary directory so its output is stable.
	TrimPrefix string
	// MaxSeries bounds the (file, event) combinations kept; default 1000.
	MaxSeries int
	// MaxReadPerPoll bounds the bytes read from one file in one poll so a
	// huge backlog cannot hold a poll past its timeout; the rest is read
	// in the next polls. Default 64 MiB.
	MaxReadPerPoll int64
}

// Collector counts application log lines that match the rule table, following
// files through rotation (rename and recreate) and truncation.
//
// Each poll reads what was appended since the last one. When the path
// names a new file (a different inode), the rest of the old file is read
// through the handle still open, then the new file from its start; lines
// written to the old file after that are not read, unless the globs also
// match the name it was rotated to: then it is followed under that name
// from where it was read, never again from its start. When a
// file is shorter than the offset read so far, it was truncated and is read
// again from its start. A copy-and-truncate rotation that lets the file
// grow past the old offset between two polls is not detectable by size;
// lines written in that window before the truncation are counted, those
// after it up to the old offset are missed.
type Collector struct {
	cfg Config
	log *zap.Logger

	mu      sync.Mutex
	started bool
	files   map[string]*tailFile
	counts  map[applogKey]uint64
	lines   map[string]uint64
	dropped uint64
}

type applogKey struct{ file, event string }

type tailFile struct {
	f       *os.File
	ino     uint64
	dev     uint64
	off     int64
	partial []byte
}

// maxLine bounds a line kept across reads; longer lines are cut.
const maxLine = 64 << 10

var (
	applogEventsDesc = exposition.MustNewDesc("nic_app_log_events_total",
		"Application log lines (for example VMA_LOG_FILE) that matched a rule, by file and event.",
		exposition.Counter, "file", "event")
	applogLinesDesc = exposition.MustNewDesc("nic_app_log_lines_total",
		"Lines read from an application log file, matched or not.", exposition.Counter, "file")
	applogDroppedDesc = exposition.MustNewDesc("nic_app_log_dropped_events_total",
		"Matching lines not counted because the number of (file, event) series reached its limit.", exposition.Counter)
)

// New returns an applog collector. It checks the glob patterns.
func New(cfg Config, log *zap.Logger) (*Collector, error) {
	for _, g := range cfg.Globs {
		if _, err := filepath.Match(g, ""); err != nil {
			return nil, fmt.Errorf("invalid --collector.applog.files pattern %q: %w", g, err)
		}
	}
	if cfg.MaxSeries <= 0 {
		cfg.MaxSeries = 1000
	}
	if cfg.MaxReadPerPoll <= 0 {
		cfg.MaxReadPerPoll = 64 << 20
	}
	return &Collector{
		cfg: cfg, log: log,
		files:  make(map[string]*tailFile),
		counts: make(map[applogKey]uint64),
		lines:  make(map[string]uint64),
	}, nil
}

// Name implements collector.Collector.
func (*Collector) Name() string { return "applog" }

var _ collector.Collector = (*Collector)(nil)

// Update implements collector.Collector.
func (a *Collector) Update(ctx context.Context, p *collector.Poll) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.cfg.Globs) == 0 {
		return fmt.Errorf("no --collector.applog.files given: %w", collector.ErrNoSource)
	}
	seen := make(map[string]bool)
	var paths []string
	for _, g := range a.cfg.Globs {
		matches, _ := filepath.Glob(g) // patterns were checked in New
		for _, m := range matches {
			if !seen[m] && a.cfg.Filter.Match(m) {
				seen[m] = true
				paths = append(paths, m)
			}
		}
	}
	sort.Strings(paths)
	startup := !a.started
	a.started = true

	// Files whose path no longer matches, or now names another file
	// (rotated by rename): read their rest through the open handle and
	// set them aside. If the globs also match the name a file was rotated
	// to, following that name goes on with the same handle instead of
	// reading the file again from its start and counting its lines twice.
	moved := make(map[fileKey]movedFile)
	for path, tf := range a.files {
		if seen[path] {
			if err := a.readFrom(path, tf); err != nil {
				continue // follow reports it
			}
			st, err := os.Stat(path)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				continue // follow reports it
			}
			if err == nil {
				if ino, dev := fileID(st); ino == tf.ino && dev == tf.dev {
					continue
				}
			}
		} else if err := a.readFrom(path, tf); err != nil {
			p.SourceError(path, err)
		}
		delete(a.files, path)
		key := fileKey{tf.ino, tf.dev}
		if _, dup := moved[key]; dup || key == (fileKey{}) {
			// No usable identity: finish the file now.
			a.flushPartial(path, tf)
			tf.f.Close()
			continue
		}
		moved[key] = movedFile{path: path, tf: tf}
	}
	for _, path := range paths {
		if ctx.Err() != nil {
			break
		}
		if err := a.follow(path, startup, moved); err != nil {
			p.SourceError(path, err)
		}
	}
	// Files set aside and not found under another name: finish them
	// through the open handle, which also gets the lines written between
	// the read above and the rename.
	for _, m := range moved {
		if err := a.readFrom(m.path, m.tf); err != nil {
			p.SourceError(m.path, err)
		}
		a.flushPartial(m.path, m.tf)
		m.tf.f.Close()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(paths) == 0 && len(a.counts) == 0 && len(a.lines) == 0 {
		return fmt.Errorf("no file matches %q: %w", a.cfg.Globs, collector.ErrNoSource)
	}
	a.render(p, len(paths))
	return nil
}

// fileKey identifies a file independently of its name.
type fileKey struct{ ino, dev uint64 }

// movedFile is an open file whose path no longer names it.
type movedFile struct {
	path string
	tf   *tailFile
}

// follow reads what is new in path. A file in moved (one already read
// under another name) goes on from where it was read.
func (a *Collector) follow(path string, startup bool, moved map[fileKey]movedFile) error {
	tf := a.files[path]
	if tf != nil {
		// Read the rest of the file we have open first: after a rename
		// rotation it holds the last lines the application wrote there.
		// Only then look at the path: a size taken before the read could be
		// smaller than the offset after it and look like a truncation.
		if err := a.readFrom(path, tf); err != nil {
			return err
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	ino, dev := fileID(st)
	if tf != nil {
		if tf.ino == ino && tf.dev == dev {
			if st.Size() < tf.off {
				// Truncated: read again from the start.
				a.flushPartial(path, tf)
				if _, err := tf.f.Seek(0, io.SeekStart); err != nil {
					return err
				}
				tf.off = 0
				return a.readFrom(path, tf)
			}
			return nil
		}
		// Rotated: lines may have reached the old file between the read
		// above and the rename; read them before letting it go.
		if err := a.readFrom(path, tf); err != nil {
			return err
		}
		a.flushPartial(path, tf)
		tf.f.Close()
		delete(a.files, path)
	}
	if m, ok := moved[fileKey{ino, dev}]; ok {
		delete(moved, fileKey{ino, dev})
		a.files[path] = m.tf
		return a.readFrom(path, m.tf)
	}
	// Only regular files: opening a named pipe blocks until a writer
	// comes, and reading one blocks while the writer is idle, which would
	// hold the poll (and every later one) forever. O_NONBLOCK keeps the
	// open from blocking if the path changes to a pipe after the Stat.
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file (%s)", path, st.Mode().Type())
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	fst, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	if !fst.Mode().IsRegular() {
		f.Close()
		return fmt.Errorf("%s is not a regular file (%s)", path, fst.Mode().Type())
	}
	tf = &tailFile{f: f}
	tf.ino, tf.dev = fileID(fst)
	if startup && !a.cfg.FromStart {
		if tf.off, err = f.Seek(0, io.SeekEnd); err != nil {
			f.Close()
			return err
		}
	}
	a.files[path] = tf
	return a.readFrom(path, tf)
}

func fileID(st os.FileInfo) (ino, dev uint64) {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return s.Ino, uint64(s.Dev) // Dev is an int32 on darwin
	}
	return 0, 0
}

// readFrom reads tf from its offset to the end (at most MaxReadPerPoll
// bytes) and counts the complete lines.
func (a *Collector) readFrom(path string, tf *tailFile) error {
	buf := make([]byte, 64<<10)
	var read int64
	for read < a.cfg.MaxReadPerPoll {
		n, err := tf.f.Read(buf)
		if n > 0 {
			read += int64(n)
			tf.off += int64(n)
			a.consume(path, tf, buf[:n])
		}
		if errors.Is(err, io.EOF) || n == 0 && err == nil {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (a *Collector) consume(path string, tf *tailFile, b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			room := maxLine - len(tf.partial)
			tf.partial = append(tf.partial, b[:min(len(b), max(room, 0))]...)
			return
		}
		line := b[:i]
		if len(tf.partial) > 0 {
			room := maxLine - len(tf.partial)
			tf.partial = append(tf.partial, line[:min(len(line), max(room, 0))]...)
			line = tf.partial
		}
		a.line(path, string(line))
		tf.partial = tf.partial[:0]
		b = b[i+1:]
	}
}

// flushPartial counts a last line without a newline, at the end of a
// rotated or truncated file.
func (a *Collector) flushPartial(path string, tf *tailFile) {
	if len(tf.partial) > 0 {
		a.line(path, string(tf.partial))
		tf.partial = tf.partial[:0]
	}
}

func (a *Collector) line(path, line string) {
	if _, ok := a.lines[path]; ok || len(a.lines) < a.cfg.MaxSeries {
		a.lines[path]++
	}
	m, ok := a.cfg.Rules.Match(line)
	if !ok {
		return
	}
	key := applogKey{file: path, event: m.Rule.Event}
	if _, ok := a.counts[key]; !ok && len(a.counts) >= a.cfg.MaxSeries {
		if a.dropped == 0 {
			a.log.Warn("too many application log event series; further ones are dropped", zap.Int("limit", a.cfg.MaxSeries))
		}
		a.dropped++
		return
	}
	a.counts[key]++
}

func (a *Collector) label(path string) string {
	if a.cfg.TrimPrefix != "" && strings.HasPrefix(path, a.cfg.TrimPrefix) {
		return path[len(a.cfg.TrimPrefix):]
	}
	return path
}

func (a *Collector) render(p *collector.Poll, files int) {
	keys := make([]applogKey, 0, len(a.counts))
	for k := range a.counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].file != keys[j].file {
			return keys[i].file < keys[j].file
		}
		return keys[i].event < keys[j].event
	})
	for _, k := range keys {
		p.Add(applogEventsDesc, float64(a.counts[k]), a.label(k.file), k.event)
	}
	paths := make([]string, 0, len(a.lines))
	for path := range a.lines {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	for _, path := range paths {
		p.Add(applogLinesDesc, float64(a.lines[path]), a.label(path))
	}
	p.Add(applogDroppedDesc, float64(a.dropped))
	p.SetDevices(files)
}
