package devlinkhealth

import (
	"fmt"
	"os"

	"github.com/alecthomas/kingpin/v2"

	"github.com/nic-exporter/nic_exporter/collector"
)

// Spec names the devlink collector and sets the defaults of its common
// flags (collector.RegisterCommonFlags).
func Spec() collector.Spec {
	return collector.Spec{
		Name:            "devlink",
		Help:            "devlink health reporters (mlx5 fw, fw_fatal, vnic, tx, rx), device info and health events, with evidence capture.",
		DefaultInterval: "10s",
		DefaultTimeout:  "8s",
	}
}

// Flags are the parsed command-line flags particular to the devlink
// collector (see collector.RegisterCommonFlags for the shape).
type Flags struct {
	// Capture configures the evidence files (Config.Capture).
	Capture CaptureConfig
}

// RegisterFlags declares the devlink collector's own flags on app and
// returns the Flags they fill in when app parses.
func RegisterFlags(app *kingpin.Application) *Flags {
	f := &Flags{}
	const p = "collector.devlink"
	app.Flag(p+".capture-dir", "Directory to write evidence to when a devlink health reporter goes to error: reporter attributes, diagnose and dump as one JSON file. Off when empty.").StringVar(&f.Capture.Dir)
	app.Flag(p+".capture-max-files", "Most evidence files kept in --"+p+".capture-dir; the oldest are removed first.").Default("100").IntVar(&f.Capture.MaxFiles)
	app.Flag(p+".capture-max-bytes", "Most bytes of evidence kept in --"+p+".capture-dir; the oldest files are removed first, the newest is always kept.").Default("67108864").Int64Var(&f.Capture.MaxBytes)
	return f
}

// Check refuses bounds of the capture store that parse but cannot work:
// the store would take 0 or below for its defaults.
func (f *Flags) Check() error {
	if n := f.Capture.MaxFiles; n <= 0 {
		return fmt.Errorf("--collector.devlink.capture-max-files must be positive, got %d", n)
	}
	if n := f.Capture.MaxBytes; n <= 0 {
		return fmt.Errorf("--collector.devlink.capture-max-bytes must be positive, got %d", n)
	}
	return nil
}

// Config returns c with the evidence capture of the flags. It creates the
// capture directory, so that a directory that cannot be made fails at
// start, not at the first error worth capturing.
func (f *Flags) Config(c Config) (Config, error) {
	if f.Capture.Dir != "" {
		if err := os.MkdirAll(f.Capture.Dir, 0o750); err != nil {
			return c, fmt.Errorf("--collector.devlink.capture-dir: %w", err)
		}
	}
	c.Capture = f.Capture
	return c, nil
}
