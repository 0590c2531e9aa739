package main

import (
	"runtime/debug"
	"testing"
)

func TestModuleVersion(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"v0.2.0", "0.2.0"},
		{"v0.0.0-20261125093000-d333eb2a1b2c", "0.0.0-20261125093000-d333eb2a1b2c"},
		{"v0.0.0-20261125093000-d333eb2a1b2c+dirty", "0.0.0-20261125093000-d333eb2a1b2c+dirty"},
		{"(devel)", "devel"},
		{"", "devel"},
	} {
		bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/nic-exporter/nic_exporter", Version: tc.in}}
		if got := moduleVersion(bi); got != tc.want {
			t.Errorf("moduleVersion(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
