// Package ethtool is the ethtool collector: driver and firmware info, link
// settings and every driver statistic (ethtool -S) with fixed metric names,
// queue and priority numbers moved into labels, and curated mlx5 and ENA
// meanings.
package ethtool

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/internal/errclass"
	"github.com/nic-exporter/nic_exporter/internal/ethtoolioctl"
)

// QueueMode says what the ethtool collector does with per-queue
// statistics.
type QueueMode string

const (
	// QueueKeep exports one series per queue, with a queue label.
	QueueKeep QueueMode = "keep"
	// QueueSum exports one series per interface, the sum over its queues,
	// and each queue's series as a detail series (nic_ethtool_per_queue_*,
	// served at /metrics/detail). The sum never goes backwards when queues
	// go away. It is the default.
	QueueSum QueueMode = "sum"
	// QueueDrop exports no per-queue statistics.
	QueueDrop QueueMode = "drop"
)

// ParseQueueMode checks a --collector.ethtool.per-queue value.
func ParseQueueMode(s string) (QueueMode, error) {
	switch m := QueueMode(s); m {
	case QueueKeep, QueueSum, QueueDrop:
		return m, nil
	}
	return "", fmt.Errorf("invalid per-queue mode %q: want keep, sum or drop", s)
}

// Config configures the ethtool collector.
type Config struct {
	// Source is where the collector reads; ethtoolioctl.New in production.
	Source Source
	// Filter selects interfaces by name; it is applied before any ioctl
	// on an interface.
	Filter collector.NameFilter
	// StatFilter selects statistics by the driver's name, as ethtool -S
	// prints it; the zero NameFilter selects all.
	StatFilter collector.NameFilter
	// QueueMode says what happens to per-queue statistics; empty means
	// QueueSum.
	QueueMode QueueMode
}

// maxEthtoolFamilies bounds the number of distinct metric families the
// collector creates from driver statistic names, so a driver with
// pathological names cannot grow memory without bound.
const maxEthtoolFamilies = 20000

// Collector exports driver information, link settings and the driver
// statistics of `ethtool -S` with metric names the exporter fixes: queue,
// priority and lane numbers become labels, counters are typed counters.
type Collector struct {
	// mu serializes polls: the Runner starts a new poll on schedule while
	// an abandoned one may still run, and both use the state below.
	mu          sync.Mutex
	cfg         Config
	log         *zap.Logger
	descs       map[string]*exposition.Desc // by OpenMetrics family name
	ifaces      map[string]*ethIface
	unsupported *errclass.Memo
}

// New returns an ethtool collector. It fails without a source or
// with an unknown queue mode.
func New(cfg Config, log *zap.Logger) (*Collector, error) {
	if cfg.Source == nil {
		return nil, errors.New("ethtool collector: no source")
	}
	if cfg.QueueMode == "" {
		cfg.QueueMode = QueueSum
	}
	if _, err := ParseQueueMode(string(cfg.QueueMode)); err != nil {
		return nil, err
	}
	e := &Collector{
		cfg:         cfg,
		log:         log,
		descs:       make(map[string]*exposition.Desc),
		ifaces:      make(map[string]*ethIface),
		unsupported: errclass.NewMemo(errclass.MemoConfig{}),
	}
	for _, d := range ethtoolFixed {
		e.descs[d.Name()] = d
	}
	return e, nil
}

// Name implements collector.Collector.
func (*Collector) Name() string { return "ethtool" }

var _ collector.Collector = (*Collector)(nil)

var (
	ethtoolInfo = exposition.MustNewDesc("nic_ethtool_info",
		"Driver information from ethtool -i, value 1.",
		exposition.Gauge, "device", "driver", "driver_version", "firmware_version", "bus_info")
	ethtoolSpeed = exposition.MustNewDesc("nic_ethtool_link_speed_bytes_per_second",
		"Link speed from the driver's link settings (ethtool). Absent when unknown, for example while the link is down.",
		exposition.Gauge, "device")
	ethtoolDuplex = exposition.MustNewDesc("nic_ethtool_link_full_duplex",
		"1 if the link is full duplex, 0 if half duplex. Absent when unknown.",
		exposition.Gauge, "device")
	ethtoolAutoneg = exposition.MustNewDesc("nic_ethtool_link_autoneg",
		"1 if link autonegotiation is on, else 0.",
		exposition.Gauge, "device")
	ethtoolDetected = exposition.MustNewDesc("nic_ethtool_link_detected",
		"1 if the driver detects a link (ethtool \"Link detected\"), else 0.",
		exposition.Gauge, "device")
	ethtoolStatCount = exposition.MustNewDesc("nic_ethtool_stats",
		"Statistics in the driver's ethtool -S table for the interface.",
		exposition.Gauge, "device")
	ethtoolSkipped = exposition.MustNewDesc("nic_ethtool_stats_skipped",
		"Statistics of the interface's current table that are not exported: invalid_name (nothing left after sanitizing), duplicate (another statistic of the interface maps to the same series), name_conflict (the name is taken by a family with other labels or type), family_limit (too many distinct names).",
		exposition.Gauge, "device", "reason")

	ethtoolFixed = []*exposition.Desc{ethtoolInfo, ethtoolSpeed, ethtoolDuplex, ethtoolAutoneg, ethtoolDetected, ethtoolStatCount, ethtoolSkipped}
)

var skipReasons = []string{"invalid_name", "duplicate", "name_conflict", "family_limit"}

// ethIface is what the collector remembers of one interface between
// polls: its statistic table, the plan that maps it to series, and the
// state of the monotonic per-queue sums.
type ethIface struct {
	name  string
	index int
	names []string // nil until fetched
	plan  *ethPlan
	vals  []uint64 // the values of this poll, bufs[turn].vals
	// bufs take turns holding a poll's values; see valsBuf.
	bufs [2]*valsBuf
	turn int
	sums map[string]*sumGroup // QueueSum: by family name
}

// valsBuf holds the statistic values of one poll of an interface. Two
// take turns (ethIface.bufs), so that a poll does not copy its values
// for its snapshot's deferred detail render, which reads the buffer its
// poll filled: on a host of 16 ports with 64 channels that copy was some
// 770 KB a poll, a quarter of what the exporter allocated between
// scrapes. mu keeps a render apart from the poll that refills the buffer
// two polls later. A render that comes after that refill (a detail
// scrape holding a snapshot for longer than a poll interval) shows the
// later poll's values; they fit the render's plan, since a new plan gets
// new buffers.
type valsBuf struct {
	mu   sync.Mutex
	vals []uint64
}

// ethPlan maps a statistic table to series. A plan is never changed
// after replan made it: the deferred detail render of a snapshot reads
// its detail series after later polls ran.
type ethPlan struct {
	series []ethSeries
	// detail are the series of detail families (each queue's own counter
	// in QueueSum mode), rendered only when a detail scrape asks. They
	// are most of a large host's plan (some 90,000 on 16 ports of 64
	// channels), so they hold no pointer: the garbage collector does not
	// scan them, and a series costs 12 bytes and no allocation of its own.
	detail []detailSeries
	// detailDescs are the families detail refers to, detailQueues the
	// queue label values it slices, device the device label.
	detailDescs  []*exposition.Desc
	detailQueues string
	device       string
	groups       []*sumGroup
	skipped      [4]int // by skipReasons
}

// detailSeries is one detail series of a plan: the statistic at index
// idx, in family detailDescs[desc], with the queue label value
// detailQueues[qOff:qOff+qLen].
type detailSeries struct {
	idx  uint32
	qOff uint32
	desc uint16
	qLen uint16
}

// appendDetail adds a detail series to the plan. It returns false, and
// adds nothing, for a queue label value or a table beyond the widths of
// detailSeries' fields, which only a made-up table reaches: the kernel's
// statistics names are at most 32 bytes, and the families are at most
// maxEthtoolFamilies, below the 65,536 the desc field holds.
func (p *ethPlan) appendDetail(idx int, desc *exposition.Desc, queue string, descIdx map[*exposition.Desc]int, queues *strings.Builder) bool {
	d, ok := descIdx[desc]
	if !ok {
		d = len(p.detailDescs)
		descIdx[desc] = d
		p.detailDescs = append(p.detailDescs, desc)
	}
	off := queues.Len()
	if d > math.MaxUint16 || len(queue) > math.MaxUint16 || uint64(idx) > math.MaxUint32 || uint64(off)+uint64(len(queue)) > math.MaxUint32 {
		return false
	}
	queues.WriteString(queue)
	p.detail = append(p.detail, detailSeries{idx: uint32(idx), qOff: uint32(off), desc: uint16(d), qLen: uint16(len(queue))})
	return true
}

// emitDetail adds the plan's detail series with the values vals.
func (p *ethPlan) emitDetail(poll *collector.Poll, vals []uint64) {
	for _, s := range p.detail {
		q := p.detailQueues[s.qOff : s.qOff+uint32(s.qLen)]
		poll.Add(p.detailDescs[s.desc], float64(vals[s.idx]), p.device, q)
	}
}

// ethSeries is one exported statistic.
type ethSeries struct {
	idx    int
	desc   *exposition.Desc
	labels []string
}

// sumGroup is one summed per-queue family of an interface. last holds the
// value each member queue had at the previous poll. ghosts holds the last
// value of queues that went away (channels reduced): they stay in the sum,
// and if the queue comes back with a counter at least as large (mlx5 keeps
// the statistics of closed channels) it simply continues. retired holds
// what queues that restarted from zero had counted. So the sum never goes
// backwards because of the exporter, and never counts a queue twice.
type sumGroup struct {
	desc    *exposition.Desc
	device  string
	idx     []int    // statistic indexes of the member queues
	queues  []string // their queue numbers
	last    []uint64
	primed  []bool
	ghosts  map[string]uint64
	ghostly uint64 // sum of ghosts
	retired uint64
}

// Update implements collector.Collector.
func (e *Collector) Update(ctx context.Context, p *collector.Poll) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	list, err := e.cfg.Source.Interfaces()
	if err != nil {
		return fmt.Errorf("listing network interfaces: %w", err)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	seen := make(map[string]bool, len(list))
	identities := make(map[string]bool, len(list))
	devices := 0
	for _, ifc := range list {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !e.cfg.Filter.Match(ifc.Name) {
			continue
		}
		st := e.ifaces[ifc.Name]
		if st == nil || st.index != ifc.Index {
			// New, or re-created under the same name: start over.
			st = &ethIface{name: ifc.Name, index: ifc.Index}
			e.ifaces[ifc.Name] = st
		}
		seen[ifc.Name] = true
		identity := fmt.Sprintf("%s#%d", ifc.Name, ifc.Index)
		identities[identity] = true
		found, err := e.pollIface(st, identity, p)
		switch {
		case errclass.IsNotExist(err):
			e.log.Debug("interface vanished during the poll", zap.String("device", ifc.Name), zap.Error(err))
			delete(e.ifaces, ifc.Name)
			delete(seen, ifc.Name)
		case err != nil:
			p.SourceError("ethtool "+ifc.Name, err)
		}
		if found {
			devices++
		}
	}
	for name := range e.ifaces {
		if !seen[name] {
			delete(e.ifaces, name)
		}
	}
	e.unsupported.Retain(identities)
	p.SetDevices(devices)
	return nil
}

// pollIface reads and emits one interface. found says whether the
// interface has ethtool driver information at all. An error that
// errclass.IsNotExist recognises means the interface went away: nothing of
// it was emitted.
func (e *Collector) pollIface(st *ethIface, identity string, p *collector.Poll) (found bool, err error) {
	if e.unsupported.Has(identity, "drvinfo") {
		return false, nil
	}
	info, err := e.cfg.Source.DriverInfo(st.name)
	if err != nil {
		if errclass.IsUnsupported(err) {
			// The loopback device and a few virtual ones have no ethtool
			// driver information: nothing to collect, not an error.
			e.unsupported.Add(identity, "drvinfo")
			return false, nil
		}
		return false, fmt.Errorf("driver information: %w", err)
	}
	var link ethtoolioctl.Link
	var linkErr error
	if !e.unsupported.Has(identity, "link") {
		link, linkErr = e.cfg.Source.Link(st.name)
		switch {
		case errclass.IsNotExist(linkErr):
			return false, linkErr
		case errclass.IsUnsupported(linkErr):
			e.unsupported.Add(identity, "link")
			linkErr = nil
		}
	}
	statsOK, statsErr := e.readStats(st, info.NStats)
	if errclass.IsNotExist(statsErr) {
		return false, statsErr
	}

	// Everything is read: emit.
	p.Add(ethtoolInfo, 1, st.name, info.Driver, info.Version, info.FirmwareVersion, info.BusInfo)
	if linkErr != nil {
		p.SourceError("ethtool "+st.name+" link", fmt.Errorf("link settings: %w", linkErr))
	}
	if link.HasSettings {
		if link.SpeedMbps != 0 && link.SpeedMbps != ^uint32(0) {
			p.Add(ethtoolSpeed, float64(link.SpeedMbps)*1e6/8, st.name)
		}
		switch link.Duplex {
		case 0, 1:
			p.Add(ethtoolDuplex, float64(link.Duplex), st.name)
		}
		p.Add(ethtoolAutoneg, collector.Bool(link.Autoneg == 1), st.name)
	}
	if link.HasDetected {
		p.Add(ethtoolDetected, collector.Bool(link.Detected), st.name)
	}
	p.Add(ethtoolStatCount, float64(info.NStats), st.name)
	if statsErr != nil {
		p.SourceError("ethtool "+st.name+" statistics", fmt.Errorf("statistics: %w", statsErr))
	}
	if statsOK {
		e.emitStats(p, st)
	}
	return true, nil
}

// readStats brings st's statistic table up to date and reads the values
// with one ETHTOOL_GSTATS. The table is fetched again only when the
// number of statistics changed (or the interface was re-created, which
// gives a fresh st). ok is false when there is nothing to emit.
func (e *Collector) readStats(st *ethIface, n int) (ok bool, err error) {
	if n <= 0 {
		st.names, st.plan, st.vals, st.bufs = nil, nil, nil, [2]*valsBuf{}
		return false, nil
	}
	for attempt := 0; attempt < 2; attempt++ {
		if len(st.names) != n || st.plan == nil {
			names, err := e.cfg.Source.StatNames(st.name, n)
			if errors.Is(err, ethtoolioctl.ErrStatCountChanged) && attempt == 0 {
				info, ierr := e.cfg.Source.DriverInfo(st.name)
				if ierr != nil {
					return false, ierr
				}
				n = info.NStats
				continue
			}
			if err != nil {
				return false, fmt.Errorf("statistic names: %w", err)
			}
			if len(names) != n {
				return false, fmt.Errorf("statistic names: got %d, want %d", len(names), n)
			}
			e.replan(st, names)
		}
		b := st.bufs[st.turn]
		b.mu.Lock()
		err := e.cfg.Source.Stats(st.name, b.vals)
		b.mu.Unlock()
		st.vals = b.vals
		if errors.Is(err, ethtoolioctl.ErrStatCountChanged) && attempt == 0 {
			info, ierr := e.cfg.Source.DriverInfo(st.name)
			if ierr != nil {
				return false, ierr
			}
			n = info.NStats
			st.names = nil
			continue
		}
		if err != nil {
			return false, err
		}
		return true, nil
	}
	e.log.Debug("statistic table kept changing during the poll; statistics skipped", zap.String("device", st.name))
	return false, nil
}

// replan builds the plan for a new statistic table and carries the
// per-queue sums over from the old one.
func (e *Collector) replan(st *ethIface, names []string) {
	st.names = names
	st.bufs = [2]*valsBuf{{vals: make([]uint64, len(names))}, {vals: make([]uint64, len(names))}}
	st.turn = 0
	st.vals = st.bufs[0].vals
	pl := &planner{e: e, st: st, plan: &ethPlan{device: st.name}, used: make(map[string]bool, len(names)),
		groups: make(map[*exposition.Desc]*sumGroup), summed: e.cfg.QueueMode == QueueSum,
		detailDescs: make(map[*exposition.Desc]int)}
	for i, raw := range names {
		pl.add(i, raw)
	}
	pl.plan.detailQueues = pl.detailQueues.String()
	// A family that vanished entirely keeps nothing: it is no longer
	// exported, so there is no series to keep monotonic.
	st.sums = carrySums(pl.plan.groups, st.sums)
	st.plan = pl.plan
}

// planner builds the plan of one interface's statistics names.
type planner struct {
	e    *Collector
	st   *ethIface
	plan *ethPlan
	// used holds the series (family and label values) already planned;
	// a second statistic with the same series is skipped.
	used   map[string]bool
	groups map[*exposition.Desc]*sumGroup
	summed bool // QueueSum mode
	// detailDescs indexes plan.detailDescs; detailQueues collects the
	// queue label values of the detail series, plan.detailQueues at the
	// end.
	detailDescs  map[*exposition.Desc]int
	detailQueues strings.Builder
}

// add plans the statistic at index i, named raw: a series of its own,
// or, in QueueSum mode, a member of its family's sum over queues and a
// detail series; or nothing, counted in plan.skipped with the reason.
func (pl *planner) add(i int, raw string) {
	e, plan := pl.e, pl.plan
	if !e.cfg.StatFilter.Match(raw) {
		return
	}
	n, ok := parseStatName(raw)
	if !ok {
		plan.skipped[0]++
		return
	}
	if n.kind == statQueue && e.cfg.QueueMode == QueueDrop {
		return
	}
	labels := []string{"device"}
	values := []string{pl.st.name}
	if n.kind != statDevice && !(n.kind == statQueue && pl.summed) {
		labels = append(labels, n.kind.label())
		values = append(values, n.index)
		if n.tc != "" {
			labels = append(labels, "tc")
			values = append(values, n.tc)
		}
	}
	name := "nic_ethtool_" + n.kind.prefix() + n.base
	typ := exposition.Counter
	if n.kind == statDevice && ethtoolGauges[n.base] {
		typ = exposition.Gauge
	}
	desc, reason := e.desc(name, typ, helpFor(n, pl.summed), labels, false)
	if desc == nil {
		plan.skipped[reason]++
		return
	}
	if n.kind == statQueue && pl.summed {
		pl.addQueueMember(i, n, desc, typ)
		return
	}
	key := desc.Name() + "\xff" + strings.Join(values[1:], "\xff")
	if pl.used[key] || pl.groups[desc] != nil { // a sum over queues has the name
		plan.skipped[1]++
		return
	}
	pl.used[key] = true
	plan.series = append(plan.series, ethSeries{idx: i, desc: desc, labels: values})
}

// addQueueMember plans a per-queue statistic in QueueSum mode: the
// queue's own counter as a detail series, and the queue as a member of
// the sum of desc.
func (pl *planner) addQueueMember(i int, n statName, desc *exposition.Desc, typ exposition.Type) {
	plan, st := pl.plan, pl.st
	// The queue's own counter, from the same read, is a detail
	// series: /metrics/detail serves it, /metrics does not.
	pq, reason := pl.e.desc(perQueuePrefix+n.base, typ, helpFor(n, false)+perQueueDetailHelp, []string{"device", n.kind.label()}, true)
	if pq == nil {
		plan.skipped[reason]++
	} else if pqKey := pq.Name() + "\xff" + n.index; !pl.used[pqKey] {
		pl.used[pqKey] = true
		if !plan.appendDetail(i, pq, n.index, pl.detailDescs, &pl.detailQueues) {
			plan.skipped[0]++ // a queue number of 65,536 digits
		}
	}
	if pl.used[desc.Name()+"\xff"] {
		// A device statistic already has the sum's name.
		plan.skipped[1]++
		return
	}
	g := pl.groups[desc]
	if g == nil {
		g = &sumGroup{desc: desc, device: st.name}
		pl.groups[desc] = g
		plan.groups = append(plan.groups, g)
	}
	key := n.index
	if n.tc != "" {
		// Each class's send queue of a channel is its own member.
		key += "/" + n.tc
	}
	if pl.used[desc.Name()+"\xff"+key] {
		plan.skipped[1]++
		return
	}
	pl.used[desc.Name()+"\xff"+key] = true
	g.idx = append(g.idx, i)
	g.queues = append(g.queues, key)
}

// carrySums carries the sums of the last plan (old, by family name) over
// to the groups of the new one and returns them by family name: a queue
// that is still there keeps its last value; one that went away becomes a
// ghost; a ghost whose queue is back becomes a member again with its
// last value.
func carrySums(groups []*sumGroup, old map[string]*sumGroup) map[string]*sumGroup {
	next := make(map[string]*sumGroup, len(groups))
	for _, g := range groups {
		g.last = make([]uint64, len(g.idx))
		g.primed = make([]bool, len(g.idx))
		g.ghosts = make(map[string]uint64)
		if o := old[g.desc.Name()]; o != nil {
			g.retired = o.retired
			pos := make(map[string]int, len(g.queues))
			for j, q := range g.queues {
				pos[q] = j
			}
			carry := func(q string, v uint64) {
				if k, ok := pos[q]; ok {
					g.last[k], g.primed[k] = v, true
				} else {
					g.ghosts[q] = v
					g.ghostly += v
				}
			}
			for j, q := range o.queues {
				if o.primed[j] {
					carry(q, o.last[j])
				}
			}
			for q, v := range o.ghosts {
				carry(q, v)
			}
		}
		next[g.desc.Name()] = g
	}
	return next
}

// perQueuePrefix names the detail families of per-queue statistics in
// QueueSum mode, which keep the queue label: nic_ethtool_per_queue_<stat>.
// They need a name of their own: the summed family is
// nic_ethtool_queue_<stat> with the device label only, and a query that
// sums over both jobs of a host must never count a queue twice.
const perQueuePrefix = "nic_ethtool_per_queue_"

// perQueueDetailHelp ends the help text of the per-queue detail families.
const perQueueDetailHelp = " Detail series, served at /metrics/detail; /metrics has the sum over queues as nic_ethtool_queue_*."

// desc returns the family for a run-time name, creating it on first use;
// detail marks it a detail family (exposition.Desc.AsDetail).
// It returns nil and the index of a skip reason when the name is taken by
// a family with other labels, type or part, or the family limit is reached.
func (e *Collector) desc(name string, typ exposition.Type, help string, labels []string, detail bool) (*exposition.Desc, int) {
	full := name
	if typ == exposition.Counter {
		full += "_total"
	}
	if d := e.descs[name]; d != nil {
		if d.Name() != full || d.Type() != typ || d.IsDetail() != detail || !equalStrings(d.Labels(), labels) {
			return nil, 2
		}
		return d, 0
	}
	if len(e.descs) >= maxEthtoolFamilies {
		return nil, 3
	}
	d, err := exposition.NewDesc(full, help, typ, labels...)
	if err != nil {
		// parseStatName only yields valid names; keep the guard anyway.
		return nil, 0
	}
	if detail {
		d = d.AsDetail()
	}
	e.descs[name] = d
	return d, 0
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// emitStats adds the statistics of one interface to b. The detail
// series are deferred: the poll copies the values (8 bytes a statistic)
// and the text is rendered only if a detail scrape asks for this poll's
// snapshot, which in the default setup never happens.
func (e *Collector) emitStats(p *collector.Poll, st *ethIface) {
	plan := st.plan
	for _, s := range plan.series {
		p.Add(s.desc, float64(st.vals[s.idx]), s.labels...)
	}
	if len(plan.detail) > 0 {
		b := st.bufs[st.turn]
		st.turn ^= 1 // the next poll reads into the other buffer
		p.AddDeferred(len(plan.detail), func(p *collector.Poll) {
			b.mu.Lock()
			defer b.mu.Unlock()
			plan.emitDetail(p, b.vals)
		})
	}
	for _, g := range plan.groups {
		p.Add(g.desc, float64(g.sum(st.vals)), g.device)
	}
	for i, n := range plan.skipped {
		if n > 0 {
			p.Add(ethtoolSkipped, float64(n), st.name, skipReasons[i])
		}
	}
}

// sum returns the group's monotonic sum for the current values. A queue
// whose counter went down restarted from zero (its channel was closed and
// re-opened, or a ghost came back reset): what it had counted is retired
// into the group first.
func (g *sumGroup) sum(vals []uint64) uint64 {
	total := g.retired + g.ghostly
	for j, i := range g.idx {
		v := vals[i]
		if g.primed[j] && v < g.last[j] {
			g.retired += g.last[j]
			total += g.last[j]
		}
		g.last[j], g.primed[j] = v, true
		total += v
	}
	return total
}
