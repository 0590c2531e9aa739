package mad

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"
)

// Switch is one switch found by Discover: its identity, its LID (that of
// its management port 0, where PerfMgt MADs go), the directed route it
// was reached by, and its ports that are not Down.
type Switch struct {
	GUID     uint64
	Desc     string
	LID      uint16
	NumPorts uint8
	Path     []uint8
	// Ports are the ports whose PortInfo says they are not Down, in
	// order, with their logical and physical state.
	Ports []SwitchPort
}

// SwitchPort is one port of a Switch that is not Down.
type SwitchPort struct {
	Num       uint8
	State     uint8
	PhysState uint8
}

// Querier is what Discover and Sweep send through; *Client implements
// it.
type Querier interface {
	NodeInfo(ctx context.Context, route Route) (NodeInfo, error)
	NodeDescription(ctx context.Context, route Route) (string, error)
	PortInfo(ctx context.Context, route Route, port uint8) (PortInfo, error)
	ClassPortInfo(ctx context.Context, lid uint16) (ClassPortInfo, error)
	PortCounters(ctx context.Context, lid uint16, port uint8) (PortCounters, error)
	PortCountersExtended(ctx context.Context, lid uint16, port uint8) (PortCountersExtended, error)
}

var _ Querier = (*Client)(nil)

// SweepConfig bounds a discovery or sweep.
type SweepConfig struct {
	// Concurrency is how many MADs are in flight at once; zero means 16.
	Concurrency int
	// Timeout bounds each MAD; zero means the context's deadline alone.
	Timeout time.Duration
	// States makes Sweep read each port's PortInfo too (one SMP a port,
	// by directed route), so a link that went down since the discovery
	// shows Down; without it PortReading.Info is the zero value.
	States bool
}

// timed gives each MAD of q its own timeout.
type timed struct {
	q Querier
	d time.Duration
}

func (t timed) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	if t.d <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, t.d)
}

func (t timed) NodeInfo(ctx context.Context, r Route) (NodeInfo, error) {
	ctx, cancel := t.ctx(ctx)
	defer cancel()
	return t.q.NodeInfo(ctx, r)
}

func (t timed) NodeDescription(ctx context.Context, r Route) (string, error) {
	ctx, cancel := t.ctx(ctx)
	defer cancel()
	return t.q.NodeDescription(ctx, r)
}

func (t timed) PortInfo(ctx context.Context, r Route, port uint8) (PortInfo, error) {
	ctx, cancel := t.ctx(ctx)
	defer cancel()
	return t.q.PortInfo(ctx, r, port)
}

func (t timed) ClassPortInfo(ctx context.Context, lid uint16) (ClassPortInfo, error) {
	ctx, cancel := t.ctx(ctx)
	defer cancel()
	return t.q.ClassPortInfo(ctx, lid)
}

func (t timed) PortCounters(ctx context.Context, lid uint16, port uint8) (PortCounters, error) {
	ctx, cancel := t.ctx(ctx)
	defer cancel()
	return t.q.PortCounters(ctx, lid, port)
}

func (t timed) PortCountersExtended(ctx context.Context, lid uint16, port uint8) (PortCountersExtended, error) {
	ctx, cancel := t.ctx(ctx)
	defer cancel()
	return t.q.PortCountersExtended(ctx, lid, port)
}

func (c SweepConfig) limit() int {
	if c.Concurrency <= 0 {
		return 16
	}
	return c.Concurrency
}

// Discover walks the fabric by directed route from the local port
// (breadth first, as ibnetdiscover does) and returns every switch it
// reaches, sorted by GUID. It reads NodeInfo of every node at the end of
// an up link, and NodeDescription and every PortInfo of each switch; it
// does not follow links that are Down. A MAD that fails drops the node or
// port it was for and is returned in errs; the walk goes on.
func Discover(ctx context.Context, q Querier, localPort uint8, cfg SweepConfig) (switches []Switch, errs []error) {
	c := timed{q, cfg.Timeout}
	var mu sync.Mutex
	seen := map[uint64]bool{}
	sem := make(chan struct{}, cfg.limit())
	do := func(f func()) {
		sem <- struct{}{}
		defer func() { <-sem }()
		f()
	}
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	level := [][]uint8{{localPort}}
	for len(level) > 0 && ctx.Err() == nil {
		var next [][]uint8
		var wg sync.WaitGroup
		for _, path := range level {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sw, more, err := visit(ctx, c, path, seen, &mu, do)
				if err != nil {
					fail(err)
				}
				mu.Lock()
				if sw != nil {
					switches = append(switches, *sw)
				}
				next = append(next, more...)
				mu.Unlock()
			}()
		}
		wg.Wait()
		level = next
	}
	sort.Slice(switches, func(i, j int) bool { return switches[i].GUID < switches[j].GUID })
	return switches, errs
}

// visit reads the node at the end of path; for a switch not seen before
// it returns the switch and the paths through its other up ports.
func visit(ctx context.Context, c Querier, path []uint8, seen map[uint64]bool, mu *sync.Mutex, do func(func())) (*Switch, [][]uint8, error) {
	route := DirectedRoute(path...)
	var ni NodeInfo
	var err error
	do(func() { ni, err = c.NodeInfo(ctx, route) })
	if err != nil {
		return nil, nil, err
	}
	if ni.NodeType != NodeTypeSwitch {
		return nil, nil, nil
	}
	mu.Lock()
	dup := seen[ni.NodeGUID]
	seen[ni.NodeGUID] = true
	mu.Unlock()
	if dup {
		return nil, nil, nil
	}
	sw := &Switch{GUID: ni.NodeGUID, NumPorts: ni.NumPorts, Path: append([]uint8(nil), path...)}
	var descErr, lidErr error
	do(func() { sw.Desc, descErr = c.NodeDescription(ctx, route) })
	do(func() {
		var pi PortInfo
		pi, lidErr = c.PortInfo(ctx, route, 0)
		sw.LID = pi.LID
	})
	if lidErr != nil {
		return nil, nil, fmt.Errorf("switch 0x%016x: %w", ni.NodeGUID, lidErr)
	}
	if descErr != nil {
		return nil, nil, fmt.Errorf("switch 0x%016x: %w", ni.NodeGUID, descErr)
	}
	ports := make([]*SwitchPort, int(ni.NumPorts)+1)
	var wg sync.WaitGroup
	var perr error
	var pmu sync.Mutex
	for p := 1; p <= int(ni.NumPorts); p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			do(func() {
				pi, err := c.PortInfo(ctx, route, uint8(p))
				pmu.Lock()
				defer pmu.Unlock()
				if err != nil {
					perr = err
					return
				}
				if pi.PortState != PortStateDown && pi.PortState != 0 {
					ports[p] = &SwitchPort{Num: uint8(p), State: pi.PortState, PhysState: pi.PhysState}
				}
			})
		}()
	}
	wg.Wait()
	var more [][]uint8
	for p, sp := range ports {
		if sp == nil {
			continue
		}
		sw.Ports = append(sw.Ports, *sp)
		if uint8(p) != ni.LocalPortNum && len(path) < maxHops {
			more = append(more, append(append([]uint8(nil), path...), uint8(p)))
		}
	}
	if perr != nil {
		return sw, more, fmt.Errorf("switch 0x%016x: %w", ni.NodeGUID, perr)
	}
	return sw, more, nil
}

// PortReading is what Sweep read of one switch port.
type PortReading struct {
	Switch *Switch
	Port   uint8
	// Info is the port's PortInfo as read by this sweep (its state now,
	// not at discovery), with SweepConfig.States.
	Info     PortInfo
	Counters PortCounters
	// Extended is set where the switch's ClassPortInfo indicates
	// PortCountersExtended and it was read.
	Extended *PortCountersExtended
	Class    ClassPortInfo
	Err      error
}

// Sweep reads PortCounters, PortCountersExtended where indicated, and
// with cfg.States PortInfo (the state now, not at discovery), of every
// port of every switch that was up at discovery, with at most cfg.Concurrency MADs in
// flight and each MAD bounded by cfg.Timeout. Each switch's ClassPortInfo
// is read first. The readings come
// back in switch and port order; a failed read has Err set.
func Sweep(ctx context.Context, q Querier, switches []Switch, cfg SweepConfig) []PortReading {
	c := timed{q, cfg.Timeout}
	var out []PortReading
	for i := range switches {
		for _, p := range switches[i].Ports {
			out = append(out, PortReading{Switch: &switches[i], Port: p.Num})
		}
	}
	sem := make(chan struct{}, cfg.limit())
	classes := make([]ClassPortInfo, len(switches))
	classErr := make([]error, len(switches))
	var wg sync.WaitGroup
	for i := range switches {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			classes[i], classErr[i] = c.ClassPortInfo(ctx, switches[i].LID)
		}()
	}
	wg.Wait()
	index := map[*Switch]int{}
	for i := range switches {
		index[&switches[i]] = i
	}
	for k := range out {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			r := &out[k]
			i := index[r.Switch]
			if classErr[i] != nil {
				r.Err = classErr[i]
				return
			}
			r.Class = classes[i]
			if cfg.States {
				if r.Info, r.Err = c.PortInfo(ctx, DirectedRoute(r.Switch.Path...), r.Port); r.Err != nil {
					return
				}
			}
			r.Counters, r.Err = c.PortCounters(ctx, r.Switch.LID, r.Port)
			if r.Err == nil && r.Class.ExtendedCounters() > 0 {
				if e, err := c.PortCountersExtended(ctx, r.Switch.LID, r.Port); err == nil {
					r.Extended = &e
				}
			}
		}()
	}
	wg.Wait()
	return out
}
