package vma

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/vmastats"
	"github.com/nic-exporter/nic_exporter/xliostats"
)

// TestLoadedMatchesDirectory checks that the collectors export the same
// series from files given as Config.Loaded (decoded from their bytes, as
// nic_exporter diagnose gives a bundle's) as from the same files in a
// statistics directory, for the libvma and libxlio golden files, and
// that the name filter applies to them too.
func TestLoadedMatchesDirectory(t *testing.T) {
	proc := func(pid int) vmastats.Process {
		return vmastats.Process{PID: pid, Comm: "gen_golden", StartTicks: 1, Start: time.Date(2026, 1, 5, 6, 30, 0, 0, time.UTC)}
	}
	read := func(t *testing.T, p string) []byte {
		t.Helper()
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	exclude, err := collector.NewNameFilter("collector.vma.process", "", "gen_golden")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		fromDir   func(dir string, f collector.NameFilter) collector.Collector
		fromBytes func(name string, b []byte, f collector.NameFilter) (collector.Collector, error)
		data      []byte
		prefix    string
		pid       int
	}{
		{"libvma 9.8.84", func(dir string, f collector.NameFilter) collector.Collector {
			return New(Config{Dirs: []string{dir}, Settle: time.Nanosecond, Liveness: fixedLiveness{proc(20795)}, Filter: f}, zap.NewNop())
		}, func(name string, b []byte, f collector.NameFilter) (collector.Collector, error) {
			s, err := vmastats.Parse(b)
			if err != nil {
				return nil, err
			}
			l := &vmastats.Loaded{Stats: s, Process: proc(20795), Handshake: true}
			return New(Config{Filter: f, Loaded: func() map[string]*vmastats.Loaded { return map[string]*vmastats.Loaded{name: l} }}, zap.NewNop()), nil
		}, read(t, filepath.Join(sharedVMADir(t), "golden_9.8.84_fd4.bin")), vmastats.FilePrefix, 20795},
		{"libxlio 3.70.2", func(dir string, f collector.NameFilter) collector.Collector {
			return NewXLIO(XLIOConfig{Dirs: []string{dir}, Settle: time.Nanosecond, Liveness: fixedLiveness{proc(4711)}, Filter: f}, zap.NewNop())
		}, func(name string, b []byte, f collector.NameFilter) (collector.Collector, error) {
			s, err := xliostats.Parse(b)
			if err != nil {
				return nil, err
			}
			l := &xliostats.Loaded{Stats: s, Process: proc(4711), Handshake: true}
			return NewXLIO(XLIOConfig{Filter: f, Loaded: func() map[string]*xliostats.Loaded { return map[string]*xliostats.Loaded{name: l} }}, zap.NewNop()), nil
		}, read(t, filepath.Join(xlioGoldenDir, "3.70.2", "xliostat.bin")), xliostats.FilePrefix, 4711},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := tc.prefix + strconv.Itoa(tc.pid)
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, name), tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			want, _, err := poll(t, tc.fromDir(dir, collector.NameFilter{}))
			if err != nil {
				t.Fatal(err)
			}
			// The handshake incremented the reader counter in the file; the
			// bytes given are the file's as a bundle has them after it.
			c, err := tc.fromBytes(name, read(t, filepath.Join(dir, name)), collector.NameFilter{})
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := poll(t, c)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("series from the bytes differ from the directory's:\n--- bytes\n%s\n--- directory\n%s", got, want)
			}
			if !strings.Contains(got, `_files{state="live"} 1`) {
				t.Errorf("the file is not live:\n%s", got)
			}
			c, err = tc.fromBytes(name, tc.data, exclude)
			if err != nil {
				t.Fatal(err)
			}
			got, _, err = poll(t, c)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(got, "process_info{") || !strings.Contains(got, `_files{state="live"} 0`) {
				t.Errorf("the filter excluded the process, yet:\n%s", got)
			}
		})
	}
}
