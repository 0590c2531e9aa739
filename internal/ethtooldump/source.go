package ethtooldump

import (
	"fmt"
	"sort"
	"sync"
	"syscall"

	"github.com/nic-exporter/nic_exporter/internal/ethtoolioctl"
)

// Device is one interface of a Source.
type Device struct {
	Name  string
	Index int
	// Dump is the driver information and statistics; nil for a device
	// without ethtool support (the loopback device).
	Dump *Dump
	// Link is what Link returns.
	Link ethtoolioctl.Link
}

// Source serves recorded devices the way ethtoolioctl.Source serves the
// kernel's, for the ethtool collector. Tests and the
// demo host change the devices between polls with Update. It counts the
// calls it serves, so tests can check how often the table is fetched.
type Source struct {
	mu      sync.Mutex
	devices map[string]*Device
	calls   map[string]int
}

// NewSource returns a Source serving devs.
func NewSource(devs ...*Device) *Source {
	s := &Source{devices: make(map[string]*Device), calls: make(map[string]int)}
	for _, d := range devs {
		s.devices[d.Name] = d
	}
	return s
}

// Update runs f with the devices locked; f may change, add or delete them.
func (s *Source) Update(f func(devices map[string]*Device)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s.devices)
}

// Calls returns how many times the named method was called.
func (s *Source) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

func (s *Source) device(method, name string) (*Device, error) {
	s.calls[method]++
	d := s.devices[name]
	if d == nil {
		return nil, fmt.Errorf("%s %s: %w", method, name, syscall.ENODEV)
	}
	if d.Dump == nil {
		return nil, fmt.Errorf("%s %s: %w", method, name, syscall.EOPNOTSUPP)
	}
	return d, nil
}

// Interfaces is ethtoolioctl.Source.Interfaces over the recorded devices.
func (s *Source) Interfaces() ([]ethtoolioctl.Interface, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls["Interfaces"]++
	out := make([]ethtoolioctl.Interface, 0, len(s.devices))
	for _, d := range s.devices {
		out = append(out, ethtoolioctl.Interface{Name: d.Name, Index: d.Index})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out, nil
}

// DriverInfo is ethtoolioctl.Source.DriverInfo over the recorded devices.
func (s *Source) DriverInfo(name string) (ethtoolioctl.DriverInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, err := s.device("DriverInfo", name)
	if err != nil {
		return ethtoolioctl.DriverInfo{}, err
	}
	return ethtoolioctl.DriverInfo{
		Driver: d.Dump.Driver, Version: d.Dump.Version, FirmwareVersion: d.Dump.FirmwareVersion,
		BusInfo: d.Dump.BusInfo, NStats: len(d.Dump.Names),
	}, nil
}

// Link is ethtoolioctl.Source.Link over the recorded devices.
func (s *Source) Link(name string) (ethtoolioctl.Link, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, err := s.device("Link", name)
	if err != nil {
		return ethtoolioctl.Link{}, err
	}
	return d.Link, nil
}

// StatNames is ethtoolioctl.Source.StatNames over the recorded devices.
func (s *Source) StatNames(name string, n int) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, err := s.device("StatNames", name)
	if err != nil {
		return nil, err
	}
	if n != len(d.Dump.Names) {
		return nil, ethtoolioctl.ErrStatCountChanged
	}
	return append([]string(nil), d.Dump.Names...), nil
}

// Stats is ethtoolioctl.Source.Stats over the recorded devices.
func (s *Source) Stats(name string, dst []uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, err := s.device("Stats", name)
	if err != nil {
		return err
	}
	if len(dst) != len(d.Dump.Values) {
		return ethtoolioctl.ErrStatCountChanged
	}
	copy(dst, d.Dump.Values)
	return nil
}
