package daemon

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
)

// startupLogTick is how often logCollecting looks for collectors that
// completed their first poll.
const startupLogTick = 100 * time.Millisecond

// logCollecting logs one line per collector once its first poll is done:
// what it collects (devices and series), or that its first poll failed.
// A collector whose source is absent from this host is logged by its
// runner already ("source absent"), so it is not repeated here. It reads
// the runners' status only and returns when every collector has been
// logged or ctx is done.
func logCollecting(ctx context.Context, statuses func() []collector.Status, log *zap.Logger) {
	logged := make(map[string]bool)
	t := time.NewTicker(startupLogTick)
	defer t.Stop()
	for {
		all := true
		for _, s := range statuses() {
			if logged[s.Name] {
				continue
			}
			state := s.State()
			if state == collector.StateWaiting {
				all = false
				continue
			}
			logged[s.Name] = true
			switch {
			case !s.Up:
				log.Warn("collector's first poll failed; it keeps polling", zap.String("collector", s.Name), zap.Duration("took", s.LastDuration))
			case state != collector.StateAbsent:
				log.Info("collecting", zap.String("collector", s.Name), zap.Int("devices", s.Devices), zap.Int("series", s.Series), zap.Duration("first_poll", s.LastDuration))
			}
		}
		if all {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
