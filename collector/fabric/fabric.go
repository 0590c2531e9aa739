// Package fabric is the fabric collector: for each local InfiniBand HCA
// port it reads, over management datagrams (internal/mad), the port at the
// far end of its cable, usually a switch port, and exports that port's
// state and error and traffic counters labelled with both ends. A fleet
// where every node runs it covers every edge link of the fabric with a
// few MADs per node and no central poller.
package fabric

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/internal/mad"
)

// Querier is what the collector needs of a MAD client; *mad.Client
// implements it.
type Querier interface {
	PortInfo(ctx context.Context, route mad.Route, port uint8) (mad.PortInfo, error)
	NodeInfo(ctx context.Context, route mad.Route) (mad.NodeInfo, error)
	NodeDescription(ctx context.Context, route mad.Route) (string, error)
	ClassPortInfo(ctx context.Context, lid uint16) (mad.ClassPortInfo, error)
	PortCounters(ctx context.Context, lid uint16, port uint8) (mad.PortCounters, error)
	PortCountersExtended(ctx context.Context, lid uint16, port uint8) (mad.PortCountersExtended, error)
	ResetPortCounters(ctx context.Context, lid uint16, port uint8, sel mad.CounterSelect) (mad.PortCounters, error)
	Close() error
}

var _ Querier = (*mad.Client)(nil)

// Endpoint is one local HCA port and the MAD client that sends through it.
type Endpoint struct {
	// Device and Port name the local port (mlx5_0, 1); Port is also the
	// first hop of the directed route to the far end.
	Device string
	Port   uint8
	Client Querier
}

// Opener opens the local endpoints. It returns an error wrapping
// collector.ErrNoSource when the host has no InfiniBand management
// interface.
type Opener func(log *zap.Logger) ([]Endpoint, error)

// Config configures the fabric collector.
type Config struct {
	// Open opens the endpoints at the first poll, and again at the next
	// poll after it failed.
	Open Opener
	// Filter selects local devices by name; excluded devices send no MAD.
	Filter collector.NameFilter
	// MADTimeout bounds each request; a request that times out is a
	// counted source error and the poll goes on. Zero means 500 ms.
	MADTimeout time.Duration
	// Concurrency is how many local ports are queried at once. Zero
	// means 4.
	Concurrency int
	// Scope is ScopeFarEnd (the default: the far end of each local port)
	// or ScopeSwitches (every port of every switch reachable from the
	// first selected local port, for one or a few designated hosts).
	Scope string
	// SweepConcurrency bounds the MADs in flight of the switches sweep.
	// Zero means 16.
	SweepConcurrency int
	// Rediscover is how long the switches sweep uses a discovery before
	// walking the fabric again. Zero means 10 minutes.
	Rediscover time.Duration
	// ResetSaturated makes the collector reset, with a Set of
	// PortCounters, the fixed-width counters of a far-end or swept port
	// that it read stuck at their maximum, so that they count again. Off
	// by default: the reset is seen by every other reader of the port.
	ResetSaturated bool
	// ResetInterval is the least time between two resets of one port.
	// Zero means one hour.
	ResetInterval time.Duration
}

// The scopes of Config.Scope.
const (
	ScopeFarEnd   = "far-end"
	ScopeSwitches = "switches"
)

// Collector exports the far end of each local HCA port. It keeps its MAD
// clients open between polls; Close closes them (ibsim frees a client
// slot only then).
type Collector struct {
	cfg Config
	log *zap.Logger

	mu        sync.Mutex // held for the whole of Update and Close
	endpoints []Endpoint
	opened    bool
	// remotes holds, by endpoint key, the far end last seen; remotesMu
	// guards it between the concurrent queries of one poll.
	remotes   map[string]*remote
	remotesMu sync.Mutex
	// switches is the switches sweep's last discovery, made at
	// discovered.
	switches   []mad.Switch
	discovered time.Time
	// resetHist holds the resets sent to each port, far end or swept,
	// by "guid/port", guarded by remotesMu: a port keeps its history
	// when its far-end entry is forgotten and looked up again.
	resetHist map[string]*resets
}

// resets is the reset history of one port.
type resets struct {
	last  time.Time
	count uint64
}

// remote is what the collector remembers of a far end between polls.
type remote struct {
	guid   uint64
	node   string
	port   uint8
	typ    uint8
	lid    uint16
	cpi    mad.ClassPortInfo
	cpiOK  bool
	labels []string // remote_guid, remote_node, remote_port
}

// New returns a fabric collector.
func New(cfg Config, log *zap.Logger) *Collector {
	if cfg.MADTimeout <= 0 {
		cfg.MADTimeout = 500 * time.Millisecond
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 4
	}
	if cfg.SweepConcurrency <= 0 {
		cfg.SweepConcurrency = 16
	}
	if cfg.Rediscover <= 0 {
		cfg.Rediscover = 10 * time.Minute
	}
	if cfg.ResetInterval <= 0 {
		cfg.ResetInterval = time.Hour
	}
	return &Collector{cfg: cfg, log: log, remotes: map[string]*remote{}, resetHist: map[string]*resets{}}
}

// Name implements collector.Collector.
func (*Collector) Name() string { return "fabric" }

var (
	_ collector.Collector = (*Collector)(nil)
	_ io.Closer           = (*Collector)(nil)
)

// Close closes the MAD clients.
func (c *Collector) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, ep := range c.endpoints {
		if err := ep.Client.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing the MAD client of %s port %d: %w", ep.Device, ep.Port, err))
		}
	}
	c.endpoints, c.opened = nil, false
	return errors.Join(errs...)
}

// result is what one poll read through one endpoint.
type result struct {
	ep         Endpoint
	localState uint8 // 0: not read
	linkDown   bool
	rem        *remote // the far end this poll or, when the link is down, as last seen
	reached    bool    // the far end answered NodeInfo this poll
	read       bool    // the far end was read completely
	state      uint8
	phys       uint8
	values     []value
	resets     *resets // with the reset on, the far-end port's history
}

// Update implements collector.Collector.
func (c *Collector) Update(ctx context.Context, p *collector.Poll) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.opened {
		eps, err := c.cfg.Open(c.log)
		if err != nil {
			return err
		}
		c.endpoints, c.opened = eps, true
	}
	var eps []Endpoint
	for _, ep := range c.endpoints {
		if c.cfg.Filter.Match(ep.Device) {
			eps = append(eps, ep)
		}
	}
	if c.cfg.Scope == ScopeSwitches {
		return c.sweep(ctx, p, eps)
	}
	results := make([]result, len(eps))
	sem := make(chan struct{}, c.cfg.Concurrency)
	var wg sync.WaitGroup
	for i, ep := range eps {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			results[i] = c.query(ctx, p, ep)
		}()
	}
	wg.Wait()
	seen := make(map[string]bool, len(results))
	for _, r := range results {
		seen[key(r.ep)] = true
		emit(p, r)
	}
	// Forget the far ends of endpoints no longer polled.
	for k := range c.remotes {
		if !seen[k] {
			delete(c.remotes, k)
		}
	}
	p.SetDevices(len(eps))
	return ctx.Err()
}

func key(ep Endpoint) string { return ep.Device + "/" + strconv.Itoa(int(ep.Port)) }

// query reads the far end of one local port. Each MAD has its own
// timeout; a failure is reported as a source error and ends the query of
// this port only.
func (c *Collector) query(ctx context.Context, p *collector.Poll, ep Endpoint) result {
	r := result{ep: ep}
	k := key(ep)
	q := ep.Client
	fail := func(what string, err error) result {
		p.SourceError(fmt.Sprintf("fabric %s port %d: %s", ep.Device, ep.Port, what), err)
		return r
	}
	mctx := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, c.cfg.MADTimeout) }

	// The local port, by a directed route of no hops.
	cx, cancel := mctx()
	local, err := q.PortInfo(cx, mad.DirectedRoute(), ep.Port)
	cancel()
	if err != nil {
		return fail("local PortInfo", err)
	}
	r.localState = local.PortState
	c.mu2(func() { r.rem = c.remotes[k] })
	if local.PortState == mad.PortStateDown {
		r.linkDown = true
		return r
	}
	hop := mad.DirectedRoute(ep.Port)
	cx, cancel = mctx()
	ni, err := q.NodeInfo(cx, hop)
	cancel()
	if err != nil {
		return fail("far-end NodeInfo", err)
	}
	r.reached = true
	rem := r.rem
	if rem == nil || rem.guid != ni.NodeGUID || rem.port != ni.LocalPortNum {
		rem = &remote{guid: ni.NodeGUID, port: ni.LocalPortNum, typ: ni.NodeType}
		cx, cancel = mctx()
		rem.node, err = q.NodeDescription(cx, hop)
		cancel()
		if err != nil {
			return fail("far-end NodeDescription", err)
		}
		// A switch's LID is that of its management port 0.
		lidPort := rem.port
		if rem.typ == mad.NodeTypeSwitch {
			lidPort = 0
		}
		cx, cancel = mctx()
		pi, err := q.PortInfo(cx, hop, lidPort)
		cancel()
		if err != nil {
			return fail("far-end PortInfo of its LID", err)
		}
		rem.lid = pi.LID
		rem.labels = []string{fmt.Sprintf("0x%016x", rem.guid), rem.node, strconv.Itoa(int(rem.port))}
	}
	r.rem = rem
	c.mu2(func() { c.remotes[k] = rem })

	cx, cancel = mctx()
	rpi, err := q.PortInfo(cx, hop, rem.port)
	cancel()
	if err != nil {
		return fail("far-end PortInfo", err)
	}
	r.state, r.phys = rpi.PortState, rpi.PhysState
	if rem.lid == 0 {
		// PerfMgt MADs are LID-routed: without a subnet manager the far
		// end has no LID yet.
		return fail("far-end counters", errors.New("the far end has no LID (no subnet manager has configured it)"))
	}
	// forget drops the far end so that the next poll looks it up again:
	// after a LID change its counter queries fail until then.
	forget := func() { c.mu2(func() { delete(c.remotes, k) }) }
	if !rem.cpiOK {
		cx, cancel = mctx()
		cpi, err := q.ClassPortInfo(cx, rem.lid)
		cancel()
		if err != nil {
			forget()
			return fail("far-end PerfMgt ClassPortInfo", err)
		}
		rem.cpi, rem.cpiOK = cpi, true
	}
	cx, cancel = mctx()
	pc, err := q.PortCounters(cx, rem.lid, rem.port)
	cancel()
	if err != nil {
		forget()
		return fail("far-end PortCounters", err)
	}
	var ext *mad.PortCountersExtended
	if rem.cpi.ExtendedCounters() > 0 {
		cx, cancel = mctx()
		e, err := q.PortCountersExtended(cx, rem.lid, rem.port)
		cancel()
		if err != nil {
			// The 32-bit data counters of PortCounters stand in.
			p.SourceError(fmt.Sprintf("fabric %s port %d: far-end PortCountersExtended", ep.Device, ep.Port), err)
		} else {
			ext = &e
		}
	}
	r.values = counterValues(rem.cpi, pc, ext)
	r.read = true
	if c.cfg.ResetSaturated {
		r.resets = c.history(rem.guid, rem.port)
		c.reset(ctx, p, q, rem.lid, rem.port, r.values, r.resets, fmt.Sprintf("fabric %s port %d: far-end", ep.Device, ep.Port))
	}
	return r
}

// history returns the reset history of port of the node guid.
func (c *Collector) history(guid uint64, port uint8) *resets {
	k := fmt.Sprintf("0x%016x/%d", guid, port)
	c.remotesMu.Lock()
	defer c.remotesMu.Unlock()
	h := c.resetHist[k]
	if h == nil {
		h = &resets{}
		c.resetHist[k] = h
	}
	return h
}

// reset resets the counters of values stuck at their maximum on port of
// the node with the given LID, unless the port was reset less than
// ResetInterval ago. The values exported this poll are those read before
// the reset; the next poll reads the counters from zero, which
// Prometheus takes as a counter reset. A failed reset is a source error
// and is tried again at the next poll.
func (c *Collector) reset(ctx context.Context, p *collector.Poll, q Querier, lid uint16, port uint8, values []value, h *resets, what string) {
	sel := stuckSelect(values)
	if sel == 0 || (!h.last.IsZero() && time.Since(h.last) < c.cfg.ResetInterval) {
		return
	}
	cx, cancel := context.WithTimeout(ctx, c.cfg.MADTimeout)
	defer cancel()
	if _, err := q.ResetPortCounters(cx, lid, port, sel); err != nil {
		p.SourceError(what+" PortCounters reset", err)
		return
	}
	h.last = time.Now()
	h.count++
	c.log.Info("reset saturated port counters", zap.String("port", what), zap.Uint16("lid", lid), zap.Uint8("port_number", port),
		zap.String("counters", fmt.Sprintf("0x%05x", uint32(sel))), zap.Duration("next_reset_after", c.cfg.ResetInterval))
}

// mu2 runs f under the lock of the remotes map, which the queries of one
// poll share.
func (c *Collector) mu2(f func()) {
	c.remotesMu.Lock()
	defer c.remotesMu.Unlock()
	f()
}

var nodeTypes = map[uint8]string{mad.NodeTypeCA: "ca", mad.NodeTypeSwitch: "switch", mad.NodeTypeRouter: "router"}

// emit adds the series of one endpoint's result.
func emit(p *collector.Poll, r result) {
	dev, port := r.ep.Device, strconv.Itoa(int(r.ep.Port))
	if r.localState != 0 {
		p.Add(fabricLocalState, float64(r.localState), dev, port)
	}
	up := 0.0
	if r.read {
		up = 1
	}
	p.Add(fabricRemoteUp, up, dev, port)
	if r.rem == nil || r.rem.labels == nil {
		return
	}
	labels := append([]string{dev, port}, r.rem.labels...)
	if r.linkDown {
		p.Add(fabricLinkUp, 0, labels...)
		return
	}
	if !r.reached {
		return
	}
	p.Add(fabricLinkUp, 1, labels...)
	typ := nodeTypes[r.rem.typ]
	if typ == "" {
		typ = strconv.Itoa(int(r.rem.typ))
	}
	p.Add(fabricRemoteInfo, 1, append(labels, typ, strconv.Itoa(int(r.rem.lid)))...)
	if r.state == 0 {
		return
	}
	p.Add(fabricRemoteState, float64(r.state), labels...)
	p.Add(fabricRemotePhysState, float64(r.phys), labels...)
	if r.resets != nil {
		p.Add(fabricRemoteResets, float64(r.resets.count), labels...)
	}
	for _, v := range r.values {
		p.Add(v.c.desc, float64(v.v)*v.c.scale, labels...)
		if fixed, stuck := v.saturated(); fixed {
			sat := 0.0
			if stuck {
				sat = 1
			}
			p.Add(fabricSaturated, sat, append(labels, v.c.name)...)
		}
	}
}

// keepKnownPorts adds to each newly discovered switch the ports an
// earlier discovery found up and this one did not: a port that went down
// keeps being read, so its series shows Down instead of disappearing.
func keepKnownPorts(found, old []mad.Switch) []mad.Switch {
	prev := make(map[uint64][]mad.SwitchPort, len(old))
	for _, sw := range old {
		prev[sw.GUID] = sw.Ports
	}
	for i := range found {
		have := make(map[uint8]bool, len(found[i].Ports))
		for _, pt := range found[i].Ports {
			have[pt.Num] = true
		}
		for _, pt := range prev[found[i].GUID] {
			if !have[pt.Num] {
				found[i].Ports = append(found[i].Ports, pt)
			}
		}
		sort.Slice(found[i].Ports, func(a, b int) bool { return found[i].Ports[a].Num < found[i].Ports[b].Num })
	}
	return found
}

// sweep reads every switch port reachable from the first selected local
// port: a directed-route discovery when the last one is older than
// Rediscover (or failed to find any switch, or a query of the last sweep
// failed), then PortInfo and the counters of every port that was up at
// discovery. A failed MAD drops its port's series for this poll and is a
// counted source error.
func (c *Collector) sweep(ctx context.Context, p *collector.Poll, eps []Endpoint) error {
	if len(eps) == 0 {
		p.SetDevices(0)
		return nil
	}
	ep := eps[0]
	cfg := mad.SweepConfig{Concurrency: c.cfg.SweepConcurrency, Timeout: c.cfg.MADTimeout, States: true}
	if len(c.switches) == 0 || time.Since(c.discovered) >= c.cfg.Rediscover {
		switches, errs := mad.Discover(ctx, ep.Client, ep.Port, cfg)
		for _, err := range errs {
			p.SourceError(fmt.Sprintf("fabric discovery from %s port %d", ep.Device, ep.Port), err)
		}
		if len(switches) > 0 {
			c.switches, c.discovered = keepKnownPorts(switches, c.switches), time.Now()
		}
	}
	for _, sw := range c.switches {
		p.Add(fabricSwitchInfo, 1, fmt.Sprintf("0x%016x", sw.GUID), sw.Desc, strconv.Itoa(int(sw.LID)))
	}
	for _, r := range mad.Sweep(ctx, ep.Client, c.switches, cfg) {
		guid := fmt.Sprintf("0x%016x", r.Switch.GUID)
		if r.Err != nil {
			p.SourceError(fmt.Sprintf("fabric switch %s port %d", guid, r.Port), r.Err)
			// The path found at discovery may run through a link that
			// went down since: discover again at the next poll rather
			// than losing the switch until Rediscover has passed.
			c.discovered = time.Time{}
			continue
		}
		labels := []string{guid, r.Switch.Desc, strconv.Itoa(int(r.Port))}
		p.Add(fabricSwitchState, float64(r.Info.PortState), labels...)
		p.Add(fabricSwitchPhysState, float64(r.Info.PhysState), labels...)
		values := counterValues(r.Class, r.Counters, r.Extended)
		if c.cfg.ResetSaturated {
			h := c.history(r.Switch.GUID, r.Port)
			c.reset(ctx, p, ep.Client, r.Switch.LID, r.Port, values, h, "fabric switch "+guid+" port "+strconv.Itoa(int(r.Port)))
			p.Add(fabricSwitchResets, float64(h.count), labels...)
		}
		for _, v := range values {
			p.Add(v.c.sw, float64(v.v)*v.c.scale, labels...)
			if fixed, stuck := v.saturated(); fixed {
				sat := 0.0
				if stuck {
					sat = 1
				}
				p.Add(fabricSwitchSaturated, sat, append(labels, v.c.name)...)
			}
		}
	}
	p.SetDevices(len(c.switches))
	return ctx.Err()
}
