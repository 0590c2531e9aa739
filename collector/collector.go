// Package collector holds the collectors of nic_exporter and the machinery
// they share: a Runner per collector that polls on its own schedule and
// publishes immutable snapshots, a Cache that scrapes read with atomic loads
// only, device filters and rate-limited reporting of source errors.
package collector

import (
	"context"
	"errors"

	"github.com/nic-exporter/nic_exporter/collector/exposition"
)

// ErrNoSource is returned by Update, possibly wrapped, when the source a
// collector reads does not exist on this host: no InfiniBand devices, a
// kernel without devlink, no VMA statistics directory. The collector is
// then "up" with no series, so fleets of mixed hosts do not alert.
var ErrNoSource = errors.New("source not present on this host")

// A Collector reads one kind of source and writes its series.
type Collector interface {
	// Name returns the collector's name as used in flags and self-metrics.
	Name() string
	// Update reads the sources and adds every series to p. It must honour
	// ctx where it can. A call still running when the per-poll timeout
	// expires is abandoned, not waited for: the Runner calls Update again
	// on schedule while the abandoned call may still be blocked (in an
	// open of a FIFO, a hung driver call). State kept between polls must
	// therefore be guarded against concurrent calls; a mutex held for the
	// whole of Update is enough (the new call then waits on it and is
	// abandoned in turn, and the Runner bounds how many are outstanding).
	Update(ctx context.Context, p *Poll) error
}

// An EventSource is a Collector that also learns of changes between polls,
// for example from netlink multicast or /dev/kmsg.
type EventSource interface {
	Collector
	// Watch blocks until ctx is done or the event source fails. After each
	// event that changes what the collector exports, it calls publish with
	// a function that renders the collector's complete current state at the
	// time it is called, without I/O; the Runner turns that into a new
	// snapshot at once. The Runner may call the latest such function again
	// later: when an event is published while a poll is in progress, the
	// poll's result may predate the event, so the Runner renders the
	// current state again after the poll instead of publishing the poll's
	// possibly older series.
	Watch(ctx context.Context, publish func(render func(b *exposition.Builder))) error
}

// Poll is what a collector writes one poll's results to: the series, and
// the source errors that dropped single series without failing the poll.
type Poll struct {
	*exposition.Builder
	errs *SourceErrors
}

// NewPoll returns a Poll that writes to b and reports to errs. It is used
// by the Runner and by tests.
func NewPoll(b *exposition.Builder, errs *SourceErrors) *Poll {
	return &Poll{Builder: b, errs: errs}
}

// SourceError records that one series or one file could not be read. The
// poll goes on; the error is counted by reason in the self-metrics and
// logged once per key, then rate-limited. key names the failing object,
// typically a file path.
func (p *Poll) SourceError(key string, err error) {
	if p.errs != nil {
		p.errs.Report(key, err)
	}
}
