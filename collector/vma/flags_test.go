package vma_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nic-exporter/nic_exporter/collector/collectortest"
	"github.com/nic-exporter/nic_exporter/collector/vma"
)

// TestFlags parses the vma collector's own flags into its fields and
// Config, and checks their paths.
func TestFlags(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	for name, tt := range map[string]struct {
		args      []string
		dirs      []string
		perSocket bool
		paths     string // substring of CheckPaths' error; empty: none
	}{
		"defaults":    {dirs: []string{"/tmp"}},
		"given":       {args: []string{"--collector.vma.stats-dir=" + dir, "--collector.vma.per-socket"}, dirs: []string{dir}, perSocket: true},
		"missing dir": {args: []string{"--collector.vma.stats-dir=" + dir, "--collector.vma.stats-dir=" + missing}, dirs: []string{dir, missing}, paths: "--collector.vma.stats-dir: "},
	} {
		t.Run(name, func(t *testing.T) {
			f := collectortest.ParseFlags(t, vma.RegisterFlags, tt.args...)
			if !slices.Equal(f.Dirs, tt.dirs) {
				t.Errorf("dirs %q, want %q", f.Dirs, tt.dirs)
			}
			if err := f.CheckPaths(); tt.paths == "" && err != nil || tt.paths != "" && (err == nil || !strings.Contains(err.Error(), tt.paths)) {
				t.Errorf("CheckPaths() = %v, want %q", err, tt.paths)
			}
			c, err := f.Config(vma.Config{Dirs: []string{"/demo"}, MaxFiles: 3})
			if err != nil {
				t.Fatal(err)
			}
			if c.PerSocket != tt.perSocket || !slices.Equal(c.Dirs, []string{"/demo"}) || c.MaxFiles != 3 {
				t.Errorf("Config(): per socket %t, dirs %q, max files %d; want %t and the given /demo, 3", c.PerSocket, c.Dirs, c.MaxFiles, tt.perSocket)
			}
		})
	}
}

// TestXLIOFlags parses the xlio collector's own flags into its fields and
// Config, and checks their paths.
func TestXLIOFlags(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	for name, tt := range map[string]struct {
		args        []string
		dirs        []string
		perSocket   bool
		noHandshake bool
		paths       string // substring of CheckPaths' error; empty: none
	}{
		// The default directory is not checked: where it is absent
		// there is nothing to collect.
		"defaults": {dirs: []string{"/tmp/xlio"}},
		"given": {args: []string{"--collector.xlio.stats-dir=" + dir, "--collector.xlio.per-socket", "--no-collector.xlio.handshake"},
			dirs: []string{dir}, perSocket: true, noHandshake: true},
		"missing dir": {args: []string{"--collector.xlio.stats-dir=" + missing}, dirs: []string{missing}, paths: "--collector.xlio.stats-dir: "},
	} {
		t.Run(name, func(t *testing.T) {
			f := collectortest.ParseFlags(t, vma.RegisterXLIOFlags, tt.args...)
			if !slices.Equal(f.Dirs, tt.dirs) {
				t.Errorf("dirs %q, want %q", f.Dirs, tt.dirs)
			}
			if err := f.CheckPaths(); tt.paths == "" && err != nil || tt.paths != "" && (err == nil || !strings.Contains(err.Error(), tt.paths)) {
				t.Errorf("CheckPaths() = %v, want %q", err, tt.paths)
			}
			c, err := f.Config(vma.XLIOConfig{Dirs: []string{"/demo"}, MaxNames: 3})
			if err != nil {
				t.Fatal(err)
			}
			if c.PerSocket != tt.perSocket || c.NoHandshake != tt.noHandshake || !slices.Equal(c.Dirs, []string{"/demo"}) || c.MaxNames != 3 {
				t.Errorf("Config(): per socket %t, no handshake %t, dirs %q, max names %d; want %t, %t and the given /demo, 3",
					c.PerSocket, c.NoHandshake, c.Dirs, c.MaxNames, tt.perSocket, tt.noHandshake)
			}
		})
	}
}
