package fabric

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/internal/mad"
)

// UmadDir is where udev creates the umad character devices.
const UmadDir = "/dev/infiniband"

// UmadOpener returns an Opener for the kernel's user MAD interface: one
// endpoint per local port listed in <sysfs>/class/infiniband_mad, each
// opening /dev/infiniband/umadN (devDir/umadN). madTimeout is split into
// the kernel's timeout and one retry. A host without that sysfs class
// (no ib_umad module, no HCA) has no source.
func UmadOpener(sysfs, devDir string, madTimeout time.Duration) Opener {
	return func(log *zap.Logger) ([]Endpoint, error) {
		ports, err := mad.UmadPorts(sysfs, devDir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %w", collector.ErrNoSource, err)
		}
		if err != nil {
			return nil, err
		}
		if len(ports) == 0 {
			return nil, fmt.Errorf("no umad devices in %s/class/infiniband_mad: %w", sysfs, collector.ErrNoSource)
		}
		var eps []Endpoint
		var errs []error
		for _, p := range ports {
			t, err := mad.OpenUmad(mad.UmadConfig{Device: p.Path, TimeoutMS: uint32(madTimeout.Milliseconds() / 2), Retries: 1})
			if err != nil {
				errs = append(errs, fmt.Errorf("%s port %d: %w", p.Device, p.Port, err))
				continue
			}
			eps = append(eps, Endpoint{Device: p.Device, Port: p.Port,
				Client: mad.NewClient(mad.ClientConfig{Transport: t, Timeout: madTimeout}, log)})
		}
		if len(eps) == 0 {
			return nil, errors.Join(errs...)
		}
		for _, err := range errs {
			log.Warn("a local port's umad device cannot be opened; its far end is not read", zap.Error(err))
		}
		return eps, nil
	}
}

// SimOpener returns an Opener that attaches to ibsim (a simulated fabric)
// at the node cfg names, or as ibsim's own client library would from
// IBSIM_SOCKNAME and SIM_HOST. The endpoint's device is the node's name
// and its port is 1: ibsim attaches a client at its node's first port.
func SimOpener(cfg mad.SimConfig, madTimeout time.Duration) Opener {
	return func(log *zap.Logger) ([]Endpoint, error) {
		t, err := mad.DialSim(cfg)
		if err != nil {
			return nil, err
		}
		return []Endpoint{{Device: t.Node(), Port: 1,
			Client: mad.NewClient(mad.ClientConfig{Transport: t, Timeout: madTimeout}, log)}}, nil
	}
}
