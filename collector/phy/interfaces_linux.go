package phy

import (
	"net"

	"github.com/nic-exporter/nic_exporter/internal/netns"
)

// interfaces lists the interfaces of the network namespace at path (the
// current one if empty).
func interfaces(path string) ([]net.Interface, error) {
	var ifs []net.Interface
	err := netns.Do(path, func() error {
		var err error
		ifs, err = net.Interfaces()
		return err
	})
	return ifs, err
}
