package collect

import (
	"context"
	"fmt"
	"io"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/demo"
	"github.com/nic-exporter/nic_exporter/xliostats"
)

// help is the man-style description of `nic_exporter collect`.
const help = `Write a support bundle of this host's NICs for nic_exporter diagnose.

SYNOPSIS
  nic_exporter collect [--out=DIR|FILE.tar.gz] [--interval=10s] [--timeout=60s] [--url=URL]
  nic_exporter collect --demo [--demo.faults=SCHEDULE] [--out=...]

DESCRIPTION
  Gathers the files of the ConnectX troubleshooting guide's collect_debug.sh
  natively, from sysfs, the ethtool ioctls, devlink and /dev/kmsg:
  uname.txt, os-release.txt, ethtool_-i_IF.txt, ethtool_IF.txt,
  ethtool_-S_IF.txt, ethtool_--show-fec_IF.txt (FEC mode and counters) and
  ethtool_-m_IF.txt (module memory) per NIC interface,
  netdev_sysfs.txt, devlink_health.txt,
  devlink_dev_info.txt and, per reporter in error,
  devlink_health_diagnose_DEV_REPORTER.json, ibstat.txt,
  ib_counters_DEV_PORT.txt and hw_counters_DEV_PORT.txt, pci_sysfs.txt (PCIe
  link speed and width, AER counters), dmesg_nic.txt, and with external
  commands, where the tool is the only reader, lspci.txt (lspci -vvv) and
  journal_nic.txt (journalctl -k), each with --command-timeout. The
  shared-memory statistics of VMA and XLIO applications are copied under
  their own names into vma/ and xlio/ (vma_stats and xlio_stats read them
  there), found and verified as the daemon's vma and xlio collectors do
  (--collector.vma.stats-dir, --collector.xlio.stats-dir), at most 1 MiB
  each and 32 processes per library.

  The counters (ethtool -S, FEC, devlink health, pci_sysfs, InfiniBand counters,
  VMA/XLIO statistics, the exporter's /metrics) are sampled twice, --interval apart: the first
  sample in earlier_sample/, the second at the top level, so rates are real.
  manifest.json lists every file with its source, both samples' times and
  the host's uptime, and each source that could not be read, with the
  reason: run as any user, collect gathers what that user can read.

  The whole collection stops at --timeout; a bundle holds at most 16 MiB per
  file and 64 MiB in all. --out ending in .tar.gz or .tgz writes an archive
  (members in name order, fixed modes, one top-level directory named after
  it); otherwise a directory, which must not exist or be empty. Nothing is
  overwritten and no symbolic link is followed when writing.

EXIT STATUS
  0  the bundle was written (sources that could not be read are in its manifest)
  2  bad flags, or the bundle could not be written`

// Main is the `nic_exporter collect` subcommand; it returns the exit
// status.
func Main(args []string, stdout, stderr io.Writer) int {
	app := kingpin.New("nic_exporter collect", help)
	app.UsageWriter(stdout)
	app.ErrorWriter(stderr)
	app.HelpFlag.Short('h')
	app.Terminate(nil)
	var (
		out, url, faults, sysfs, procfs string
		interval, timeout, cmdTimeout   time.Duration
		useDemo                         bool
		vmaDirs, xlioDirs               []string
	)
	app.Flag("out", "Bundle to write: DIR, or FILE.tar.gz (default nic_exporter-bundle-HOST-TIME.tar.gz).").StringVar(&out)
	app.Flag("interval", "Time between the two samples of the counters; 0 takes one.").Default("10s").DurationVar(&interval)
	app.Flag("timeout", "Time the whole collection may take.").Default("60s").DurationVar(&timeout)
	app.Flag("command-timeout", "Time each external command (lspci, journalctl) may take.").Default("10s").DurationVar(&cmdTimeout)
	app.Flag("url", "The exporter's metrics URL, read with each sample; empty reads none (default http://127.0.0.1:21180/metrics, none with --demo).").StringVar(&url)
	app.Flag("path.sysfs", "sysfs mount point.").Default("/sys").StringVar(&sysfs)
	app.Flag("path.procfs", "procfs mount point.").Default("/proc").StringVar(&procfs)
	app.Flag("collector.vma.stats-dir", "Directory holding libvma's vmastat.<pid> files, as the daemon's flag; repeat for several.").Default(DefaultVMADir).StringsVar(&vmaDirs)
	app.Flag("collector.xlio.stats-dir", "Directory holding libxlio's xliostat.<pid> files, as the daemon's flag; repeat for several.").Default(xliostats.DefaultDir).StringsVar(&xlioDirs)
	app.Flag("demo", "Collect the embedded demo host instead of this one.").BoolVar(&useDemo)
	app.Flag("demo.faults", "Faults of the demo host, as the daemon's --demo.faults (docs/faults.md).").StringVar(&faults)
	helped := false
	app.HelpFlag.Action(func(*kingpin.ParseContext) error { helped = true; return nil })
	if _, err := app.Parse(args); err != nil {
		fmt.Fprintf(stderr, "nic_exporter collect: %v\n", err)
		return 2
	}
	if helped {
		return 0
	}
	if interval < 0 || timeout <= 0 || cmdTimeout <= 0 {
		fmt.Fprintln(stderr, "nic_exporter collect: --interval must not be negative, --timeout and --command-timeout must be positive")
		return 2
	}
	if interval >= timeout {
		fmt.Fprintf(stderr, "nic_exporter collect: --interval %s leaves no time for the samples within --timeout %s\n", interval, timeout)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	log := zap.NewNop()
	var src Sources
	if useDemo {
		h, err := demo.New(demo.Config{Faults: faults}, log)
		if err != nil {
			fmt.Fprintf(stderr, "nic_exporter collect: %v\n", err)
			return 2
		}
		defer h.Close()
		src = DemoSources(h)
	} else {
		if faults != "" {
			fmt.Fprintln(stderr, "nic_exporter collect: --demo.faults needs --demo")
			return 2
		}
		src = HostSources(sysfs, procfs)
		src.VMADirs, src.XLIODirs = vmaDirs, xlioDirs
		if !flagGiven(args, "url") {
			url = "http://127.0.0.1:21180/metrics"
		}
	}
	start := time.Now()
	if out == "" {
		out = fmt.Sprintf("nic_exporter-bundle-%s-%s.tar.gz", fileSafe(src.Host), start.UTC().Format("20060102T150405Z"))
	}
	b, err := Run(ctx, Config{Sources: src, Interval: interval, Timeout: timeout, CommandTimeout: cmdTimeout, URL: url}, log)
	if err != nil {
		fmt.Fprintf(stderr, "nic_exporter collect: %v\n", err)
	}
	if b == nil || len(b.Files) == 0 {
		return 2
	}
	if err := b.Write(out, start); err != nil {
		fmt.Fprintf(stderr, "nic_exporter collect: %v\n", err)
		return 2
	}
	fmt.Fprintf(stdout, "nic_exporter collect: wrote %s: %d files, %d samples, %d sources not read (see %s)\n",
		out, len(b.Files), len(b.Manifest.Samples), len(b.Manifest.Unreadable), ManifestFile)
	return 0
}

// flagGiven reports whether --name was on the command line.
func flagGiven(args []string, name string) bool {
	for _, a := range args {
		if a == "--"+name || strings.HasPrefix(a, "--"+name+"=") {
			return true
		}
	}
	return false
}
