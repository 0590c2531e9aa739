package applog_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nic-exporter/nic_exporter/collector/applog"
	"github.com/nic-exporter/nic_exporter/collector/collectortest"
	"github.com/nic-exporter/nic_exporter/internal/logrules"
)

// TestFlags parses the applog collector's own flags into its fields and
// Config, and checks their paths.
func TestFlags(t *testing.T) {
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.yml")
	if err := os.WriteFile(rules, []byte("rules:\n- {event: app_custom, driver: vma, severity: error, regex: 'custom failure'}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	builtin := len(logrules.VMARules())
	for name, tt := range map[string]struct {
		args      []string
		files     []string
		fromStart bool
		rules     int    // rules of the Config
		config    string // substring of Config's error; empty: none
		paths     string // substring of CheckPaths' error; empty: none
	}{
		"defaults": {rules: builtin},
		"given": {args: []string{"--collector.applog.files=" + dir + "/*.log", "--collector.applog.files=" + dir + "/app/*.log",
			"--collector.applog.from-start", "--collector.applog.rules-file=" + rules},
			files: []string{dir + "/*.log", dir + "/app/*.log"}, fromStart: true, rules: builtin + 1,
			paths: "--collector.applog.files \"" + dir + "/app/*.log\": "},
		"existing dirs":    {args: []string{"--collector.applog.files=" + dir + "/*.log"}, files: []string{dir + "/*.log"}, rules: builtin},
		"no rules file":    {args: []string{"--collector.applog.rules-file=" + filepath.Join(dir, "missing.yml")}, config: "--collector.applog.rules-file: reading rules file: "},
		"rules not a file": {args: []string{"--collector.applog.rules-file=" + dir}, config: "--collector.applog.rules-file: "},
	} {
		t.Run(name, func(t *testing.T) {
			f := collectortest.ParseFlags(t, applog.RegisterFlags, tt.args...)
			if !slices.Equal(f.Files, tt.files) || f.FromStart != tt.fromStart {
				t.Errorf("files %q, from start %t; want %q, %t", f.Files, f.FromStart, tt.files, tt.fromStart)
			}
			if err := f.CheckPaths(); tt.paths == "" && err != nil || tt.paths != "" && (err == nil || !strings.Contains(err.Error(), tt.paths)) {
				t.Errorf("CheckPaths() = %v, want %q", err, tt.paths)
			}
			c, err := f.Config(applog.Config{TrimPrefix: "/x"})
			if tt.config != "" {
				if err == nil || !strings.Contains(err.Error(), tt.config) {
					t.Errorf("Config() error = %v, want one with %q", err, tt.config)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Rules == nil || len(c.Rules.Rules()) != tt.rules || c.TrimPrefix != "/x" {
				t.Errorf("Config(): %d rules, trim prefix %q; want %d and the given /x", len(c.Rules.Rules()), c.TrimPrefix, tt.rules)
			}
		})
	}
}
