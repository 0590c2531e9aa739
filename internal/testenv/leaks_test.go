package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMainCheckingLeaks runs the leak check around fake test runs that
// leave a namespace of this process behind, leave one of another process,
// or clean up, with a directory standing in for /run/netns.
func TestMainCheckingLeaks(t *testing.T) {
	const pid = 4242
	tests := []struct {
		name     string
		create   []string // namespaces the run creates and leaves
		runCode  int
		wantCode int
		wantLeft string
	}{
		{name: "clean", wantCode: 0},
		{name: "clean but failing", runCode: 1, wantCode: 1},
		{name: "own namespace left", create: []string{fmt.Sprintf("nicexp-rtnl-%d-a", pid)}, wantCode: 1, wantLeft: "network namespace nicexp-rtnl-4242-a"},
		{name: "own namespace left by a failing run", create: []string{fmt.Sprintf("nicexp-ndb-%d", pid)}, runCode: 1, wantCode: 1, wantLeft: "network namespace nicexp-ndb-4242"},
		{name: "another process's namespace", create: []string{"nicexp-rtnl-4243-a", "nicexp-rtnl-42424-a", "cni-1234"}, wantCode: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var out strings.Builder
			code := mainCheckingLeaks(func() int {
				for _, n := range tc.create {
					if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				return tc.runCode
			}, dir, pid, &out)
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d (output %q)", code, tc.wantCode, out.String())
			}
			if tc.wantLeft == "" && out.Len() != 0 {
				t.Errorf("output %q, want none", out.String())
			}
			if tc.wantLeft != "" && !strings.Contains(out.String(), tc.wantLeft) {
				t.Errorf("output %q, want it to name %q", out.String(), tc.wantLeft)
			}
		})
	}
}

// TestMainCheckingLeaksMissingDir treats a missing /run/netns (no
// namespace was ever added) as empty.
func TestMainCheckingLeaksMissingDir(t *testing.T) {
	var out strings.Builder
	if code := mainCheckingLeaks(func() int { return 0 }, filepath.Join(t.TempDir(), "none"), 1, &out); code != 0 {
		t.Errorf("exit code %d, output %q", code, out.String())
	}
}
