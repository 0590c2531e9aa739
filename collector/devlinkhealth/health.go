// Package devlinkhealth is the devlink collector: health reporters, device
// info and ports read over devlink generic netlink, health events from its
// multicast group applied at once, and optional evidence capture (diagnose
// and dump) when a reporter goes to error.
package devlinkhealth

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/devlink"
)

// Source is the devlink client as the devlink collector uses it.
// *devlink.Client implements it; the demo host has a fake that does too.
type Source interface {
	Devices(ctx context.Context) ([]devlink.Device, error)
	Ports(ctx context.Context) ([]devlink.Port, error)
	Info(ctx context.Context, h devlink.Handle) (devlink.Info, error)
	HealthReporters(ctx context.Context) ([]devlink.HealthReporter, error)
	Diagnose(ctx context.Context, id devlink.ReporterID) (devlink.Object, error)
	Dump(ctx context.Context, id devlink.ReporterID) (devlink.Object, error)
	Watch(ctx context.Context, fn func(devlink.Event)) error
	Close() error
}

var _ Source = (*devlink.Client)(nil)

// Open opens the kernel's devlink family; it is the default
// Config.Open.
func Open() (Source, error) {
	c, err := devlink.New()
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Config configures the devlink collector.
type Config struct {
	// Open returns the devlink source. It is called on every poll until
	// it succeeds; an error satisfying os.ErrNotExist means the kernel
	// has no devlink, which is nothing to collect.
	Open func() (Source, error)
	// Filter selects devices by handle, such as pci/0000:08:00.0. It is
	// applied to the kernel's device, port and reporter lists before any
	// request that reaches a driver (info, diagnose, dump).
	Filter collector.NameFilter
	// Capture configures evidence capture; off when Capture.Dir is empty.
	Capture CaptureConfig
}

// Collector exports devlink health reporters, device information and the
// health events devlink multicasts. Polls (every 10 s by default) are the
// source of truth for the counters; events update the exported state at
// once between polls, so an error that recovers within a millisecond is
// still seen and counted.
type Collector struct {
	cfg     Config
	log     *zap.Logger
	capture *captureStore
	// captureQueue feeds the capture worker; nil when capture is off.
	captureQueue chan pendingCapture

	openMu sync.Mutex
	src    Source

	mu    sync.Mutex // guards the state below
	state devlinkState
}

// New returns a devlink collector.
func New(cfg Config, log *zap.Logger) *Collector {
	if cfg.Open == nil {
		cfg.Open = Open
	}
	d := &Collector{cfg: cfg, log: log, state: devlinkState{
		netdevs:   map[portKey]string{},
		infos:     map[devlink.Handle]devlink.Info{},
		reporters: map[reporterKey]*reporterState{},
		events:    map[eventKey]uint64{},
		captures:  map[reporterKey]uint64{},
	}}
	if cfg.Capture.Dir != "" {
		d.capture = newCaptureStore(cfg.Capture)
		d.captureQueue = make(chan pendingCapture, captureQueueLen)
	}
	return d
}

// Name implements collector.Collector.
func (*Collector) Name() string { return "devlink" }

var _ collector.EventSource = (*Collector)(nil)

// errNoDevlink says the kernel has no devlink family.
var errNoDevlink = fmt.Errorf("%w: the kernel has no devlink generic netlink family", collector.ErrNoSource)

// source returns the open source, opening it on first use.
func (d *Collector) source() (Source, error) {
	d.openMu.Lock()
	defer d.openMu.Unlock()
	if d.src != nil {
		return d.src, nil
	}
	src, err := d.cfg.Open()
	if errors.Is(err, os.ErrNotExist) {
		return nil, errNoDevlink
	}
	if err != nil {
		return nil, fmt.Errorf("opening devlink: %w", err)
	}
	d.src = src
	return src, nil
}
