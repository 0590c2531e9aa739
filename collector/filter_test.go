package collector

import (
	"strings"
	"testing"
)

func TestNameFilter(t *testing.T) {
	tests := []struct {
		include, exclude string
		match            map[string]bool
	}{
		{"", "", map[string]bool{"eth0": true, "lo": true}},
		{"eth1", "", map[string]bool{"eth1": true, "eth10": false}},
		{"mlx5_.*", "mlx5_1", map[string]bool{"mlx5_0": true, "mlx5_1": false, "ib0": false}},
		{"", "lo|docker.*", map[string]bool{"lo": false, "docker0": false, "eth0": true}},
	}
	for _, tt := range tests {
		f, err := NewNameFilter("collector.test.device", tt.include, tt.exclude)
		if err != nil {
			t.Fatal(err)
		}
		for name, want := range tt.match {
			if got := f.Match(name); got != want {
				t.Errorf("include %q exclude %q: Match(%q) = %v, want %v", tt.include, tt.exclude, name, got, want)
			}
		}
	}
	if _, err := NewNameFilter("collector.test.device", "([", ""); err == nil || !strings.Contains(err.Error(), "--collector.test.device-include") {
		t.Errorf("bad include: err = %v, want one naming the flag", err)
	}
	if _, err := NewNameFilter("collector.test.device", "", "*"); err == nil || !strings.Contains(err.Error(), "--collector.test.device-exclude") {
		t.Errorf("bad exclude: err = %v, want one naming the flag", err)
	}
}
