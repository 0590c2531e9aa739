// Package collector is the framework the collectors of nic_exporter run
// in: the Collector and EventSource contract, the narrow Poll a collector
// writes one poll's series to, a Runner per collector that polls on its
// own schedule and publishes immutable snapshots that scrapes read with
// atomic loads only, the NameFilter for device and statistic names,
// rate-limited reporting of source errors, and the self-metrics. The
// collectors themselves live in the packages below it (collector/netdev,
// collector/infiniband, ...), one per source; none imports another.
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
	// a function that renders the collector's complete current state into
	// a Poll at the time it is called, without I/O; the Runner turns that
	// into a new snapshot at once. The Runner may call the latest such function again
	// later: when an event is published while a poll is in progress, the
	// poll's result may predate the event, so the Runner renders the
	// current state again after the poll instead of publishing the poll's
	// possibly older series.
	Watch(ctx context.Context, publish func(render func(p *Poll))) error
}

// Poll is what a collector writes one poll's results to: the series, the
// number of devices found, and the source errors that dropped single
// series without failing the poll. It is deliberately narrow: the Runner
// owns the builder behind it and reuses it from poll to poll, so a
// collector can add to it but never reset, replace or snapshot it.
type Poll struct {
	b    *exposition.Builder
	errs *SourceErrors
}

// NewPoll returns a Poll that writes to b and reports to errs (which may
// be nil). It is used by the Runner and by tests, which own b.
func NewPoll(b *exposition.Builder, errs *SourceErrors) *Poll {
	return &Poll{b: b, errs: errs}
}

// Add adds one sample of family d. A sample whose label values do not
// match d's label names is skipped and counted as invalid.
func (p *Poll) Add(d *exposition.Desc, value float64, labelValues ...string) {
	p.b.Add(d, value, labelValues...)
}

// AddDeferred adds series detail samples that render writes later, on
// the first /metrics/detail scrape of this poll's snapshot (see
// exposition.Builder.AddDeferred): a poll keeps what render needs instead
// of rendering per-queue or per-socket text that is rarely asked for.
// render must add exactly series samples of detail families, without I/O,
// from data that nothing changes after the poll; it gets a Poll of its
// own, which reports no source errors.
func (p *Poll) AddDeferred(series int, render func(p *Poll)) {
	p.b.AddDeferred(series, func(b *exposition.Builder) { render(NewPoll(b, nil)) })
}

// SetDevices records how many devices or files the poll found.
func (p *Poll) SetDevices(n int) { p.b.SetDevices(n) }

// AddDevices adds n to the number of devices or files the poll found.
func (p *Poll) AddDevices(n int) { p.b.AddDevices(n) }

// SourceError records that one series or one file could not be read. The
// poll goes on; the error is counted by reason in the self-metrics and
// logged once per key, then rate-limited. key names the failing object,
// typically a file path.
func (p *Poll) SourceError(key string, err error) {
	if p.errs != nil {
		p.errs.Report(key, err)
	}
}
