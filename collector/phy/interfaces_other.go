//go:build !linux

package phy

import (
	"errors"
	"net"

	"github.com/nic-exporter/nic_exporter/internal/rtnl"
)

// ifaceLister lists the current namespace's interfaces; other network
// namespaces exist only on Linux.
type ifaceLister struct{}

// newIfaceLister returns a lister of the current namespace.
func newIfaceLister(path string) (*ifaceLister, error) {
	if path != "" {
		return nil, errors.ErrUnsupported
	}
	return &ifaceLister{}, nil
}

// list returns the interfaces' names and indexes.
func (*ifaceLister) list() ([]rtnl.Iface, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	out := make([]rtnl.Iface, len(ifs))
	for i, ifc := range ifs {
		out[i] = rtnl.Iface{Index: ifc.Index, Name: ifc.Name}
	}
	return out, nil
}

// Close does nothing.
func (*ifaceLister) Close() error { return nil }
