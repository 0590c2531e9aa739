package vma

import (
	"fmt"

	"github.com/alecthomas/kingpin/v2"

	"github.com/nic-exporter/nic_exporter/collector"
)

// Spec names the vma collector and sets the defaults of its common
// flags (collector.RegisterCommonFlags).
func Spec() collector.Spec {
	return collector.Spec{
		Name: "vma",
		Help: "per-process NVIDIA VMA (libvma) statistics from vmastat.<pid> files; device filters match the process name (comm).",
		// libvma copies counters into the file for about 10 s after a
		// reader's handshake, so polls must come more often than that.
		DefaultInterval: "5s",
		DefaultTimeout:  "4s",
	}
}

// Flags are the parsed command-line flags particular to the vma
// collector (see collector.RegisterCommonFlags for the shape).
type Flags struct {
	// Dirs are the directories of libvma's vmastat.<pid> files.
	Dirs    []string
	dirsSet bool
	// PerSocket serves the per-socket series in /metrics too
	// (Config.PerSocket).
	PerSocket bool
}

// RegisterFlags declares the vma collector's own flags on app and returns
// the Flags they fill in when app parses.
func RegisterFlags(app *kingpin.Application) *Flags {
	f := &Flags{}
	app.Flag("collector.vma.stats-dir", "Directory holding libvma's vmastat.<pid> files (VMA_STATS_SHMEM_DIR); repeat for several.").Default("/tmp").IsSetByUser(&f.dirsSet).StringsVar(&f.Dirs)
	app.Flag("collector.vma.per-socket", "Also serve the per-socket VMA series (nic_vma_fd_*, labels fd, protocol, local, remote) in /metrics; they are always at /metrics/detail. Sockets churn, so this is off by default.").BoolVar(&f.PerSocket)
	return f
}

// CheckPaths refuses a --collector.vma.stats-dir given on the command line
// that is no directory; the default is not checked, since where it is
// absent there is nothing to collect.
func (f *Flags) CheckPaths() error {
	return checkDirs(f.dirsSet, f.Dirs, "--collector.vma.stats-dir")
}

// Config returns c with the settings of the flags. The directories are
// left to the caller, which reads the demo host's instead on --demo.
func (f *Flags) Config(c Config) (Config, error) {
	c.PerSocket = f.PerSocket
	return c, nil
}

// XLIOSpec names the xlio collector and sets the defaults of its common
// flags (collector.RegisterCommonFlags).
func XLIOSpec() collector.Spec {
	return collector.Spec{
		Name: "xlio",
		Help: "per-process NVIDIA XLIO (libxlio, VMA's successor) statistics from xliostat.<pid> files; device filters match the process name (comm).",
		// Like libvma, libxlio copies counters for 10 s after a reader's
		// handshake.
		DefaultInterval: "5s",
		DefaultTimeout:  "4s",
	}
}

// XLIOFlags are the parsed command-line flags particular to the xlio
// collector (see collector.RegisterCommonFlags for the shape).
type XLIOFlags struct {
	// Dirs are the directories of libxlio's xliostat.<pid> files.
	Dirs    []string
	dirsSet bool
	// PerSocket serves the per-socket series in /metrics too
	// (XLIOConfig.PerSocket).
	PerSocket bool
	// Handshake bumps reader_counter in each file
	// (XLIOConfig.NoHandshake is its negation).
	Handshake bool
}

// RegisterXLIOFlags declares the xlio collector's own flags on app and
// returns the XLIOFlags they fill in when app parses.
func RegisterXLIOFlags(app *kingpin.Application) *XLIOFlags {
	f := &XLIOFlags{}
	app.Flag("collector.xlio.stats-dir", "Directory holding libxlio's xliostat.<pid> files (XLIO_STATS_SHMEM_DIR); repeat for several.").Default("/tmp/xlio").IsSetByUser(&f.dirsSet).StringsVar(&f.Dirs)
	app.Flag("collector.xlio.per-socket", "Also serve the per-socket XLIO series (nic_xlio_fd_*, labels fd, protocol, local, remote) in /metrics; they are always at /metrics/detail. Sockets churn, so this is off by default.").BoolVar(&f.PerSocket)
	app.Flag("collector.xlio.handshake", "Increment reader_counter in each application's xliostat.<pid> file (4 bytes, the one write xlio_stats also makes) so libxlio copies fresh counters into it; without it the counters stay as the last reader left them. It needs write access to the file (its owner or root). Disable with --no-collector.xlio.handshake.").Default("true").BoolVar(&f.Handshake)
	return f
}

// CheckPaths refuses a --collector.xlio.stats-dir given on the command
// line that is no directory; the default is not checked.
func (f *XLIOFlags) CheckPaths() error {
	return checkDirs(f.dirsSet, f.Dirs, "--collector.xlio.stats-dir")
}

// Config returns c with the settings of the flags. The directories are
// left to the caller, which reads the demo host's instead on --demo.
func (f *XLIOFlags) Config(c XLIOConfig) (XLIOConfig, error) {
	c.PerSocket = f.PerSocket
	c.NoHandshake = !f.Handshake
	return c, nil
}

// checkDirs checks the directories of a stats-dir flag if they were given
// on the command line.
func checkDirs(set bool, dirs []string, flag string) error {
	if !set {
		return nil
	}
	for _, d := range dirs {
		if err := collector.CheckDir(d); err != nil {
			return fmt.Errorf("%s: %w", flag, err)
		}
	}
	return nil
}
