package phy_test

import (
	"testing"
	"time"

	"github.com/nic-exporter/nic_exporter/collector/collectortest"
	"github.com/nic-exporter/nic_exporter/collector/phy"
)

// TestFlags parses the phy collector's own flags into its Config.
func TestFlags(t *testing.T) {
	for name, tt := range map[string]struct {
		args  []string
		want  time.Duration
		check string // Check's error; empty: none
	}{
		"default": {want: time.Minute},
		"given":   {args: []string{"--collector.phy.module-interval=5m"}, want: 5 * time.Minute},
		"zero":    {args: []string{"--collector.phy.module-interval=0"}, check: "--collector.phy.module-interval must be positive, got 0s"},
		"short":   {args: []string{"--collector.phy.module-interval=1ms"}, want: time.Millisecond, check: "--collector.phy.module-interval must be at least 100ms, got 1ms"},
	} {
		t.Run(name, func(t *testing.T) {
			f := collectortest.ParseFlags(t, phy.RegisterFlags, tt.args...)
			if err := f.Check(); tt.check == "" && err != nil || tt.check != "" && (err == nil || err.Error() != tt.check) {
				t.Errorf("Check() = %v, want %q", err, tt.check)
			}
			c, err := f.Config(phy.Config{UnsupportedRetry: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			if c.ModuleInterval != tt.want || c.UnsupportedRetry != time.Hour {
				t.Errorf("Config: module interval %s, unsupported retry %s; want %s and the given 1h", c.ModuleInterval, c.UnsupportedRetry, tt.want)
			}
		})
	}
}
