package fabric

import (
	"fmt"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/internal/mad"
)

// Spec names the fabric collector and sets the defaults of its common
// flags (collector.RegisterCommonFlags).
func Spec() collector.Spec {
	return collector.Spec{
		Name:            "fabric",
		Help:            "the InfiniBand switch port (or HCA) at the far end of each local HCA port, read over management datagrams: its identity, state, and error, congestion and traffic counters, labelled with both ends of the cable. Needs read-write access to /dev/infiniband/umad*.",
		DefaultInterval: "30s",
		DefaultTimeout:  "10s",
		Off:             true,
	}
}

// Flags are the parsed command-line flags particular to the fabric
// collector (see collector.RegisterCommonFlags for the shape).
type Flags struct {
	// Transport is umad or ibsim (Opener).
	Transport string
	// The rest are the Config fields of the same names.
	MADTimeout       time.Duration
	Concurrency      int
	Scope            string
	SweepConcurrency int
	Rediscover       time.Duration
	ResetSaturated   bool
	ResetInterval    time.Duration
}

// RegisterFlags declares the fabric collector's own flags on app and
// returns the Flags they fill in when app parses.
func RegisterFlags(app *kingpin.Application) *Flags {
	f := &Flags{}
	const p = "collector.fabric"
	app.Flag(p+".transport", "How the fabric collector sends management datagrams: umad (the kernel's /dev/infiniband/umadN, one per local port) or ibsim (a simulated fabric: ibsim's socket named by IBSIM_SOCKNAME, attached at the node SIM_HOST names, as ibsim's own client library reads them).").Default("umad").EnumVar(&f.Transport, "umad", "ibsim")
	app.Flag(p+".mad-timeout", "How long the fabric collector waits for each management datagram's answer; with umad the kernel resends it once halfway. A query that times out is a counted source error and the poll goes on.").Default("500ms").DurationVar(&f.MADTimeout)
	app.Flag(p+".concurrency", "How many local ports the fabric collector queries at once.").Default("4").IntVar(&f.Concurrency)
	app.Flag(p+".scope", "What the fabric collector reads: far-end (the port at the other end of each local port's cable; every node can run it) or switches (every port of every switch reachable from the first selected local port, by directed-route discovery: for one or a few designated hosts; raise --"+p+".timeout for large fabrics).").Default("far-end").EnumVar(&f.Scope, "far-end", "switches")
	app.Flag(p+".sweep-concurrency", "With --"+p+".scope=switches, how many management datagrams are in flight at once.").Default("16").IntVar(&f.SweepConcurrency)
	app.Flag(p+".rediscover-interval", "With --"+p+".scope=switches, how long a discovery of the fabric's switches is used before the fabric is walked again; each poll reads the ports found up at the last discovery.").Default("10m").DurationVar(&f.Rediscover)
	app.Flag(p+".reset-saturated", "Reset (a PortCounters Set, as perfquery -R sends) the fixed-width counters of a far-end or swept switch port that the fabric collector reads stuck at their maximum, so that they count again. Off by default: every other reader of that port (the subnet manager's PerfMgr, UFM, other exporters) sees the reset too.").Default("false").BoolVar(&f.ResetSaturated)
	app.Flag(p+".reset-interval", "With --"+p+".reset-saturated, the least time between two resets of one port.").Default("1h").DurationVar(&f.ResetInterval)
	return f
}

// Check refuses values that parse but cannot work.
func (f *Flags) Check() error {
	if d := f.MADTimeout; d <= 0 {
		return fmt.Errorf("--collector.fabric.mad-timeout must be positive, got %s", d)
	}
	if n := f.Concurrency; n <= 0 {
		return fmt.Errorf("--collector.fabric.concurrency must be positive, got %d", n)
	}
	if n := f.SweepConcurrency; n <= 0 {
		return fmt.Errorf("--collector.fabric.sweep-concurrency must be positive, got %d", n)
	}
	if d := f.Rediscover; d <= 0 {
		return fmt.Errorf("--collector.fabric.rediscover-interval must be positive, got %s", d)
	}
	// A reset interval of zero or below would reset a saturated port at
	// every poll.
	if d := f.ResetInterval; d < time.Minute {
		return fmt.Errorf("--collector.fabric.reset-interval must be at least 1m, got %s", d)
	}
	return nil
}

// Config returns c with the settings of the flags. The endpoints
// (Config.Open) are left to the caller: Opener on a host, the demo
// host's far end on --demo.
func (f *Flags) Config(c Config) (Config, error) {
	c.MADTimeout, c.Concurrency = f.MADTimeout, f.Concurrency
	c.Scope, c.SweepConcurrency, c.Rediscover = f.Scope, f.SweepConcurrency, f.Rediscover
	c.ResetSaturated, c.ResetInterval = f.ResetSaturated, f.ResetInterval
	return c, nil
}

// Opener returns this host's endpoints over the transport the flags
// name: the umad devices of the local ports sysfs lists, or ibsim's
// socket as its environment names it.
func (f *Flags) Opener(sysfs string) Opener {
	if f.Transport == "ibsim" {
		return SimOpener(mad.SimConfigFromEnv(), f.MADTimeout)
	}
	return UmadOpener(sysfs, UmadDir, f.MADTimeout)
}
