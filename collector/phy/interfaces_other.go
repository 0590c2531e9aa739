//go:build !linux

package phy

import (
	"errors"
	"net"
)

// interfaces lists the current namespace's interfaces; other network
// namespaces exist only on Linux.
func interfaces(path string) ([]net.Interface, error) {
	if path != "" {
		return nil, errors.ErrUnsupported
	}
	return net.Interfaces()
}
