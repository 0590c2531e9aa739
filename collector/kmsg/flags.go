package kmsg

import (
	"fmt"
	"os"

	"github.com/alecthomas/kingpin/v2"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/internal/logrules"
)

// Spec names the kmsg collector and sets the defaults of its common
// flags (collector.RegisterCommonFlags).
func Spec() collector.Spec {
	return collector.Spec{
		Name:            "kmsg",
		Help:            "driver error messages (mlx5_core, mlx5_ib, ena, PCIe) from the kernel log, /dev/kmsg; needs CAP_SYSLOG.",
		DefaultInterval: "5s",
		DefaultTimeout:  "4s",
	}
}

// Flags are the parsed command-line flags particular to the kmsg
// collector (see collector.RegisterCommonFlags for the shape).
type Flags struct {
	// Path is the kernel log device (OpenDevKmsg).
	Path    string
	pathSet bool
	// RulesFile holds extra rules, tried before the built-in ones
	// (Config.Rules).
	RulesFile string
	// Replay counts the records in the buffer at start (Config.Replay).
	Replay bool
	// StateFile saves and restores the counters (Config.StateFile).
	StateFile string
}

// RegisterFlags declares the kmsg collector's own flags on app and
// returns the Flags they fill in when app parses.
func RegisterFlags(app *kingpin.Application) *Flags {
	f := &Flags{}
	app.Flag("collector.kmsg.path", "The kernel log device; when given, it must be the kernel log device (character device 1:11), and the device opened is checked again.").Default("/dev/kmsg").IsSetByUser(&f.pathSet).StringVar(&f.Path)
	app.Flag("collector.kmsg.rules-file", "YAML file of extra kernel log rules, tried before the built-in ones (see docs/metrics.md).").StringVar(&f.RulesFile)
	app.Flag("collector.kmsg.replay", "Count the records still in the kernel log buffer at start (boot-time errors, errors before a restart); --no-collector.kmsg.replay counts only new records.").Default("true").BoolVar(&f.Replay)
	app.Flag("collector.kmsg.state-file", "File to save the kernel log counters to at each poll and restore them from at start on the same boot, so they continue even if the kernel buffer rotated in between; its directory must exist and be writable. Empty: off.").StringVar(&f.StateFile)
	return f
}

// CheckPaths refuses a --collector.kmsg.path given on the command line
// that is not the kernel log device. It opens nothing; the default is not
// checked, since where it is absent there is nothing to collect.
func (f *Flags) CheckPaths() error {
	if !f.pathSet {
		return nil
	}
	st, err := os.Stat(f.Path)
	if err == nil {
		err = CheckDevice(f.Path, st)
	}
	if err != nil {
		return fmt.Errorf("--collector.kmsg.path: %w", err)
	}
	return nil
}

// Config returns c with the rules, replay and state file of the flags.
// The device is left to the caller, which opens the demo host's instead
// on --demo.
func (f *Flags) Config(c Config) (Config, error) {
	rules, err := logrules.Load(f.RulesFile, logrules.KernelRules())
	if err != nil {
		return c, fmt.Errorf("--collector.kmsg.rules-file: %w", err)
	}
	c.Rules, c.Replay, c.StateFile = rules, f.Replay, f.StateFile
	return c, nil
}

// Opener opens the kernel log device the flags name (Config.Open).
func (f *Flags) Opener() Opener { return OpenDevKmsg(f.Path) }
