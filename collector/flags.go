package collector

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
)

// Command-line flags come in two parts. The flags every collector has
// (--collector.<name>, .interval, .timeout, .device-include and
// .device-exclude) are declared here by RegisterCommonFlags, from the
// Spec the collector's package gives (its Spec function). The flags
// particular to one collector are declared by its own package, in the
// same shape everywhere: RegisterFlags(app) returns a *Flags whose fields
// kingpin fills in when app parses; where they apply, Flags.Check
// refuses values that parse but cannot work, Flags.CheckPaths refuses
// paths given on the command line that cannot be what their flag says,
// and Flags.Config returns the package's Config with the settings the
// flags own filled in. Nothing is registered globally: whoever builds the
// kingpin application (the daemon) calls them in the order the flags are
// listed.

// MinInterval is the shortest poll interval a collector accepts. Every
// poll reads all of a collector's sources and renders a new snapshot:
// below this a typo (1ns, 1ms) would burn a core, and no NIC counter is
// worth reading more often.
const MinInterval = 100 * time.Millisecond

// MinTimeout is the shortest poll timeout a collector accepts. No poll
// of a real host's sources finishes reliably in less, so a shorter one
// (a typo: 1ns, 1ms) would only keep the collector down.
const MinTimeout = 100 * time.Millisecond

// Spec names a collector and sets the defaults of its common flags.
type Spec struct {
	// Name is the collector's name, as in --collector.<name>.
	Name string
	// Help ends the help of --collector.<name>: what the collector
	// reads, as a sentence without its subject.
	Help string
	// DefaultInterval and DefaultTimeout are the defaults of
	// --collector.<name>.interval and .timeout, as kingpin parses them.
	DefaultInterval string
	DefaultTimeout  string
	// Off makes the collector opt-in: disabled unless --collector.<name>
	// is given.
	Off bool
}

// CommonFlags are the parsed flags every collector has.
type CommonFlags struct {
	Spec     Spec
	Enabled  bool
	Interval time.Duration
	Timeout  time.Duration
	Include  string
	Exclude  string
}

// RegisterCommonFlags declares the flags every collector has for the
// collector s names on app, and returns the CommonFlags they fill in when
// app parses.
func RegisterCommonFlags(app *kingpin.Application, s Spec) *CommonFlags {
	cf := &CommonFlags{Spec: s}
	p := "collector." + s.Name
	if s.Off {
		app.Flag(p, "Enable the "+s.Name+" collector (off by default): "+s.Help).Default("false").BoolVar(&cf.Enabled)
	} else {
		app.Flag(p, "Enable the "+s.Name+" collector: "+s.Help+" Disable with --no-"+p+".").Default("true").BoolVar(&cf.Enabled)
	}
	app.Flag(p+".interval", "How often the "+s.Name+" collector polls its sources.").Default(s.DefaultInterval).DurationVar(&cf.Interval)
	app.Flag(p+".timeout", "How long one poll of the "+s.Name+" collector may take before it counts as failed.").Default(s.DefaultTimeout).DurationVar(&cf.Timeout)
	app.Flag(p+".device-include", "Regular expression (anchored) of the devices the "+s.Name+" collector reads; empty means all.").StringVar(&cf.Include)
	app.Flag(p+".device-exclude", "Regular expression (anchored) of the devices the "+s.Name+" collector never reads.").StringVar(&cf.Exclude)
	return cf
}

// Check refuses an interval or timeout that parses but cannot work.
func (cf *CommonFlags) Check() error {
	p := "--collector." + cf.Spec.Name
	// A zero or negative interval would panic in time.NewTicker.
	if cf.Interval <= 0 {
		return fmt.Errorf("%s.interval must be positive, got %s", p, cf.Interval)
	}
	if cf.Interval < MinInterval {
		return fmt.Errorf("%s.interval must be at least %s, got %s", p, MinInterval, cf.Interval)
	}
	// A zero timeout would fail every poll, and one of a few nanoseconds
	// (a typo: 1ns, 1ms) too: the collector would stay down.
	if cf.Timeout <= 0 {
		return fmt.Errorf("%s.timeout must be positive, got %s", p, cf.Timeout)
	}
	if cf.Timeout < MinTimeout {
		return fmt.Errorf("%s.timeout must be at least %s, got %s", p, MinTimeout, cf.Timeout)
	}
	return nil
}

// Filter compiles the collector's device filter.
func (cf *CommonFlags) Filter() (NameFilter, error) {
	return NewNameFilter("collector."+cf.Spec.Name+".device", cf.Include, cf.Exclude)
}

// CheckDir checks that dir names a directory. It opens nothing: a FIFO
// given as a path must not block the startup.
func CheckDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	return nil
}

// CheckGlobDir checks that the directory part of a glob names at least
// one directory; files that appear later in it are followed.
func CheckGlobDir(glob string) error {
	dir := filepath.Dir(glob)
	if !strings.ContainsAny(dir, `*?[\`) {
		return CheckDir(dir)
	}
	matches, err := filepath.Glob(dir)
	if err != nil {
		return err
	}
	for _, m := range matches {
		if CheckDir(m) == nil {
			return nil
		}
	}
	return fmt.Errorf("no directory matches %s", dir)
}
