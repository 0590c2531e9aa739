package devlinkhealth

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCaptureStorePrunesOnlyItsOwn fills the capture directory with
// files the exporter did not write: an operator's evidence kept beside the
// captures under the same suffix (older, and first by name), and a large
// planted file whose name sorts after every capture. Pruning must leave
// both alone, never remove the file it has just written, keep at most
// MaxFiles of its own files, and remove its own oldest first.
func TestCaptureStorePrunesOnlyItsOwn(t *testing.T) {
	dir := t.TempDir()
	foreign := map[string]int{
		"0-operator-kept.devlink.json":                   100,
		"20200101T000000.000000000Z-0001_x.devlink.json": 100,     // old name pattern, not this exporter's prefix
		"zzzz-planted.devlink.json":                      4 << 10, // larger than MaxBytes, sorts last
	}
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for name, size := range foreign {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.Repeat("x", size)), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	clock := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	s := newCaptureStore(CaptureConfig{Dir: dir, MaxFiles: 2, MaxBytes: 2 << 10, Now: func() time.Time {
		clock = clock.Add(time.Second)
		return clock
	}})
	var written []string
	for i := 0; i < 4; i++ {
		p, err := s.write(&Evidence{Device: "pci/0000:08:00.1", Reporter: fmt.Sprintf("r%d", i)})
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("write %d: the evidence just written is gone: %v", i, err)
		}
		written = append(written, filepath.Base(p))
	}
	for name := range foreign {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("a file the exporter did not write was removed: %v", err)
		}
	}
	for i, name := range written {
		_, err := os.Stat(filepath.Join(dir, name))
		if kept := i >= len(written)-2; kept != (err == nil) {
			t.Errorf("capture %d (%s): kept %v, want %v (the two newest)", i, name, err == nil, kept)
		}
	}

	// A byte bound smaller than one capture keeps only the newest one,
	// and still nothing of the operator's.
	s.cfg.MaxBytes = 10
	p, err := s.write(&Evidence{Device: "pci/0000:08:00.1", Reporter: "big"})
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ours []string
	for _, e := range entries {
		if _, ok := foreign[e.Name()]; !ok {
			ours = append(ours, e.Name())
		}
	}
	if len(ours) != 1 || ours[0] != filepath.Base(p) {
		t.Errorf("captures left with a 10 byte bound: %v, want only %s", ours, filepath.Base(p))
	}
	if len(entries)-len(ours) != len(foreign) {
		t.Errorf("%d of the %d foreign files left", len(entries)-len(ours), len(foreign))
	}
}
