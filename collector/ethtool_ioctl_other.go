//go:build !linux

package collector

import "errors"

// EthtoolIoctl is the real EthtoolSource; it exists on Linux only.
type EthtoolIoctl struct{ EthtoolSource }

// NewEthtoolIoctl fails: ethtool ioctls exist on Linux only.
func NewEthtoolIoctl(netns string) (*EthtoolIoctl, error) {
	return nil, errors.New("ethtool ioctls exist on Linux only")
}

// Close does nothing.
func (*EthtoolIoctl) Close() error { return nil }
