package kmsg_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nic-exporter/nic_exporter/collector/collectortest"
	"github.com/nic-exporter/nic_exporter/collector/kmsg"
	"github.com/nic-exporter/nic_exporter/internal/logrules"
)

// TestFlags parses the kmsg collector's own flags into its Config and
// checks their paths. Nothing here opens a kernel log.
func TestFlags(t *testing.T) {
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.yml")
	if err := os.WriteFile(rules, []byte("rules:\n- {event: mlx5_custom, driver: mlx5_core, severity: warning, regex: 'custom failure'}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	regular := filepath.Join(dir, "kmsg")
	if err := os.WriteFile(regular, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	builtin := len(logrules.KernelRules())
	for name, tt := range map[string]struct {
		args      []string
		path      string
		replay    bool
		stateFile string
		rules     int    // rules of the Config
		config    string // substring of Config's error; empty: none
		paths     string // substring of CheckPaths' error; empty: none
	}{
		// The default path is not checked: where it is absent there is
		// nothing to collect.
		"defaults": {path: "/dev/kmsg", replay: true, rules: builtin},
		"given": {args: []string{"--no-collector.kmsg.replay", "--collector.kmsg.state-file=" + dir + "/state.json", "--collector.kmsg.rules-file=" + rules},
			path: "/dev/kmsg", stateFile: dir + "/state.json", rules: builtin + 1},
		"regular file as device": {args: []string{"--collector.kmsg.path=" + regular}, path: regular, replay: true, rules: builtin,
			paths: "--collector.kmsg.path: "},
		"missing device": {args: []string{"--collector.kmsg.path=" + dir + "/missing"}, path: dir + "/missing", replay: true, rules: builtin,
			paths: "--collector.kmsg.path: "},
		"no rules file": {args: []string{"--collector.kmsg.rules-file=" + dir + "/missing.yml"}, path: "/dev/kmsg", replay: true,
			config: "--collector.kmsg.rules-file: reading rules file: "},
	} {
		t.Run(name, func(t *testing.T) {
			f := collectortest.ParseFlags(t, kmsg.RegisterFlags, tt.args...)
			if f.Path != tt.path {
				t.Errorf("path %q, want %q", f.Path, tt.path)
			}
			if err := f.CheckPaths(); tt.paths == "" && err != nil || tt.paths != "" && (err == nil || !strings.Contains(err.Error(), tt.paths)) {
				t.Errorf("CheckPaths() = %v, want %q", err, tt.paths)
			}
			c, err := f.Config(kmsg.Config{MaxSeries: 7})
			if tt.config != "" {
				if err == nil || !strings.Contains(err.Error(), tt.config) {
					t.Errorf("Config() error = %v, want one with %q", err, tt.config)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Replay != tt.replay || c.StateFile != tt.stateFile || c.MaxSeries != 7 || c.Rules == nil || len(c.Rules.Rules()) != tt.rules {
				t.Errorf("Config(): replay %t, state file %q, max series %d, %d rules; want %t, %q, the given 7, %d",
					c.Replay, c.StateFile, c.MaxSeries, len(c.Rules.Rules()), tt.replay, tt.stateFile, tt.rules)
			}
			if f.Opener() == nil {
				t.Error("Opener() is nil")
			}
		})
	}
}
