package phy

import (
	"fmt"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/nic-exporter/nic_exporter/collector"
)

// Spec names the phy collector and sets the defaults of its common
// flags (collector.RegisterCommonFlags).
func Spec() collector.Spec {
	return collector.Spec{
		Name:            "phy",
		Help:            "physical layer over ethtool netlink: pluggable module (optic) diagnostics and thresholds, link down reason and count, FEC mode and counters, IEEE 802.3 standard counters.",
		DefaultInterval: "5s",
		DefaultTimeout:  "4s",
	}
}

// Flags are the parsed command-line flags particular to the phy
// collector (see collector.RegisterCommonFlags for the shape).
type Flags struct {
	// ModuleInterval is how often module memory is read
	// (Config.ModuleInterval).
	ModuleInterval time.Duration
}

// RegisterFlags declares the phy collector's own flags on app and returns
// the Flags they fill in when app parses.
func RegisterFlags(app *kingpin.Application) *Flags {
	f := &Flags{}
	app.Flag("collector.phy.module-interval", "How often the phy collector reads pluggable module memory (an I2C transaction, ~0.1 s on some NICs); the last values are exported in between.").Default("60s").DurationVar(&f.ModuleInterval)
	return f
}

// Check refuses a module interval that parses but cannot work: the
// collector would take a value of 0 or below for its default of 60 s, and
// one of a few nanoseconds for a read of every module's memory (an I2C
// transaction) at every poll.
func (f *Flags) Check() error {
	if d := f.ModuleInterval; d <= 0 {
		return fmt.Errorf("--collector.phy.module-interval must be positive, got %s", d)
	} else if d < collector.MinInterval {
		return fmt.Errorf("--collector.phy.module-interval must be at least %s, got %s", collector.MinInterval, d)
	}
	return nil
}

// Config returns c with the module interval of the flags.
func (f *Flags) Config(c Config) (Config, error) {
	c.ModuleInterval = f.ModuleInterval
	return c, nil
}
