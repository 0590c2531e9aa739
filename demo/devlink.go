package demo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/nic-exporter/nic_exporter/devlink"
)

// The ConnectX-7 of the reference host has one devlink instance per PCI
// function. What mlx5 registers on each, per the mlx5 driver (Linux 6.x,
// drivers/net/ethernet/mellanox/mlx5/core/health.c, en/reporter_tx.c,
// en/reporter_rx.c, diag/reporter_vnic.c) and devlink outputs of
// ConnectX-7 hosts posted in public issues:
//   - device reporters fw (no recover operation), fw_fatal (recovers
//     with a 60 s grace period on a PF) and vnic (diagnose only);
//   - mlx5e's tx and rx reporters on the uplink port of the Ethernet
//     function, whose index is vhca_id<<16 | 0xffff (131071 for the
//     second function);
//   - devlink info: driver mlx5_core, fixed fw.psid, running and stored
//     fw.version and fw, and the board's serial number from its VPD, all
//     from the card (card.go).
//
// The InfiniBand function runs no mlx5e, so it has no tx and rx reporters;
// its port carries the ibdev, not a netdev.
var devlinkPart = part{
	faults: map[string]string{
		"fw_fatal": "the ConnectX-7 firmware hits a fatal error: devlink fw_fatal in error on both functions until the fault ends (then recovered)",
		"fw":       "the ConnectX-7 firmware reports a syndrome: devlink fw in error on both functions until the fault ends",
		"vnic":     "a VF of the ConnectX-7 Ethernet function misbehaves: devlink vnic in error until the fault ends",
	},
	update: func(*Host) error { return nil }, // the fake derives its state from the clock
}

var (
	devlinkIB  = devlink.Handle{Bus: "pci", Device: cx7.functions[0]}
	devlinkEth = devlink.Handle{Bus: "pci", Device: cx7.functions[1]}
	ibPort     = uint32(65535)
	ethPort    = uint32(131071)
)

// Devlink is the demo host's devlink: the ConnectX-7's devices, ports,
// info and health reporters, driven by the demo clock and faults. It has
// the methods of the real devlink client that the devlink collector uses.
type Devlink struct {
	h *Host
}

// Devlink returns the demo host's devlink.
func (h *Host) Devlink() *Devlink { return &Devlink{h: h} }

// Close does nothing.
func (*Devlink) Close() error { return nil }

// Devices returns both functions.
func (*Devlink) Devices(context.Context) ([]devlink.Device, error) {
	return []devlink.Device{{Handle: devlinkIB}, {Handle: devlinkEth}}, nil
}

// Ports returns the uplink port of each function.
func (*Devlink) Ports(context.Context) ([]devlink.Port, error) {
	ib, eth := devlink.PortTypeIB, devlink.PortTypeEth
	flavour := uint16(0) // physical
	n0, n1 := uint32(0), uint32(1)
	return []devlink.Port{
		{Handle: devlinkIB, Index: ibPort, Type: &ib, Flavour: &flavour, Number: &n0, IBDev: "mlx5_0"},
		{Handle: devlinkEth, Index: ethPort, Type: &eth, Flavour: &flavour, Number: &n1, Netdev: "enp8s0f1np1", Ifindex: 4},
	}, nil
}

// Info returns mlx5's device information.
func (*Devlink) Info(_ context.Context, h devlink.Handle) (devlink.Info, error) {
	if h != devlinkIB && h != devlinkEth {
		return devlink.Info{}, fmt.Errorf("demo devlink: no device %s: %w", h, os.ErrNotExist)
	}
	fw := []devlink.Version{{Name: "fw.version", Value: cx7.firmware}, {Name: "fw", Value: cx7.firmware}}
	return devlink.Info{
		Handle:       h,
		Driver:       "mlx5_core",
		SerialNumber: cx7.serial,
		Fixed:        []devlink.Version{{Name: "fw.psid", Value: cx7.psid}},
		Running:      fw,
		Stored:       fw,
	}, nil
}

// demoReporter is one reporter and the fault that breaks it.
type demoReporter struct {
	h           devlink.Handle
	port        *uint32
	name        string
	fault       string
	grace       *time.Duration
	autoRecover *bool
}

func reporters() []demoReporter {
	on := true
	fatalGrace := 60 * time.Second
	queueGrace := 500 * time.Millisecond
	var out []demoReporter
	for _, h := range []devlink.Handle{devlinkIB, devlinkEth} {
		out = append(out,
			demoReporter{h: h, name: "fw", fault: "fw"},
			demoReporter{h: h, name: "fw_fatal", fault: "fw_fatal", grace: &fatalGrace, autoRecover: &on},
		)
	}
	out = append(out,
		demoReporter{h: devlinkEth, name: "vnic", fault: "vnic"},
		demoReporter{h: devlinkEth, port: &ethPort, name: "tx", grace: &queueGrace, autoRecover: &on},
		demoReporter{h: devlinkEth, port: &ethPort, name: "rx", grace: &queueGrace, autoRecover: &on},
	)
	return out
}

// state derives a reporter's attributes from the clock: every occurrence
// of its fault that has started is an error, every one that has ended a
// recovery, and it is in error while one is in effect.
func (d *Devlink) state(r demoReporter) devlink.HealthReporter {
	var errs, recovers uint64
	var lastDump *time.Time
	t := d.h.Elapsed()
	for _, f := range d.h.faults {
		if f.Name != r.fault || r.fault == "" || t < f.Start {
			continue
		}
		errs++
		at := d.h.Start().Add(f.Start)
		lastDump = &at
		if f.End != 0 && t >= f.End {
			recovers++
		}
	}
	st := devlink.HealthStateHealthy
	if d.h.Active(r.fault) {
		st = devlink.HealthStateError
	}
	autoDump := true
	out := devlink.HealthReporter{
		ReporterID:     devlink.ReporterID{Handle: r.h, Port: r.port, Name: r.name},
		State:          &st,
		ErrorCount:     &errs,
		RecoverCount:   &recovers,
		GracefulPeriod: r.grace,
		AutoRecover:    r.autoRecover,
		AutoDump:       &autoDump,
	}
	if r.name == "fw" || r.name == "fw_fatal" {
		out.LastDump = lastDump // reporters with a dump operation
	}
	return out
}

// HealthReporters returns every reporter's current attributes.
func (d *Devlink) HealthReporters(context.Context) ([]devlink.HealthReporter, error) {
	var out []devlink.HealthReporter
	for _, r := range reporters() {
		out = append(out, d.state(r))
	}
	return out, nil
}

func (d *Devlink) find(id devlink.ReporterID) (devlink.HealthReporter, bool) {
	for _, r := range reporters() {
		s := d.state(r)
		if s.Handle == id.Handle && s.Name == id.Name && (s.Port == nil) == (id.Port == nil) && (s.Port == nil || *s.Port == *id.Port) {
			return s, true
		}
	}
	return devlink.HealthReporter{}, false
}

// Diagnose returns output shaped like mlx5's diagnose of the reporter.
func (d *Devlink) Diagnose(_ context.Context, id devlink.ReporterID) (devlink.Object, error) {
	r, ok := d.find(id)
	if !ok {
		return nil, fmt.Errorf("demo devlink: no reporter %s: %w", id, os.ErrNotExist)
	}
	inError := *r.State == devlink.HealthStateError
	switch id.Name {
	case "fw":
		if !inError {
			return devlink.Object{{Name: "Syndrome", Value: uint8(0)}}, nil
		}
		return devlink.Object{{Name: "Syndrome", Value: uint8(1)}, {Name: "Description", Value: "firmware internal error"}}, nil
	case "vnic":
		var bad uint64
		if inError {
			bad = 3
		}
		return devlink.Object{{Name: "vNIC env counters", Value: devlink.Object{
			{Name: "total_error_queues", Value: bad},
			{Name: "send_queue_priority_update_flow", Value: uint64(0)},
			{Name: "comp_eq_overrun", Value: uint64(0)},
			{Name: "async_eq_overrun", Value: uint64(0)},
			{Name: "cq_overrun", Value: bad},
			{Name: "invalid_command", Value: uint64(0)},
			{Name: "quota_exceeded_command", Value: uint64(0)},
		}}}, nil
	case "tx", "rx":
		return devlink.Object{{Name: "Common Config", Value: devlink.Object{
			{Name: "SQ", Value: devlink.Object{{Name: "stride size", Value: uint32(64)}, {Name: "size", Value: uint32(1024)}}},
		}}}, nil
	}
	return nil, fmt.Errorf("demo devlink: %s has no diagnose: %w", id, errUnsupported)
}

// Dump returns a crdump-like dump for fw and fw_fatal.
func (d *Devlink) Dump(_ context.Context, id devlink.ReporterID) (devlink.Object, error) {
	if _, ok := d.find(id); !ok {
		return nil, fmt.Errorf("demo devlink: no reporter %s: %w", id, os.ErrNotExist)
	}
	switch id.Name {
	case "fw_fatal":
		return devlink.Object{{Name: "crdump_data", Value: devlink.Array{devlink.Binary{0x00, 0x1f, 0x00, 0x01, 0x5a, 0x5a, 0x00, 0x00}}}}, nil
	case "fw":
		return devlink.Object{{Name: "fw reporter context", Value: devlink.Object{{Name: "syndrome", Value: uint8(1)}, {Name: "fw_miss_counter", Value: uint32(0)}}}}, nil
	}
	return nil, fmt.Errorf("demo devlink: %s has no dump: %w", id, errUnsupported)
}

// errUnsupported stands for the kernel's EOPNOTSUPP.
var errUnsupported = fmt.Errorf("operation not supported: %w", errors.ErrUnsupported)

// Watch sends a health event whenever a reporter's state changes, as
// devlink does, checking every UpdateInterval until ctx is done.
func (d *Devlink) Watch(ctx context.Context, fn func(devlink.Event)) error {
	last := map[string]devlink.HealthState{}
	key := func(r devlink.HealthReporter) string { return r.ReporterID.String() }
	rs, _ := d.HealthReporters(ctx)
	for _, r := range rs {
		last[key(r)] = *r.State
	}
	t := time.NewTicker(d.h.cfg.UpdateInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		rs, _ := d.HealthReporters(ctx)
		sort.SliceStable(rs, func(i, j int) bool { return key(rs[i]) < key(rs[j]) })
		for _, r := range rs {
			if last[key(r)] != *r.State {
				last[key(r)] = *r.State
				fn(devlink.Event{Kind: devlink.EventHealth, Reporter: &r})
			}
		}
	}
}
