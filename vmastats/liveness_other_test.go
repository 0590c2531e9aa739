//go:build !linux

package vmastats

import (
	"errors"
	"testing"
)

// TestNotSupported checks that, away from Linux, the I/O side fails
// clearly while decoding still works.
func TestNotSupported(t *testing.T) {
	if _, err := NewProcLiveness("/proc").Verify(1, FileInfo{}); !errors.Is(err, ErrNotSupported) {
		t.Errorf("Verify: %v, want ErrNotSupported", err)
	}
	if _, err := Load(Candidate{Path: "/tmp/vmastat.1", PID: 1}, LoadOptions{}); !errors.Is(err, ErrNotSupported) {
		t.Errorf("Load: %v, want ErrNotSupported", err)
	}
}
