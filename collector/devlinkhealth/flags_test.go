package devlinkhealth_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nic-exporter/nic_exporter/collector/collectortest"
	"github.com/nic-exporter/nic_exporter/collector/devlinkhealth"
)

// TestFlags parses the devlink collector's own flags into its Config.
func TestFlags(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "evidence")
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tt := range map[string]struct {
		args   []string
		want   devlinkhealth.CaptureConfig
		check  string // Check's error; empty: none
		config string // substring of Config's error; empty: none
	}{
		"defaults": {want: devlinkhealth.CaptureConfig{MaxFiles: 100, MaxBytes: 64 << 20}},
		"capture": {args: []string{"--collector.devlink.capture-dir=" + dir, "--collector.devlink.capture-max-files=3", "--collector.devlink.capture-max-bytes=4096"},
			want: devlinkhealth.CaptureConfig{Dir: dir, MaxFiles: 3, MaxBytes: 4096}},
		"no files":       {args: []string{"--collector.devlink.capture-max-files=0"}, check: "--collector.devlink.capture-max-files must be positive, got 0"},
		"negative bytes": {args: []string{"--collector.devlink.capture-max-bytes=-1"}, check: "--collector.devlink.capture-max-bytes must be positive, got -1"},
		"dir under file": {args: []string{"--collector.devlink.capture-dir=" + filepath.Join(file, "sub")}, config: "--collector.devlink.capture-dir: "},
	} {
		t.Run(name, func(t *testing.T) {
			f := collectortest.ParseFlags(t, devlinkhealth.RegisterFlags, tt.args...)
			err := f.Check()
			if tt.check != "" {
				if err == nil || err.Error() != tt.check {
					t.Errorf("Check() = %v, want %q", err, tt.check)
				}
				return
			}
			if err != nil {
				t.Fatalf("Check() = %v", err)
			}
			c, err := f.Config(devlinkhealth.Config{})
			if tt.config != "" {
				if err == nil || !strings.Contains(err.Error(), tt.config) {
					t.Errorf("Config() error = %v, want one with %q", err, tt.config)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Capture.Dir != tt.want.Dir || c.Capture.MaxFiles != tt.want.MaxFiles || c.Capture.MaxBytes != tt.want.MaxBytes {
				t.Errorf("Config().Capture = %+v, want %+v", c.Capture, tt.want)
			}
			if tt.want.Dir != "" {
				// The directory is made at start.
				if st, err := os.Stat(tt.want.Dir); err != nil || !st.IsDir() {
					t.Errorf("capture directory not made: %v", err)
				}
			}
		})
	}
}
