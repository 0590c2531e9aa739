package fabric_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/collectortest"
	"github.com/nic-exporter/nic_exporter/collector/fabric"
)

// TestFlags parses the fabric collector's own flags into its Config.
func TestFlags(t *testing.T) {
	defaults := fabric.Config{MADTimeout: 500 * time.Millisecond, Concurrency: 4, Scope: "far-end",
		SweepConcurrency: 16, Rediscover: 10 * time.Minute, ResetInterval: time.Hour}
	for name, tt := range map[string]struct {
		args  []string
		want  fabric.Config
		check string // Check's error; empty: none
	}{
		"defaults": {want: defaults},
		"all given": {args: []string{"--collector.fabric.transport=ibsim", "--collector.fabric.mad-timeout=2s",
			"--collector.fabric.concurrency=2", "--collector.fabric.scope=switches", "--collector.fabric.sweep-concurrency=64",
			"--collector.fabric.rediscover-interval=1h", "--collector.fabric.reset-saturated", "--collector.fabric.reset-interval=2h"},
			want: fabric.Config{MADTimeout: 2 * time.Second, Concurrency: 2, Scope: "switches", SweepConcurrency: 64,
				Rediscover: time.Hour, ResetSaturated: true, ResetInterval: 2 * time.Hour}},
		"zero mad timeout": {args: []string{"--collector.fabric.mad-timeout=0"}, check: "--collector.fabric.mad-timeout must be positive, got 0s"},
		"zero concurrency": {args: []string{"--collector.fabric.concurrency=0"}, check: "--collector.fabric.concurrency must be positive, got 0"},
		"zero sweep":       {args: []string{"--collector.fabric.sweep-concurrency=0"}, check: "--collector.fabric.sweep-concurrency must be positive, got 0"},
		"zero rediscover":  {args: []string{"--collector.fabric.rediscover-interval=0"}, check: "--collector.fabric.rediscover-interval must be positive, got 0s"},
		"short reset":      {args: []string{"--collector.fabric.reset-interval=59s"}, check: "--collector.fabric.reset-interval must be at least 1m, got 59s"},
	} {
		t.Run(name, func(t *testing.T) {
			f := collectortest.ParseFlags(t, fabric.RegisterFlags, tt.args...)
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
			filter, err := collector.NewNameFilter("x", "mlx5_0", "")
			if err != nil {
				t.Fatal(err)
			}
			c, err := f.Config(fabric.Config{Filter: filter})
			if err != nil {
				t.Fatal(err)
			}
			if !c.Filter.Match("mlx5_0") || c.Filter.Match("mlx5_1") {
				t.Error("Config lost the given filter")
			}
			if diff := cmp.Diff(tt.want, c, cmpopts.IgnoreFields(fabric.Config{}, "Open", "Filter")); diff != "" {
				t.Errorf("Config (-want +got):\n%s", diff)
			}
			if f.Opener("/sys") == nil {
				t.Error("Opener returned nil")
			}
		})
	}
}
