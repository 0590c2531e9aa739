//go:build !linux

package vmastats

import "fmt"

// Load would open, verify, handshake and decode the file of c; on this OS
// it fails with ErrNotSupported.
func Load(c Candidate, _ LoadOptions) (*Loaded, error) {
	return nil, fmt.Errorf("%s: %w", c.Path, errOS())
}
