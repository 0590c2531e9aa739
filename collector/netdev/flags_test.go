package netdev_test

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nic-exporter/nic_exporter/collector/collectortest"
	"github.com/nic-exporter/nic_exporter/collector/netdev"
)

// TestFlags parses the netdev collector's own flag: the namespace whose
// interfaces it reads, foreign when given. A namespace file that cannot
// be entered is refused with the flag's name when the list is opened.
func TestFlags(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	for name, tt := range map[string]struct {
		args    []string
		netns   string
		foreign bool
	}{
		"default": {},
		"given":   {args: []string{"--collector.netdev.netns=" + missing}, netns: missing, foreign: true},
	} {
		t.Run(name, func(t *testing.T) {
			f := collectortest.ParseFlags(t, netdev.RegisterFlags, tt.args...)
			if f.Netns != tt.netns || f.Foreign() != tt.foreign {
				t.Errorf("netns %q, foreign %t; want %q, %t", f.Netns, f.Foreign(), tt.netns, tt.foreign)
			}
			l, err := f.Links()
			if tt.netns == "" {
				// The exporter's own namespace: an rtnetlink socket,
				// which every process may open.
				if err != nil {
					t.Fatalf("Links() in the own namespace: %v", err)
				}
				if err := l.(io.Closer).Close(); err != nil {
					t.Error(err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), "--collector.netdev.netns: ") {
				t.Errorf("Links() = %v, want an error naming --collector.netdev.netns", err)
			}
		})
	}
}
