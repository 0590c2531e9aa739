package devlinkhealth

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/devlink"
)

// pendingCapture is evidence to capture for one reporter.
type pendingCapture struct {
	key     reporterKey
	r       devlink.HealthReporter
	trigger string
}

// captureQueueLen bounds the captures waiting for the capture worker.
const captureQueueLen = 256

// enqueue hands captures to the worker that Watch runs, so neither a poll
// nor the event loop waits for diagnose and dump (an mlx5 fw_fatal dump
// is a multi-megabyte crdump). When the queue is full the evidence is
// dropped and logged; the counters are unaffected.
func (d *Collector) enqueue(pending []pendingCapture, trigger string) {
	if d.captureQueue == nil {
		return
	}
	for _, pc := range pending {
		pc.trigger = trigger
		select {
		case d.captureQueue <- pc:
		default:
			d.log.Warn("devlink evidence capture queue full; evidence dropped", zap.String("reporter", pc.r.ReporterID.String()))
		}
	}
}

// captureWorker writes queued evidence until ctx is done, publishing the
// state after each file so the capture counter moves at once.
func (d *Collector) captureWorker(ctx context.Context, src Source, publish func(func(*collector.Poll))) {
	for {
		select {
		case <-ctx.Done():
			return
		case pc := <-d.captureQueue:
			cctx, cancel := context.WithTimeout(ctx, captureTimeout)
			d.capture1(cctx, src, pc)
			cancel()
			d.mu.Lock()
			polled := d.state.polled
			d.mu.Unlock()
			if polled {
				publish(d.render)
			}
		}
	}
}

// capture1 writes the evidence of one capture.
func (d *Collector) capture1(ctx context.Context, src Source, pc pendingCapture) {
	ev := collectEvidence(ctx, src, pc.r, pc.trigger)
	path, err := d.capture.write(ev)
	if path == "" {
		d.log.Warn("writing devlink evidence failed", zap.String("reporter", pc.r.ReporterID.String()), zap.Error(err))
		return
	}
	if err != nil {
		d.log.Warn("removing old devlink evidence failed", zap.String("dir", d.cfg.Capture.Dir), zap.Error(err))
	}
	d.log.Info("devlink health reporter error: evidence captured",
		zap.String("reporter", pc.r.ReporterID.String()), zap.String("file", path))
	d.mu.Lock()
	if _, ok := d.state.reporters[pc.key]; ok {
		d.state.captures[pc.key]++
	}
	d.mu.Unlock()
}

// captureTimeout bounds the requests of one capture or one refresh.
const captureTimeout = 5 * time.Second
