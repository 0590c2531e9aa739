//go:build !linux

package vmastats

import (
	"fmt"
	"runtime"
)

// ProcLiveness verifies writers through Linux procfs. On this OS there
// is none, and Verify fails with ErrNotSupported.
type ProcLiveness struct{}

// NewProcLiveness returns a ProcLiveness; root, the procfs mount point on
// Linux, is not used.
func NewProcLiveness(root string) *ProcLiveness { return &ProcLiveness{} }

// Verify implements Liveness; it always fails with ErrNotSupported.
func (*ProcLiveness) Verify(int, FileInfo) (Process, error) {
	return Process{}, errOS()
}

// errOS is ErrNotSupported naming the OS the program was built for.
func errOS() error { return fmt.Errorf("%w (GOOS=%s)", ErrNotSupported, runtime.GOOS) }

// Alive implements PIDChecker; it answers true, so Verify reports
// ErrNotSupported.
func (*ProcLiveness) Alive(int) bool { return true }
