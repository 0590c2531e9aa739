package devlinkhealth

import (
	"context"
	"errors"
	"fmt"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/devlink"
)

// devlinkRead is what one read of the kernel's state found.
type devlinkRead struct {
	devices   []devlink.Handle
	ports     []devlink.Port
	reporters []devlink.HealthReporter
	infos     map[devlink.Handle]devlink.Info
}

// read reads devices, ports and reporters, and the info of the selected
// devices. Info errors drop that device's info and are reported to
// sourceErr.
func (d *Collector) read(ctx context.Context, src Source, sourceErr func(string, error)) (*devlinkRead, error) {
	devs, err := src.Devices(ctx)
	if err != nil {
		return nil, err
	}
	r := &devlinkRead{infos: map[devlink.Handle]devlink.Info{}}
	for _, dev := range devs {
		if d.cfg.Filter.Match(dev.String()) {
			r.devices = append(r.devices, dev.Handle)
		}
	}
	ports, err := src.Ports(ctx)
	if err != nil {
		return nil, err
	}
	for _, p := range ports {
		if d.cfg.Filter.Match(p.Handle.String()) {
			r.ports = append(r.ports, p)
		}
	}
	reps, err := src.HealthReporters(ctx)
	if err != nil {
		return nil, err
	}
	for _, rep := range reps {
		if d.cfg.Filter.Match(rep.Handle.String()) {
			r.reporters = append(r.reporters, rep)
		}
	}
	for _, h := range r.devices {
		info, err := src.Info(ctx, h)
		switch {
		case err == nil:
			r.infos[h] = info
		case errors.Is(err, errors.ErrUnsupported):
			// The driver has no info operation.
		case ctx.Err() != nil:
			return nil, ctx.Err()
		default:
			sourceErr(h.String()+" info", err)
		}
	}
	return r, nil
}

// Update implements collector.Collector.
func (d *Collector) Update(ctx context.Context, p *collector.Poll) error {
	src, err := d.source()
	if err != nil {
		return err
	}
	stamp := d.startRead()
	r, err := d.read(ctx, src, p.SourceError)
	if err != nil {
		return fmt.Errorf("reading devlink: %w", err)
	}
	d.enqueue(d.apply(r, stamp), "poll")
	d.render(p)
	return nil
}
