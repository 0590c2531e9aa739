//go:build !linux

package vmastats

import (
	"fmt"
	"runtime"
)

// ProcLiveness verifies writers through Linux procfs. On this OS there
// is none, and Verify fails with ErrNotSupported.
type ProcLiveness struct {
	// ProcPath is the procfs mount point, normally /proc.
	ProcPath string
	// ClockTick is the kernel's USER_HZ; zero means 100.
	ClockTick int
}

// Verify implements Liveness; it always fails with ErrNotSupported.
func (ProcLiveness) Verify(int, FileInfo) (Process, error) {
	return Process{}, errOS()
}

// errOS is ErrNotSupported naming the OS the program was built for.
func errOS() error { return fmt.Errorf("%w (GOOS=%s)", ErrNotSupported, runtime.GOOS) }
