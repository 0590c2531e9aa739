package devlinkhealth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nic-exporter/nic_exporter/devlink"
)

// CaptureConfig configures devlink evidence capture: when a health
// reporter goes to error, its attributes, diagnose output and dump are
// written as one JSON file, so the evidence survives the cold reboot the
// runbook asks for.
type CaptureConfig struct {
	// Dir is the directory evidence files are written to; capture is off
	// when it is empty. It is created if missing.
	Dir string
	// MaxFiles bounds the number of evidence files; the oldest are
	// removed first. Only files this exporter wrote (named as
	// captureName recognises) are counted or removed. Default 100.
	MaxFiles int
	// MaxBytes bounds the total size of the evidence files; the oldest
	// are removed first, but the newest file is always kept. Default
	// 64 MiB.
	MaxBytes int64
	// Now returns the time used in file names; default time.Now.
	Now func() time.Time
}

// Evidence is the content of one evidence file.
type Evidence struct {
	Time          time.Time      `json:"time"`
	Trigger       string         `json:"trigger"` // "event" or "poll"
	Device        string         `json:"device"`
	Port          *uint32        `json:"port,omitempty"`
	Reporter      string         `json:"reporter"`
	Attributes    reporterJSON   `json:"attributes"`
	Diagnose      devlink.Object `json:"diagnose,omitempty"`
	DiagnoseError string         `json:"diagnose_error,omitempty"`
	Dump          devlink.Object `json:"dump,omitempty"`
	DumpError     string         `json:"dump_error,omitempty"`
}

type reporterJSON struct {
	State                 string     `json:"state,omitempty"`
	ErrorCount            *uint64    `json:"error_count,omitempty"`
	RecoverCount          *uint64    `json:"recover_count,omitempty"`
	GracefulPeriodSeconds *float64   `json:"graceful_period_seconds,omitempty"`
	AutoRecover           *bool      `json:"auto_recover,omitempty"`
	AutoDump              *bool      `json:"auto_dump,omitempty"`
	LastDump              *time.Time `json:"last_dump,omitempty"`
}

// collectEvidence reads a reporter's diagnose output and dump. Reporters
// without those operations answer EOPNOTSUPP, which is recorded as
// "not supported" rather than as a failure.
func collectEvidence(ctx context.Context, src Source, r devlink.HealthReporter, trigger string) *Evidence {
	ev := &Evidence{
		Trigger:  trigger,
		Device:   r.Handle.String(),
		Port:     r.Port,
		Reporter: r.Name,
		Attributes: reporterJSON{
			ErrorCount: r.ErrorCount, RecoverCount: r.RecoverCount,
			AutoRecover: r.AutoRecover, AutoDump: r.AutoDump, LastDump: r.LastDump,
		},
	}
	if r.State != nil {
		ev.Attributes.State = r.State.String()
	}
	if r.GracefulPeriod != nil {
		s := r.GracefulPeriod.Seconds()
		ev.Attributes.GracefulPeriodSeconds = &s
	}
	describe := func(err error) string {
		if errors.Is(err, errors.ErrUnsupported) {
			return "not supported by the driver"
		}
		return err.Error()
	}
	if o, err := src.Diagnose(ctx, r.ReporterID); err != nil {
		ev.DiagnoseError = describe(err)
	} else {
		ev.Diagnose = o
	}
	if o, err := src.Dump(ctx, r.ReporterID); err != nil {
		ev.DumpError = describe(err)
	} else {
		ev.Dump = o
	}
	return ev
}

// captureStore writes evidence files and keeps the directory within its
// bounds.
type captureStore struct {
	cfg CaptureConfig
	mu  sync.Mutex
	seq uint64
}

func newCaptureStore(cfg CaptureConfig) *captureStore {
	if cfg.MaxFiles <= 0 {
		cfg.MaxFiles = 100
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = 64 << 20
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &captureStore{cfg: cfg}
}

// Evidence file names are capturePrefix, the UTC time (captureTime), a
// dash, a four-digit sequence number, "_<device>_<reporter>" and
// captureSuffix. Only files whose names have this form are ever removed
// from the directory: an operator's own *.devlink.json kept there, or
// anything else, is neither counted nor removed.
const (
	capturePrefix = "nic_exporter-"
	captureTime   = "20060102T150405.000000000Z"
	captureSuffix = ".devlink.json"
)

// captureName returns the time and sequence number of an evidence file
// this exporter wrote, and false for any other name.
func captureName(name string) (time.Time, int, bool) {
	rest, ok := strings.CutPrefix(name, capturePrefix)
	if !ok || !strings.HasSuffix(rest, captureSuffix) || len(rest) < len(captureTime)+6 {
		return time.Time{}, 0, false
	}
	at, err := time.Parse(captureTime, rest[:len(captureTime)])
	if err != nil {
		return time.Time{}, 0, false
	}
	rest = rest[len(captureTime):]
	if rest[0] != '-' || rest[5] != '_' {
		return time.Time{}, 0, false
	}
	seq := 0
	for _, c := range rest[1:5] {
		if c < '0' || c > '9' {
			return time.Time{}, 0, false
		}
		seq = seq*10 + int(c-'0')
	}
	return at, seq, true
}

// write stores ev and returns the file's path.
func (s *captureStore) write(ev *Evidence) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Now().UTC()
	ev.Time = now
	b, err := json.MarshalIndent(ev, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encoding evidence: %w", err)
	}
	// The evidence holds firmware and driver internals: the directory
	// is private to the exporter, like the files (os.CreateTemp: 0600).
	if err := os.MkdirAll(s.cfg.Dir, 0o700); err != nil {
		return "", fmt.Errorf("creating the capture directory: %w", err)
	}
	s.seq++
	name := fmt.Sprintf("%s%s-%04d_%s_%s%s", capturePrefix, now.Format(captureTime), s.seq%10000,
		sanitize(ev.Device+portSuffix(ev.Port)), sanitize(ev.Reporter), captureSuffix)
	path := filepath.Join(s.cfg.Dir, name)
	tmp, err := os.CreateTemp(s.cfg.Dir, ".capture-*")
	if err != nil {
		return "", fmt.Errorf("writing evidence: %w", err)
	}
	_, werr := tmp.Write(append(b, '\n'))
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("writing evidence: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("writing evidence: %w", err)
	}
	return path, s.prune(name)
}

// prune removes the oldest evidence files this exporter wrote (by the
// time in their names) until they are within the bounds. Other files are
// not counted and never removed, and neither is just, the file just
// written, whatever the bounds.
func (s *captureStore) prune(just string) error {
	entries, err := os.ReadDir(s.cfg.Dir)
	if err != nil {
		return fmt.Errorf("listing the capture directory: %w", err)
	}
	type file struct {
		name string
		at   time.Time
		seq  int
		size int64
	}
	var files []file
	var total int64
	for _, e := range entries {
		at, seq, ok := captureName(e.Name())
		if !ok || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		total += info.Size()
		if e.Name() == just {
			continue // counted, never removed
		}
		files = append(files, file{e.Name(), at, seq, info.Size()})
	}
	sort.Slice(files, func(i, j int) bool {
		a, b := files[i], files[j]
		if !a.at.Equal(b.at) {
			return a.at.Before(b.at)
		}
		if a.seq != b.seq {
			return a.seq < b.seq
		}
		return a.name < b.name
	})
	var errs []error
	for len(files) > 0 && (len(files)+1 > s.cfg.MaxFiles || total > s.cfg.MaxBytes) {
		if err := os.Remove(filepath.Join(s.cfg.Dir, files[0].name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
		total -= files[0].size
		files = files[1:]
	}
	return errors.Join(errs...)
}

func portSuffix(p *uint32) string {
	if p == nil {
		return ""
	}
	return fmt.Sprintf("/%d", *p)
}

// sanitize makes s safe as part of a file name.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-':
			return r
		}
		return '_'
	}, s)
}
