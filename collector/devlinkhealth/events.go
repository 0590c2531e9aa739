package devlinkhealth

import (
	"context"
	"fmt"
	"sync"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/devlink"
)

// Watch implements collector.EventSource. Health notifications update the
// reporter and are published at once; device and port notifications and
// buffer overruns trigger a fresh read of the kernel's state.
func (d *Collector) Watch(ctx context.Context, publish func(render func(p *collector.Poll))) error {
	src, err := d.source()
	if err != nil {
		return err
	}
	events := make(chan devlink.Event, 64)
	watchErr := make(chan error, 1)
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	if d.captureQueue != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.captureWorker(wctx, src, publish)
		}()
	}
	go func() {
		watchErr <- src.Watch(wctx, func(ev devlink.Event) {
			select {
			case events <- ev:
			case <-wctx.Done():
			}
		})
	}()
	// Events are handled apart from the socket reader so a slow capture
	// or refresh never stalls the socket.
	for {
		select {
		case err := <-watchErr:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("watching devlink events: %w", err)
		case ev := <-events:
			d.handleEvent(ctx, src, ev, publish)
		}
	}
}

// handleEvent applies one devlink notification: a health event updates
// its reporter at once; a device or port coming or going, or lost
// notifications, trigger a fresh read.
func (d *Collector) handleEvent(ctx context.Context, src Source, ev devlink.Event, publish func(func(*collector.Poll))) {
	switch ev.Kind {
	case devlink.EventHealth:
		d.handleHealth(ev.Reporter, publish)
	case devlink.EventDeviceNew, devlink.EventDeviceDel, devlink.EventPortNew, devlink.EventPortDel, devlink.EventOverrun:
		d.refreshAfter(ctx, src, ev, publish)
	}
}

// handleHealth counts a health event of a selected reporter, records the
// reporter's new attributes unless a poll read newer ones meanwhile,
// publishes the state (once the first poll has) and queues a capture when
// the reporter's error count rose.
func (d *Collector) handleHealth(r *devlink.HealthReporter, publish func(func(*collector.Poll))) {
	if !d.cfg.Filter.Match(r.Handle.String()) {
		return
	}
	k := keyOf(r.ReporterID)
	d.mu.Lock()
	polled := d.state.polled
	state := "unknown"
	if r.State != nil {
		state = r.State.String()
	}
	d.state.events[eventKey{k, state}]++
	var pc pendingCapture
	capture := false
	if prev, ok := d.state.reporters[k]; !ok || !olderCounts(*r, prev.r) {
		// Not a notification older than what a poll read meanwhile
		// (one that waited in the queue during the poll).
		pc, capture = d.state.observe(k, *r)
		d.state.gen++
		d.state.reporters[k].eventGen = d.state.gen
	}
	d.mu.Unlock()
	if polled {
		publish(d.render)
	} // else the first poll publishes the complete state
	// Capture even before the first poll: this event set the
	// baseline error count, so that poll will not see a rise.
	if capture {
		d.enqueue([]pendingCapture{pc}, "event")
	}
}

// refreshAfter reads the kernel's state again after a device or port
// notification of a selected device (or an overrun), applies and
// publishes it, and queues the captures it calls for; a failed read is
// left to the next poll.
func (d *Collector) refreshAfter(ctx context.Context, src Source, ev devlink.Event, publish func(func(*collector.Poll))) {
	var h *devlink.Handle
	switch {
	case ev.Device != nil:
		h = &ev.Device.Handle
	case ev.Port != nil:
		h = &ev.Port.Handle
	}
	if h != nil && !d.cfg.Filter.Match(h.String()) {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, captureTimeout)
	defer cancel()
	stamp := d.startRead()
	r, err := d.read(rctx, src, func(key string, err error) {
		d.log.Debug("devlink refresh after an event: source error", zap.String("key", key), zap.Error(err))
	})
	if err != nil {
		d.log.Debug("devlink refresh after an event failed; the next poll retries", zap.String("event", ev.Kind.String()), zap.Error(err))
		return
	}
	pending := d.apply(r, stamp)
	if ev.Kind == devlink.EventDeviceDel && h != nil {
		// Devlink notifies before it stops listing the device, so
		// the read may still have found it.
		d.forget(*h)
	}
	publish(d.render)
	d.enqueue(pending, "event")
}
