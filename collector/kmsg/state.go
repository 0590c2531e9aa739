package kmsg

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/internal/errclass"
	"github.com/nic-exporter/nic_exporter/internal/safefile"
)

// The state file (Config.StateFile) keeps the counters of the collector
// across restarts of the exporter, so that records the kernel rotated out
// of its buffer while the exporter was down are not lost from the totals.
// It is one JSON object, written whole and atomically at each poll that
// follows a change:
//
//	{
//	  "format": "nic_exporter/kmsg-state",   // fixed; anything else is foreign
//	  "version": 1,                         // of this layout
//	  "boot_id": "…",                       // /proc/sys/kernel/random/boot_id
//	  "last_seq": 150,                      // sequence number of the last record counted
//	  "records": 150, "overruns": 0, "unparsable": 0, "dropped": 0,
//	  "events": [                           // sorted by driver, device, event
//	    {"driver": "ena", "device": "ens5", "event": "ena_reset_triggered",
//	     "count": 3, "last": "2026-11-25T11:00:00Z"}
//	  ]
//	}
//
// The totals are those of the records up to and including last_seq, so a
// restarted exporter with the same boot id restores them and counts only
// the records after last_seq.
const (
	stateFormat  = "nic_exporter/kmsg-state"
	stateVersion = 1
	// maxStateSize bounds the state file read and written: the default
	// 1000 series take about 150 KiB.
	maxStateSize = 4 << 20
)

// ErrStateInvalid says a state file could not be used: it does not parse,
// is of another format or version, or holds impossible values.
var ErrStateInvalid = fmt.Errorf("invalid kernel log state file: %w", errclass.ErrParse)

// stateFile is the JSON layout of the state file.
type stateFile struct {
	Format     string       `json:"format"`
	Version    int          `json:"version"`
	BootID     string       `json:"boot_id"`
	LastSeq    uint64       `json:"last_seq"`
	Records    uint64       `json:"records"`
	Overruns   uint64       `json:"overruns"`
	Unparsable uint64       `json:"unparsable"`
	Dropped    uint64       `json:"dropped"`
	Events     []stateEvent `json:"events"`
}

// stateEvent is the total of one (driver, device, event) series.
type stateEvent struct {
	Driver string    `json:"driver"`
	Device string    `json:"device"`
	Event  string    `json:"event"`
	Count  uint64    `json:"count"`
	Last   time.Time `json:"last"`
}

// encodeState renders s as the state file's bytes.
func encodeState(s *stateFile) ([]byte, error) {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	b = append(b, '\n')
	if len(b) > maxStateSize {
		return nil, fmt.Errorf("kernel log state of %d bytes: %w: more than %d bytes", len(b), safefile.ErrTooLarge, maxStateSize)
	}
	return b, nil
}

// parseState parses and checks the bytes of a state file.
func parseState(b []byte) (*stateFile, error) {
	var s stateFile
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&s); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStateInvalid, err)
	}
	if d.More() {
		return nil, fmt.Errorf("%w: data after the object", ErrStateInvalid)
	}
	switch {
	case s.Format != stateFormat:
		return nil, fmt.Errorf("%w: format %q, want %q", ErrStateInvalid, s.Format, stateFormat)
	case s.Version != stateVersion:
		return nil, fmt.Errorf("%w: version %d, want %d", ErrStateInvalid, s.Version, stateVersion)
	case s.BootID == "":
		return nil, fmt.Errorf("%w: no boot_id", ErrStateInvalid)
	}
	seen := make(map[kmsgKey]bool, len(s.Events))
	for _, e := range s.Events {
		k := kmsgKey{e.Driver, e.Device, e.Event}
		if e.Event == "" || e.Count == 0 || seen[k] {
			return nil, fmt.Errorf("%w: event %+v empty, zero or repeated", ErrStateInvalid, e)
		}
		seen[k] = true
	}
	return &s, nil
}

// readState reads the state file at path. A missing file is returned as
// is (fs.ErrNotExist); one that is not a regular file or too large is an
// error.
func readState(path string) (*stateFile, error) {
	b, err := safefile.ReadRegular(path, maxStateSize)
	if err != nil {
		return nil, err
	}
	s, err := parseState(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// writeState replaces the file at path with b atomically: a temporary
// file in the same directory, written, synced and renamed over path,
// then the directory synced. A crash leaves either the old or the new
// file at path, and at worst a temporary file that nothing reads.
func writeState(path string, b []byte) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	// CreateTemp makes the file with mode 0600 and O_EXCL.
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing the kernel log state %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
			err = fmt.Errorf("writing the kernel log state %s: %w", path, err)
		}
	}()
	if _, err = f.Write(b); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// ReadBootID returns a BootID function that reads the kernel's boot id
// from procfs mounted at procPath (normally /proc).
func ReadBootID(procPath string) func() (string, error) {
	return func() (string, error) {
		path := filepath.Join(procPath, "sys/kernel/random/boot_id")
		b, err := safefile.ReadRegular(path, 128)
		if err != nil {
			return "", fmt.Errorf("reading the boot id: %w", err)
		}
		id := strings.TrimSpace(string(b))
		if id == "" {
			return "", fmt.Errorf("%s is empty: %w", path, errclass.ErrParse)
		}
		return id, nil
	}
}

// restoreState loads the state file once, before the first open of the
// device. It restores the totals when the file is from this boot; in
// every other case it says why once and the records in the buffer are
// replayed (or skipped) as Replay says. k.stateErr keeps an error to
// count at the next poll.
func (k *Collector) restoreState() {
	if k.cfg.StateFile == "" || k.stateLoaded {
		return
	}
	k.stateLoaded = true
	log := k.log.With(zap.String("state_file", k.cfg.StateFile))
	id, err := k.bootID()
	if err != nil {
		log.Warn("the boot id is unknown; the kernel log state file is neither read nor written", zap.Error(err))
		k.stateErr = err
		return
	}
	s, err := readState(k.cfg.StateFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		log.Info("no kernel log state file yet; counting from the kernel buffer")
		return
	case err != nil:
		log.Warn("the kernel log state file cannot be used and is ignored; counting from the kernel buffer, the next save replaces it", zap.Error(err))
		k.stateErr = err
		return
	case s.BootID != id:
		log.Info("the kernel log state file is from another boot and is ignored; counting from the kernel buffer",
			zap.String("file_boot_id", s.BootID), zap.String("boot_id", id))
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.records, k.overruns, k.unparsable, k.dropped = s.Records, s.Overruns, s.Unparsable, s.Dropped
	for _, e := range s.Events {
		if len(k.counts) >= k.cfg.MaxSeries {
			k.dropped += e.Count
			continue
		}
		k.counts[kmsgKey{e.Driver, e.Device, e.Event}] = &kmsgCount{n: e.Count, last: e.Last}
	}
	k.lastSeq, k.haveSeq, k.resumed = s.LastSeq, true, true
	k.savedGen = k.gen
	log.Info("restored the kernel log counters; counting the records after the saved one",
		zap.Uint64("last_seq", s.LastSeq), zap.Int("series", len(k.counts)))
}

// bootID returns the boot id of the running kernel.
func (k *Collector) bootID() (string, error) {
	k.bootIDOnce.Do(func() {
		if k.cfg.BootID == nil {
			k.bootIDErr = errors.New("no boot id source configured")
			return
		}
		k.bootIDVal, k.bootIDErr = k.cfg.BootID()
	})
	return k.bootIDVal, k.bootIDErr
}

// snapshotState returns the state to save, or nil if nothing changed
// since the last save.
func (k *Collector) snapshotState(bootID string) (*stateFile, uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.gen == k.savedGen || !k.haveSeq {
		return nil, 0
	}
	s := &stateFile{
		Format: stateFormat, Version: stateVersion, BootID: bootID, LastSeq: k.lastSeq,
		Records: k.records, Overruns: k.overruns, Unparsable: k.unparsable, Dropped: k.dropped,
		Events: make([]stateEvent, 0, len(k.counts)),
	}
	for key, c := range k.counts {
		s.Events = append(s.Events, stateEvent{Driver: key.driver, Device: key.device, Event: key.event, Count: c.n, Last: c.last.UTC()})
	}
	sort.Slice(s.Events, func(i, j int) bool {
		a, b := s.Events[i], s.Events[j]
		if a.Driver != b.Driver {
			return a.Driver < b.Driver
		}
		if a.Device != b.Device {
			return a.Device < b.Device
		}
		return a.Event < b.Event
	})
	return s, k.gen
}

// saveState writes the state file if the counters changed since the last
// save. A failure is logged when it differs from the previous one and
// returned to be counted as a source error; the next poll tries again.
func (k *Collector) saveState() error {
	if k.cfg.StateFile == "" {
		return nil
	}
	k.saveMu.Lock()
	defer k.saveMu.Unlock()
	id, err := k.bootID()
	if err != nil {
		return nil // logged and counted once by restoreState
	}
	s, gen := k.snapshotState(id)
	if s == nil {
		return nil
	}
	b, err := encodeState(s)
	if err == nil {
		err = writeState(k.cfg.StateFile, b)
	}
	if err != nil {
		// The message names a random temporary file; the reason is stable.
		if reason := errclass.Reason(err); reason != k.lastSaveErr {
			k.lastSaveErr = reason
			k.log.Warn("saving the kernel log state failed; retrying at the next poll", zap.Error(err))
		}
		return err
	}
	if k.lastSaveErr != "" {
		k.lastSaveErr = ""
		k.log.Info("saved the kernel log state again", zap.String("state_file", k.cfg.StateFile))
	}
	k.mu.Lock()
	k.savedGen = gen
	k.mu.Unlock()
	return nil
}
