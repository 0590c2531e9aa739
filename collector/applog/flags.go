package applog

import (
	"fmt"

	"github.com/alecthomas/kingpin/v2"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/internal/logrules"
)

// Spec names the applog collector and sets the defaults of its common
// flags (collector.RegisterCommonFlags).
func Spec() collector.Spec {
	return collector.Spec{
		Name:            "applog",
		Help:            "error messages in application log files such as VMA_LOG_FILE, followed through rotation.",
		DefaultInterval: "5s",
		DefaultTimeout:  "4s",
	}
}

// Flags are the parsed command-line flags particular to the applog
// collector (see collector.RegisterCommonFlags for the shape).
type Flags struct {
	// Files are the globs of the log files to follow (Config.Globs).
	Files []string
	// RulesFile holds extra rules, tried before the built-in VMA ones
	// (Config.Rules).
	RulesFile string
	// FromStart counts the lines already in the files at start
	// (Config.FromStart).
	FromStart bool
}

// RegisterFlags declares the applog collector's own flags on app and
// returns the Flags they fill in when app parses.
func RegisterFlags(app *kingpin.Application) *Flags {
	f := &Flags{}
	app.Flag("collector.applog.files", "Glob of application log files to follow, e.g. /var/log/vma/*.log; repeatable. The device filters apply to the file paths.").StringsVar(&f.Files)
	app.Flag("collector.applog.rules-file", "YAML file of extra application log rules, tried before the built-in VMA ones.").StringVar(&f.RulesFile)
	app.Flag("collector.applog.from-start", "Also count the lines already in the files at start; by default only lines written after the start (and whole files that appear later) are counted.").BoolVar(&f.FromStart)
	return f
}

// CheckPaths refuses a --collector.applog.files glob whose directory part
// names no directory: a typo would otherwise read as "nothing to
// collect".
func (f *Flags) CheckPaths() error {
	for _, g := range f.Files {
		if err := collector.CheckGlobDir(g); err != nil {
			return fmt.Errorf("--collector.applog.files %q: %w", g, err)
		}
	}
	return nil
}

// Config returns c with the rules of the flags. The files and whether
// they are read from the start are left to the caller, which follows the
// demo host's log instead on --demo.
func (f *Flags) Config(c Config) (Config, error) {
	rules, err := logrules.Load(f.RulesFile, logrules.VMARules())
	if err != nil {
		return c, fmt.Errorf("--collector.applog.rules-file: %w", err)
	}
	c.Rules = rules
	return c, nil
}
