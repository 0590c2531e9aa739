//go:build !linux

package xliostats

import (
	"fmt"
	"runtime"

	"github.com/nic-exporter/nic_exporter/vmastats"
)

// Load would open, verify, handshake and decode the file of c; on this OS
// it fails with vmastats.ErrNotSupported.
func Load(c vmastats.Candidate, _ vmastats.LoadOptions) (*Loaded, error) {
	return nil, fmt.Errorf("%s: %w (GOOS=%s)", c.Path, vmastats.ErrNotSupported, runtime.GOOS)
}
