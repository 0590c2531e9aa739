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
	"sort"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
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

type devlinkState struct {
	polled    bool
	devices   []devlink.Handle
	netdevs   map[portKey]string
	infos     map[devlink.Handle]devlink.Info
	reporters map[reporterKey]*reporterState
	events    map[eventKey]uint64
	captures  map[reporterKey]uint64
	// gen counts the health events applied to reporters; a read records
	// it before it starts, so apply knows which reporters an event
	// updated while the read was under way.
	gen uint64
	// reads counts the reads started (polls and refreshes after events,
	// which run concurrently); applied is the number of the latest one
	// applied, so an older read never replaces a newer one.
	reads, applied uint64
}

type portKey struct {
	h     devlink.Handle
	index uint32
}

type reporterKey struct {
	h    devlink.Handle
	port string // decimal index, "" for device reporters
	name string
}

type eventKey struct {
	r     reporterKey
	state string
}

type reporterState struct {
	r devlink.HealthReporter
	// baseline is the error count evidence was last captured for (or
	// that was found at the first sighting).
	baseline uint64
	// eventGen is the devlinkState.gen of the health event that set r,
	// 0 if a read set it.
	eventGen uint64
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

var (
	devlinkReporterLabels = []string{"device", "port", "netdev", "reporter"}

	devlinkHealthy = exposition.MustNewDesc("nic_devlink_health_reporter_healthy",
		"1 if the devlink health reporter is healthy, 0 if it is in error. mlx5: fw in error is a firmware issue; fw_fatal in error is critical (cold reboot, contact support); vnic in error is a VF issue.",
		exposition.Gauge, devlinkReporterLabels...)
	devlinkErrors = exposition.MustNewDesc("nic_devlink_health_reporter_errors_total",
		"Errors the driver reported to the devlink health reporter since it was created.",
		exposition.Counter, devlinkReporterLabels...)
	devlinkRecoveries = exposition.MustNewDesc("nic_devlink_health_reporter_recoveries_total",
		"Successful recoveries of the devlink health reporter since it was created.",
		exposition.Counter, devlinkReporterLabels...)
	devlinkAutoRecover = exposition.MustNewDesc("nic_devlink_health_reporter_auto_recover",
		"1 if the reporter recovers automatically after an error, else 0. Absent for reporters without a recover operation.",
		exposition.Gauge, devlinkReporterLabels...)
	devlinkGrace = exposition.MustNewDesc("nic_devlink_health_reporter_graceful_period_seconds",
		"Minimum time between two automatic recoveries of the reporter; an error within it stays unrecovered.",
		exposition.Gauge, devlinkReporterLabels...)
	devlinkLastDump = exposition.MustNewDesc("nic_devlink_health_reporter_last_dump_timestamp_seconds",
		"Wall-clock time of the reporter's stored dump. Absent when no dump is stored.",
		exposition.Gauge, devlinkReporterLabels...)
	devlinkEvents = exposition.MustNewDesc("nic_devlink_health_events_total",
		"Health reporter state notifications received from devlink's multicast group since the exporter started, by the state they announce (error or healthy).",
		exposition.Counter, "device", "port", "netdev", "reporter", "state")
	devlinkCaptures = exposition.MustNewDesc("nic_devlink_health_captures_total",
		"Evidence files (reporter attributes, diagnose and dump output) written to --collector.devlink.capture-dir since the exporter started.",
		exposition.Counter, devlinkReporterLabels...)
	devlinkInfo = exposition.MustNewDesc("nic_devlink_info",
		"Devlink device information, value 1: driver, serial number, board id (board.id or fw.psid) and running and stored firmware versions (fw.version or fw).",
		exposition.Gauge, "device", "driver", "serial_number", "board_id", "firmware_running", "firmware_stored")
)

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

// readStamp says when a read started: its number and the health event
// generation.
type readStamp struct{ seq, gen uint64 }

// startRead numbers a read that is about to start; apply takes the stamp.
func (d *Collector) startRead() readStamp {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.state.reads++
	return readStamp{seq: d.state.reads, gen: d.state.gen}
}

// apply replaces the state with what a read stamped st found and returns
// the reporters whose error count rose (or that are in error when first
// seen). A read that started before the last applied one is dropped. A
// reporter that a health event updated after the read started keeps the
// event's attributes unless the read's counts are newer: the read may
// predate the event.
func (d *Collector) apply(r *devlinkRead, st readStamp) []pendingCapture {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := &d.state
	if st.seq < s.applied {
		return nil
	}
	s.applied = st.seq
	gen := st.gen
	s.polled = true
	s.devices = r.devices
	s.infos = r.infos
	s.netdevs = map[portKey]string{}
	for _, p := range r.ports {
		if p.Netdev != "" {
			s.netdevs[portKey{p.Handle, p.Index}] = p.Netdev
		}
	}
	var out []pendingCapture
	seen := make(map[reporterKey]bool, len(r.reporters))
	for _, rep := range r.reporters {
		k := keyOf(rep.ReporterID)
		seen[k] = true
		if prev, ok := s.reporters[k]; ok && prev.eventGen > gen && !olderCounts(prev.r, rep) {
			continue
		}
		if c, ok := s.observe(k, rep); ok {
			out = append(out, c)
		}
	}
	for k := range s.reporters {
		if !seen[k] {
			delete(s.reporters, k)
		}
	}
	for k := range s.events {
		if !seen[k.r] {
			delete(s.events, k)
		}
	}
	for k := range s.captures {
		if !seen[k] {
			delete(s.captures, k)
		}
	}
	return out
}

// observe records a reporter's latest attributes and says whether
// evidence should be captured: its error count rose since the last
// capture, or, without an error count, it turned to error.
func (s *devlinkState) observe(k reporterKey, r devlink.HealthReporter) (pendingCapture, bool) {
	inError := r.State != nil && *r.State == devlink.HealthStateError
	prev, known := s.reporters[k]
	st := &reporterState{r: r}
	capture := false
	switch {
	case r.ErrorCount == nil:
		wasError := known && prev.r.State != nil && *prev.r.State == devlink.HealthStateError
		capture = inError && !wasError
	case !known:
		st.baseline = *r.ErrorCount
		capture = inError
	default:
		st.baseline = prev.baseline
		if prev.r.ErrorCount != nil && *r.ErrorCount < *prev.r.ErrorCount {
			// The count went down: the reporter was destroyed and
			// created again (devlink reload), its count restarted.
			st.baseline = 0
		}
		if *r.ErrorCount > st.baseline {
			st.baseline = *r.ErrorCount
			capture = true
		}
	}
	s.reporters[k] = st
	return pendingCapture{key: k, r: r}, capture
}

// olderCounts says whether a's error and recovery counts are both known
// and not above b's, and one of them is below: a is an older view of the
// same reporter than b. Every state change moves one of the counts.
func olderCounts(a, b devlink.HealthReporter) bool {
	if a.ErrorCount == nil || a.RecoverCount == nil || b.ErrorCount == nil || b.RecoverCount == nil {
		return false
	}
	ae, ar, be, br := *a.ErrorCount, *a.RecoverCount, *b.ErrorCount, *b.RecoverCount
	return ae <= be && ar <= br && (ae < be || ar < br)
}

func keyOf(id devlink.ReporterID) reporterKey {
	k := reporterKey{h: id.Handle, name: id.Name}
	if id.Port != nil {
		k.port = strconv.FormatUint(uint64(*id.Port), 10)
	}
	return k
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

// render writes the current state.
func (d *Collector) render(p *collector.Poll) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := &d.state
	p.SetDevices(len(s.devices))
	for _, h := range s.devices {
		info, ok := s.infos[h]
		if !ok {
			continue
		}
		serial := info.SerialNumber
		if serial == "" {
			serial = info.BoardSerialNumber
		}
		board := devlink.Lookup(info.Fixed, "board.id")
		if board == "" {
			board = devlink.Lookup(info.Fixed, "fw.psid")
		}
		p.Add(devlinkInfo, 1, h.String(), info.Driver, serial, board, firmware(info.Running), firmware(info.Stored))
	}
	keys := make([]reporterKey, 0, len(s.reporters))
	for k := range s.reporters {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].less(keys[j]) })
	for _, k := range keys {
		r := s.reporters[k].r
		labels := []string{k.h.String(), k.port, s.netdev(r.ReporterID), k.name}
		if r.State != nil {
			p.Add(devlinkHealthy, collector.Bool(*r.State == devlink.HealthStateHealthy), labels...)
		}
		if r.ErrorCount != nil {
			p.Add(devlinkErrors, float64(*r.ErrorCount), labels...)
		}
		if r.RecoverCount != nil {
			p.Add(devlinkRecoveries, float64(*r.RecoverCount), labels...)
		}
		if r.AutoRecover != nil {
			p.Add(devlinkAutoRecover, collector.Bool(*r.AutoRecover), labels...)
		}
		if r.GracefulPeriod != nil {
			p.Add(devlinkGrace, r.GracefulPeriod.Seconds(), labels...)
		}
		if r.LastDump != nil {
			p.Add(devlinkLastDump, float64(r.LastDump.UnixNano())/1e9, labels...)
		}
		for _, state := range []string{"error", "healthy"} {
			if n, ok := s.events[eventKey{k, state}]; ok {
				p.Add(devlinkEvents, float64(n), append(labels, state)...)
			}
		}
		if d.capture != nil {
			p.Add(devlinkCaptures, float64(s.captures[k]), labels...)
		}
	}
}

func (a reporterKey) less(b reporterKey) bool {
	if a.h != b.h {
		return a.h.String() < b.h.String()
	}
	if a.port != b.port {
		if len(a.port) != len(b.port) {
			return len(a.port) < len(b.port)
		}
		return a.port < b.port
	}
	return a.name < b.name
}

func (s *devlinkState) netdev(id devlink.ReporterID) string {
	if id.Port == nil {
		return ""
	}
	return s.netdevs[portKey{id.Handle, *id.Port}]
}

// firmware returns the firmware version among vs: fw.version, else fw.
func firmware(vs []devlink.Version) string {
	if v := devlink.Lookup(vs, "fw.version"); v != "" {
		return v
	}
	return devlink.Lookup(vs, "fw")
}

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

func (d *Collector) handleEvent(ctx context.Context, src Source, ev devlink.Event, publish func(func(*collector.Poll))) {
	switch ev.Kind {
	case devlink.EventHealth:
		r := ev.Reporter
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
	case devlink.EventDeviceNew, devlink.EventDeviceDel, devlink.EventPortNew, devlink.EventPortDel, devlink.EventOverrun:
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
}

// forget drops everything of a removed device from the state.
func (d *Collector) forget(h devlink.Handle) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := &d.state
	devices := s.devices[:0:0]
	for _, dh := range s.devices {
		if dh != h {
			devices = append(devices, dh)
		}
	}
	s.devices = devices
	delete(s.infos, h)
	for k := range s.netdevs {
		if k.h == h {
			delete(s.netdevs, k)
		}
	}
	for k := range s.reporters {
		if k.h == h {
			delete(s.reporters, k)
		}
	}
	for k := range s.events {
		if k.r.h == h {
			delete(s.events, k)
		}
	}
	for k := range s.captures {
		if k.h == h {
			delete(s.captures, k)
		}
	}
}

// captureTimeout bounds the requests of one capture or one refresh.
const captureTimeout = 5 * time.Second
