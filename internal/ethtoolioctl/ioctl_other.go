//go:build !linux

package ethtoolioctl

import "errors"

// Source is the kernel's ethtool interface; it exists on Linux only.
type Source struct{}

// New fails: ethtool ioctls exist on Linux only.
func New(netns string) (*Source, error) {
	return nil, errors.New("ethtool ioctls exist on Linux only")
}

// Close does nothing.
func (*Source) Close() error { return nil }

// Interfaces fails: see New.
func (*Source) Interfaces() ([]Interface, error) { return nil, errors.ErrUnsupported }

// DriverInfo fails: see New.
func (*Source) DriverInfo(string) (DriverInfo, error) { return DriverInfo{}, errors.ErrUnsupported }

// Link fails: see New.
func (*Source) Link(string) (Link, error) { return Link{}, errors.ErrUnsupported }

// StatNames fails: see New.
func (*Source) StatNames(string, int) ([]string, error) { return nil, errors.ErrUnsupported }

// Stats fails: see New.
func (*Source) Stats(string, []uint64) error { return errors.ErrUnsupported }

// ModuleInfo fails: see New.
func (*Source) ModuleInfo(string) (ModuleInfo, error) { return ModuleInfo{}, errors.ErrUnsupported }

// ModuleEEPROM fails: see New.
func (*Source) ModuleEEPROM(string, int) ([]byte, error) { return nil, errors.ErrUnsupported }
