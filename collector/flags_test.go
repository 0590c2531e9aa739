package collector_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/nic-exporter/nic_exporter/collector"
)

// TestCommonFlags parses the common flags of an enabled and an opt-in
// collector and checks the values, the device filter and Check.
func TestCommonFlags(t *testing.T) {
	on := collector.Spec{Name: "a", Help: "reads a.", DefaultInterval: "5s", DefaultTimeout: "4s"}
	off := collector.Spec{Name: "b", Help: "reads b.", DefaultInterval: "30s", DefaultTimeout: "10s", Off: true}
	for name, tt := range map[string]struct {
		spec     collector.Spec
		args     []string
		enabled  bool
		interval time.Duration
		timeout  time.Duration
		match    map[string]bool
		check    string // substring of Check's error; empty: no error
	}{
		"defaults on":  {spec: on, enabled: true, interval: 5 * time.Second, timeout: 4 * time.Second, match: map[string]bool{"eth0": true}},
		"defaults off": {spec: off, enabled: false, interval: 30 * time.Second, timeout: 10 * time.Second},
		"disabled":     {spec: on, args: []string{"--no-collector.a"}, interval: 5 * time.Second, timeout: 4 * time.Second},
		"enabled":      {spec: off, args: []string{"--collector.b"}, enabled: true, interval: 30 * time.Second, timeout: 10 * time.Second},
		"filter": {spec: on, args: []string{"--collector.a.interval=1s", "--collector.a.timeout=900ms",
			"--collector.a.device-include=eth.*", "--collector.a.device-exclude=eth1"},
			enabled: true, interval: time.Second, timeout: 900 * time.Millisecond,
			match: map[string]bool{"eth0": true, "eth1": false, "eth10": true, "ib0": false}},
		"zero interval": {spec: on, args: []string{"--collector.a.interval=0"}, enabled: true, timeout: 4 * time.Second,
			check: "--collector.a.interval must be positive, got 0s"},
		"short interval": {spec: on, args: []string{"--collector.a.interval=1ms"}, enabled: true, interval: time.Millisecond, timeout: 4 * time.Second,
			check: "--collector.a.interval must be at least 100ms, got 1ms"},
		"negative timeout": {spec: off, args: []string{"--collector.b.timeout=-1s"}, interval: 30 * time.Second, timeout: -time.Second,
			check: "--collector.b.timeout must be positive, got -1s"},
		"short timeout": {spec: off, args: []string{"--collector.b.timeout=1ns"}, interval: 30 * time.Second, timeout: time.Nanosecond,
			check: "--collector.b.timeout must be at least 100ms, got 1ns"},
	} {
		t.Run(name, func(t *testing.T) {
			app := kingpin.New("test", "")
			cf := collector.RegisterCommonFlags(app, tt.spec)
			if _, err := app.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			if cf.Spec != tt.spec || cf.Enabled != tt.enabled || cf.Interval != tt.interval || cf.Timeout != tt.timeout {
				t.Errorf("got %+v, want enabled %t, interval %s, timeout %s", cf, tt.enabled, tt.interval, tt.timeout)
			}
			err := cf.Check()
			if tt.check == "" && err != nil || tt.check != "" && (err == nil || err.Error() != tt.check) {
				t.Errorf("Check() = %v, want %q", err, tt.check)
			}
			f, err := cf.Filter()
			if err != nil {
				t.Fatal(err)
			}
			for dev, want := range tt.match {
				if got := f.Match(dev); got != want {
					t.Errorf("filter matches %s: %t, want %t", dev, got, want)
				}
			}
		})
	}
}

// TestCommonFlagsBadFilter checks that an invalid device expression is
// refused with the flag's name.
func TestCommonFlagsBadFilter(t *testing.T) {
	app := kingpin.New("test", "")
	cf := collector.RegisterCommonFlags(app, collector.Spec{Name: "a", DefaultInterval: "5s", DefaultTimeout: "4s"})
	if _, err := app.Parse([]string{"--collector.a.device-exclude=("}); err != nil {
		t.Fatal(err)
	}
	if _, err := cf.Filter(); err == nil || !strings.Contains(err.Error(), "--collector.a.device-exclude") {
		t.Errorf("Filter() = %v, want an error naming --collector.a.device-exclude", err)
	}
}

// TestCheckDirs checks CheckDir and CheckGlobDir on a temporary tree.
func TestCheckDirs(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "logs"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		check func(string) error
		path  string
		err   string // substring; empty: no error
	}{
		{collector.CheckDir, dir, ""},
		{collector.CheckDir, file, "is not a directory"},
		{collector.CheckDir, filepath.Join(dir, "missing"), "no such file"},
		{collector.CheckGlobDir, filepath.Join(dir, "logs", "*.log"), ""},
		{collector.CheckGlobDir, filepath.Join(dir, "l*", "*.log"), ""},
		{collector.CheckGlobDir, filepath.Join(dir, "missing", "*.log"), "no such file"},
		{collector.CheckGlobDir, filepath.Join(dir, "f*", "*.log"), "no directory matches"},
	} {
		err := tt.check(tt.path)
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("check %s = %v, want %q", tt.path, err, tt.err)
		}
	}
}
