//go:build !linux

package ethtoolnl

import (
	"errors"

	"go.uber.org/zap"
)

// Client is unavailable off Linux.
type Client struct{}

// New fails off Linux: ethtool netlink is a Linux interface.
func New(Config, *zap.Logger) (*Client, error) { return nil, errors.ErrUnsupported }

// Close does nothing.
func (*Client) Close() error { return nil }

// LinkState fails off Linux.
func (*Client) LinkState(string) (LinkState, error) { return LinkState{}, errors.ErrUnsupported }

// FEC fails off Linux.
func (*Client) FEC(string) (FEC, error) { return FEC{}, errors.ErrUnsupported }

// Stats fails off Linux.
func (*Client) Stats(string) (Stats, error) { return Stats{}, errors.ErrUnsupported }

// ModuleEEPROM fails off Linux.
func (*Client) ModuleEEPROM(string, ModuleEEPROMRequest) ([]byte, error) {
	return nil, errors.ErrUnsupported
}
