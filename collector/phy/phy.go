// Package phy is the physical-layer collector: pluggable module (optic)
// diagnostics with the module's own thresholds, the driver's reason for a
// down link and its link down count, the active FEC mode and FEC
// counters, and the IEEE 802.3 standard counters. It reads them through a
// Source (ethtool netlink on a host) and decodes module memory with
// internal/sff.
//
// Module memory is read on its own, slower schedule (Config.ModuleInterval,
// 60 s by default): a module read is a series of I2C transactions, about
// 0.1 s on some NICs, while the link state and counters are cheap.
package phy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/internal/errclass"
	"github.com/nic-exporter/nic_exporter/internal/sff"
)

// Config configures the physical-layer collector.
type Config struct {
	// Source is where the collector reads; NewHostSource in production.
	Source Source
	// Filter selects interfaces by name; it is applied before anything
	// of an interface is read.
	Filter collector.NameFilter
	// ModuleInterval is how often module memory is read; default 60 s.
	// Between reads the last decoded values are exported again.
	ModuleInterval time.Duration
	// UnsupportedRetry is how long an operation the driver answered
	// EOPNOTSUPP, or the kernel refused with EPERM or EACCES, is not
	// asked again (unless the interface's index or driver changes
	// first); default one hour.
	UnsupportedRetry time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Operations, as keys of what a device does not support and in source
// error keys.
const (
	opLinkState = "linkstate"
	opFEC       = "fec"
	opStats     = "stats"
	opModule    = "module"
)

// Collector is the physical-layer collector.
type Collector struct {
	// mu serializes polls: the Runner starts a new poll on schedule while
	// an abandoned one may still run, and both use the state below.
	mu      sync.Mutex
	cfg     Config
	log     *zap.Logger
	stats   StatsSource  // nil when the source has no standard counters
	modules ModuleSource // nil when the source reads no module memory
	devs    map[string]*device
	// unsupported remembers, by interface name, the operations answered
	// EOPNOTSUPP, EPERM or EACCES, for UnsupportedRetry.
	unsupported *errclass.Memo
	// deniedLogged holds the operations whose refusal for lack of a
	// privilege was logged: once per process (see denied).
	deniedLogged map[string]bool
}

// device is what the collector remembers of one interface.
type device struct {
	iface Interface
	// Module state: when the memory was last read (successfully or not),
	// the last decoded module (nil: none, or the last read failed) and
	// when that succeeded.
	moduleTried time.Time
	module      *sff.Module
	moduleRead  time.Time
	warnings    string // the decoder's last warnings, logged when they change
}

// New returns a physical-layer collector. It fails without a source.
func New(cfg Config, log *zap.Logger) (*Collector, error) {
	if cfg.Source == nil {
		return nil, errors.New("phy collector: no source")
	}
	if cfg.ModuleInterval <= 0 {
		cfg.ModuleInterval = time.Minute
	}
	if cfg.UnsupportedRetry <= 0 {
		cfg.UnsupportedRetry = time.Hour
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	c := &Collector{cfg: cfg, log: log, devs: make(map[string]*device), deniedLogged: make(map[string]bool),
		unsupported: errclass.NewMemo(errclass.MemoConfig{Retry: cfg.UnsupportedRetry, Now: cfg.Now})}
	c.stats, _ = cfg.Source.(StatsSource)
	c.modules, _ = cfg.Source.(ModuleSource)
	return c, nil
}

// Name implements collector.Collector.
func (*Collector) Name() string { return "phy" }

var _ collector.Collector = (*Collector)(nil)

// reading is what one poll read of one interface, emitted only once the
// interface was read to the end.
type reading struct {
	link  *LinkState
	fec   *FEC
	stats *Stats
	errs  []opError // source errors, reported after the reads
}

// opError is the source error of one operation. logged says the
// collector has logged it already: it is only counted.
type opError struct {
	op     string
	err    error
	logged bool
}

// Update implements collector.Collector.
func (c *Collector) Update(ctx context.Context, p *collector.Poll) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	list, err := c.cfg.Source.Interfaces()
	if err != nil {
		return fmt.Errorf("listing network interfaces: %w", err)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	seen := make(map[string]bool, len(list))
	devices := 0
	for _, ifc := range list {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !c.cfg.Filter.Match(ifc.Name) {
			continue
		}
		d := c.devs[ifc.Name]
		if d == nil || d.iface != ifc {
			// New, re-created or re-bound: forget what the old one said.
			d = &device{iface: ifc}
			c.devs[ifc.Name] = d
			c.unsupported.Forget(ifc.Name)
		}
		r, gone := c.read(d)
		if gone {
			c.log.Debug("interface vanished during the poll", zap.String("device", ifc.Name))
			delete(c.devs, ifc.Name)
			c.unsupported.Forget(ifc.Name)
			continue
		}
		seen[ifc.Name] = true
		devices++
		for _, e := range r.errs {
			if e.logged {
				p.CountSourceError(e.err)
				continue
			}
			p.SourceError("phy "+ifc.Name+" "+e.op, e.err)
		}
		c.emit(p, d, r)
	}
	for name := range c.devs {
		if !seen[name] {
			delete(c.devs, name)
		}
	}
	c.unsupported.Retain(seen)
	p.SetDevices(devices)
	return nil
}

// supported reports whether op may be asked of d: it was never answered
// EOPNOTSUPP, EPERM or EACCES, or that was UnsupportedRetry ago or longer.
func (c *Collector) supported(d *device, op string) bool {
	return !c.unsupported.Has(d.iface.Name, op)
}

// check classifies the error of one read: nil and EOPNOTSUPP (remembered)
// are no error; EPERM and EACCES are remembered like EOPNOTSUPP and
// reported once (denied); gone says the interface went away; anything
// else is a source error for r.
func (c *Collector) check(d *device, op string, err error, r *reading) (ok, gone bool) {
	switch {
	case err == nil:
		return true, false
	case errclass.IsUnsupported(err):
		c.unsupported.Add(d.iface.Name, op)
		c.log.Debug("driver does not support the operation; not asked again for a while",
			zap.String("device", d.iface.Name), zap.String("driver", d.iface.Driver), zap.String("operation", op), zap.Duration("retry", c.cfg.UnsupportedRetry))
		return false, false
	case errclass.IsPermission(err):
		c.denied(d, op, err, r)
		return false, false
	case errclass.IsNotExist(err):
		return false, true
	default:
		r.errs = append(r.errs, opError{op: op, err: fmt.Errorf("%s of %s: %w", op, d.iface.Name, err)})
		return false, false
	}
}

// read reads one interface. gone says it went away during the poll.
func (c *Collector) read(d *device) (r reading, gone bool) {
	now := c.cfg.Now()
	name := d.iface.Name
	if c.supported(d, opLinkState) {
		ls, err := c.cfg.Source.LinkState(name)
		ok, g := c.check(d, opLinkState, err, &r)
		if g {
			return r, true
		}
		if ok {
			r.link = &ls
		}
	}
	if c.supported(d, opFEC) {
		f, err := c.cfg.Source.FEC(name)
		ok, g := c.check(d, opFEC, err, &r)
		if g {
			return r, true
		}
		if ok {
			r.fec = &f
		}
	}
	if c.stats != nil && c.supported(d, opStats) {
		s, err := c.stats.Stats(name)
		ok, g := c.check(d, opStats, err, &r)
		if g {
			return r, true
		}
		if ok {
			r.stats = &s
		}
	}
	if c.modules != nil && c.supported(d, opModule) &&
		(d.moduleTried.IsZero() || now.Sub(d.moduleTried) >= c.cfg.ModuleInterval) {
		d.moduleTried = now
		mem, err := c.modules.Module(name)
		if errors.Is(err, sff.ErrNoModule) {
			mem, err = nil, nil // an empty cage: no series, no error
		}
		ok, g := c.check(d, opModule, err, &r)
		if g {
			return r, true
		}
		d.module = nil
		if ok {
			c.decode(d, mem, now, &r)
		}
	}
	return r, false
}

// decode decodes module memory into d. An empty cage (identifier 0) is
// not an error: the module series are simply absent.
func (c *Collector) decode(d *device, mem *sff.Memory, now time.Time, r *reading) {
	if mem == nil {
		return
	}
	mod, err := sff.Decode(mem)
	switch {
	case errors.Is(err, sff.ErrNoModule):
		c.log.Debug("no module in the cage, or not fully inserted", zap.String("device", d.iface.Name))
		return
	case err != nil:
		r.errs = append(r.errs, opError{op: opModule, err: fmt.Errorf("decoding the module memory of %s: %w: %w", d.iface.Name, errclass.ErrParse, err)})
		return
	}
	if w := strings.Join(mod.Warnings, "; "); w != d.warnings {
		d.warnings = w
		if w != "" {
			c.log.Info("module memory has values that are not exported", zap.String("device", d.iface.Name), zap.Strings("warnings", mod.Warnings))
		}
	}
	d.module, d.moduleRead = mod, now
}

// emit adds the series of one interface.
func (c *Collector) emit(p *collector.Poll, d *device, r reading) {
	name := d.iface.Name
	if ls := r.link; ls != nil {
		if ls.DownEvents != nil {
			p.Add(phyDownEvents, float64(*ls.DownEvents), name)
		}
		if ls.DownReason != "" && (ls.Up == nil || !*ls.Up) {
			p.Add(phyDownReason, 1, name, ls.DownReason, ls.DownSubstate)
		}
	}
	if f := r.fec; f != nil {
		if f.Mode != "" {
			p.Add(phyFECMode, 1, name, f.Mode)
		}
		fecCounter(p, name, f.CorrectedBlocks, phyFECCorrected, phyFECLaneCorrected)
		fecCounter(p, name, f.UncorrectableBlocks, phyFECUncorrectable, phyFECLaneUncorrectable)
		fecCounter(p, name, f.CorrectedBits, phyFECBits, phyFECLaneBits)
		for _, b := range f.Hist {
			p.Add(phyFECHist, float64(b.Codewords), name, binLabel(b))
		}
	}
	if s := r.stats; s != nil {
		for _, sc := range s.Counters {
			if desc := defaultStats[[2]string{sc.Group, sc.Name}]; desc != nil {
				p.Add(desc, float64(sc.Value), name)
			}
			p.Add(phyStandard, float64(sc.Value), name, sc.Group, sc.Name)
		}
	}
	if d.module != nil {
		emitModule(p, name, d.module)
		p.Add(trLastRead, float64(d.moduleRead.UnixNano())/1e9, name)
	}
}

// binLabel names a FEC histogram bin: "3" for a bin of one value, "4-7"
// for a range.
func binLabel(b FECHistBin) string {
	if b.Low == b.High {
		return strconv.FormatUint(uint64(b.Low), 10)
	}
	return strconv.FormatUint(uint64(b.Low), 10) + "-" + strconv.FormatUint(uint64(b.High), 10)
}

// fecCounter adds one FEC counter: the total, and each lane as a detail
// series.
func fecCounter(p *collector.Poll, name string, fc *FECCounter, total, lane *exposition.Desc) {
	if fc == nil {
		return
	}
	p.Add(total, float64(fc.Total), name)
	for i, v := range fc.Lanes {
		p.Add(lane, float64(v), name, strconv.Itoa(i))
	}
}

// emitModule adds the series of a decoded module. The decoder has already
// dropped non-finite values and thresholds in an impossible order; the
// check here keeps any other non-finite value out of the scrape as well.
func emitModule(p *collector.Poll, name string, m *sff.Module) {
	id := m.Identity
	p.Add(trInfo, 1, name, id.IdentifierName, string(m.Standard), id.ConnectorName, id.Media, id.VendorName, id.PartNumber, id.Revision, id.SerialNumber)
	gauge := func(d *exposition.Desc, v *float64, labels ...string) {
		if v != nil && !math.IsNaN(*v) && !math.IsInf(*v, 0) {
			p.Add(d, *v, labels...)
		}
	}
	gauge(trTemp, m.TemperatureCelsius, name)
	gauge(trVolt, m.SupplyVolts, name)
	for _, l := range m.Lanes {
		if unused(l) {
			continue
		}
		lane := strconv.Itoa(l.Index - 1)
		gauge(trBias, l.BiasAmperes, name, lane)
		gauge(trTx, l.TxPowerWatts, name, lane)
		gauge(trRx, l.RxPowerWatts, name, lane)
	}
	thresholds := func(d *exposition.Desc, t *sff.Thresholds) {
		if t == nil {
			return
		}
		for i, v := range [4]*float64{&t.HighAlarm, t.HighWarning, t.LowWarning, &t.LowAlarm} {
			gauge(d, v, name, levels[i]) // an absent warning is left out
		}
	}
	thresholds(trTempThr, m.TemperatureThresholds)
	thresholds(trVoltThr, m.VoltageThresholds)
	thresholds(trBiasThr, m.BiasThresholds)
	thresholds(trTxThr, m.TxPowerThresholds)
	thresholds(trRxThr, m.RxPowerThresholds)
	flags := func(quantity, lane string, f *sff.Flags) {
		if f == nil {
			return
		}
		for i, set := range [4]bool{f.HighAlarm, f.HighWarning, f.LowWarning, f.LowAlarm} {
			p.Add(trFlag, collector.Bool(set), name, quantity, levels[i], lane)
		}
	}
	flags("temperature", "", m.TemperatureFlags)
	flags("supply_voltage", "", m.VoltageFlags)
	for _, l := range m.Lanes {
		if unused(l) {
			continue
		}
		lane := strconv.Itoa(l.Index - 1)
		flags("laser_bias_current", lane, l.BiasFlags)
		flags("tx_power", lane, l.TxPowerFlags)
		flags("rx_power", lane, l.RxPowerFlags)
	}
}

// unused reports whether a lane reads zero on every monitor it has: the
// upper four lanes of a 4-lane module (400G-DR4/LR4) in the 8-lane CMIS
// memory map, or the lanes of a breakout the host does not use. They are
// not exported, so a lane that was never lit does not look like a dark
// receiver. A lit lane whose receiver went dark still has laser bias and
// transmit power and stays.
func unused(l sff.Lane) bool {
	for _, v := range []*float64{l.BiasAmperes, l.TxPowerWatts, l.RxPowerWatts} {
		if v != nil && *v != 0 {
			return false
		}
	}
	return true
}

// LaneUnused reports whether the collector leaves a lane out as unused
// (see unused), for diagnose, which judges module dumps the same way.
func LaneUnused(l sff.Lane) bool { return unused(l) }
