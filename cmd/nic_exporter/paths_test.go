package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestExplicitPathsChecked checks that a path given on the command line
// that does not exist, or is not what its flag says, is refused naming
// the flag, that nothing blocks on a FIFO, and that paths of disabled
// collectors and the defaults are not checked.
func TestExplicitPathsChecked(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string // empty: accepted
	}{
		{nil, ""},
		{[]string{"--path.procfs=/proc", "--collector.vma.stats-dir=" + dir, "--collector.kmsg.path=/dev/null", "--collector.applog.files=" + dir + "/*.log"}, ""},
		{[]string{"--path.procfs=" + missing}, "--path.procfs: stat " + missing},
		{[]string{"--path.procfs=" + dir}, "--path.procfs: " + dir + " is not a procfs"},
		{[]string{"--path.procfs=" + fifo}, "--path.procfs: " + fifo + " is not a directory"},
		{[]string{"--collector.vma.stats-dir=/tmp", "--collector.vma.stats-dir=" + missing}, "--collector.vma.stats-dir: stat " + missing},
		{[]string{"--collector.vma.stats-dir=" + file}, "--collector.vma.stats-dir: " + file + " is not a directory"},
		{[]string{"--no-collector.vma", "--collector.vma.stats-dir=" + missing}, ""},
		{[]string{"--collector.kmsg.path=" + missing}, "--collector.kmsg.path: stat " + missing},
		{[]string{"--collector.kmsg.path=" + fifo}, "--collector.kmsg.path: " + fifo + " is not a character device"},
		{[]string{"--collector.kmsg.path=" + file}, "--collector.kmsg.path: " + file + " is not a character device"},
		{[]string{"--collector.applog.files=" + missing + "/*.log"}, `--collector.applog.files "` + missing + `/*.log": stat ` + missing},
		{[]string{"--collector.applog.files=" + dir + "/nope*/*.log"}, "no directory matches " + dir + "/nope*"},
		{[]string{"--collector.applog.files=" + filepath.Dir(dir) + "/*/*.log"}, ""},
		// The demo reads none of the host's paths.
		{[]string{"--demo", "--collector.kmsg.path=" + missing}, ""},
	}
	for _, tt := range tests {
		_, err := parseFlags(tt.args, io.Discard)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%v: %v, want accepted", tt.args, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%v: %v, want an error containing %q", tt.args, err, tt.want)
		}
	}
}
