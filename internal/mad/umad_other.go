//go:build !linux

package mad

import (
	"errors"
	"fmt"
	"runtime"
)

// UmadConfig configures a UmadTransport.
type UmadConfig struct {
	Device    string
	TimeoutMS uint32
	Retries   uint32
}

// UmadPort is one local HCA port and its umad device.
type UmadPort struct {
	Device string
	Port   uint8
	Path   string
}

// UmadTransport is Linux-only; on other systems OpenUmad fails.
type UmadTransport struct{}

var errNotLinux = fmt.Errorf("the user MAD interface exists on Linux only, not %s: %w", runtime.GOOS, errors.ErrUnsupported)

// UmadPorts fails outside Linux.
func UmadPorts(sysfs, devDir string) ([]UmadPort, error) { return nil, errNotLinux }

// OpenUmad fails outside Linux.
func OpenUmad(UmadConfig) (*UmadTransport, error) { return nil, errNotLinux }

// Send implements Transport.
func (*UmadTransport) Send(uint16, uint32, []byte) error { return errNotLinux }

// Recv implements Transport.
func (*UmadTransport) Recv([]byte) (int, bool, error) { return 0, false, errNotLinux }

// Close implements Transport.
func (*UmadTransport) Close() error { return nil }
