package ethtool_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/nic-exporter/nic_exporter/collector/collectortest"
	"github.com/nic-exporter/nic_exporter/collector/ethtool"
)

// TestFlags parses the ethtool collector's own flags into its Config.
func TestFlags(t *testing.T) {
	for name, tt := range map[string]struct {
		args   []string
		mode   ethtool.QueueMode
		stats  map[string]bool // statistic names and whether they are exported
		config string          // substring of Config's error; empty: none
	}{
		"defaults": {mode: ethtool.QueueSum, stats: map[string]bool{"rx_packets": true, "tx_pause_ctrl_phy": true}},
		"filtered": {args: []string{"--collector.ethtool.per-queue=keep", "--collector.ethtool.stat-include=rx_.*|tx_.*", "--collector.ethtool.stat-exclude=.*_phy"},
			mode: ethtool.QueueKeep, stats: map[string]bool{"rx_packets": true, "tx_pause_ctrl_phy": false, "ch0_arm": false, "xrx_packets": false}},
		"drop":        {args: []string{"--collector.ethtool.per-queue=drop"}, mode: ethtool.QueueDrop, stats: map[string]bool{"ch0_arm": true}},
		"bad include": {args: []string{"--collector.ethtool.stat-include=("}, config: "invalid --collector.ethtool.stat-include regular expression"},
		"bad exclude": {args: []string{"--collector.ethtool.stat-exclude=["}, config: "invalid --collector.ethtool.stat-exclude regular expression"},
	} {
		t.Run(name, func(t *testing.T) {
			f := collectortest.ParseFlags(t, ethtool.RegisterFlags, tt.args...)
			c, err := f.Config(ethtool.Config{})
			if tt.config != "" {
				if err == nil || !strings.Contains(err.Error(), tt.config) {
					t.Errorf("Config() error = %v, want one with %q", err, tt.config)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.QueueMode != tt.mode {
				t.Errorf("queue mode %q, want %q", c.QueueMode, tt.mode)
			}
			for stat, want := range tt.stats {
				if got := c.StatFilter.Match(stat); got != want {
					t.Errorf("statistic %s exported: %t, want %t", stat, got, want)
				}
			}
		})
	}
}

// TestFlagsNetns checks that a namespace file that cannot be entered is
// refused with the flag's name when the source is opened.
func TestFlagsNetns(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	f := collectortest.ParseFlags(t, ethtool.RegisterFlags, "--collector.ethtool.netns="+missing)
	if f.Netns != missing {
		t.Errorf("netns %q, want %q", f.Netns, missing)
	}
	if _, err := f.Source(); err == nil || !strings.HasPrefix(err.Error(), "--collector.ethtool.netns: ") {
		t.Errorf("Source() = %v, want an error naming --collector.ethtool.netns", err)
	}
}
