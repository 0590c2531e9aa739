package topology_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nic-exporter/nic_exporter/collector/collectortest"
	"github.com/nic-exporter/nic_exporter/collector/topology"
)

// TestFlags parses the topology collector's own flags into its Config.
func TestFlags(t *testing.T) {
	for name, tt := range map[string]struct {
		args  []string
		want  topology.Rails
		check string // Check's and Config's error; empty: none
	}{
		"default": {},
		"auto":    {args: []string{"--collector.topology.rails=auto"}, want: topology.Rails{Auto: true}},
		"map": {args: []string{"--collector.topology.rails=mlx5_0=0, mlx5_1=1"},
			want: topology.Rails{Map: map[string]string{"mlx5_0": "0", "mlx5_1": "1"}}},
		"bad": {args: []string{"--collector.topology.rails=mlx5_0"},
			check: `--collector.topology.rails: rail "mlx5_0": want device=rail, for example mlx5_0=0, or auto`},
		"twice": {args: []string{"--collector.topology.rails=mlx5_0=0,mlx5_0=1"},
			check: "--collector.topology.rails: rail of mlx5_0 given twice"},
	} {
		t.Run(name, func(t *testing.T) {
			f := collectortest.ParseFlags(t, topology.RegisterFlags, tt.args...)
			if err := f.Check(); tt.check == "" && err != nil || tt.check != "" && (err == nil || err.Error() != tt.check) {
				t.Errorf("Check() = %v, want %q", err, tt.check)
			}
			c, err := f.Config(topology.Config{SysfsPath: "/sys"})
			if tt.check != "" {
				if err == nil || err.Error() != tt.check {
					t.Errorf("Config() error = %v, want %q", err, tt.check)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.SysfsPath != "/sys" {
				t.Errorf("Config dropped the given SysfsPath: %q", c.SysfsPath)
			}
			if diff := cmp.Diff(tt.want, c.Rails); diff != "" {
				t.Errorf("Rails (-want +got):\n%s", diff)
			}
		})
	}
}
