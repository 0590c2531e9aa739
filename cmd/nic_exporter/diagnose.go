package main

import (
	"fmt"
	"io"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/diagnose"
	"github.com/nic-exporter/nic_exporter/internal/logrules"
)

// diagnoseHelp is the man-style description of `nic_exporter diagnose`.
const diagnoseHelp = `Read support bundles and name the documented NIC conditions they show.

SYNOPSIS
  nic_exporter diagnose [--format=text|json|openmetrics] [--rules-file=FILE] PATH...

DESCRIPTION
  PATH is a bundle directory or a .tar.gz/.tgz archive of one with a single
  top-level directory, as collect_debug.sh, a sosreport or the exporter's
  evidence capture writes. Files are recognised by their content: ethtool -i,
  ethtool -S, ethtool DEV, devlink health show (text and -j), dmesg or
  journalctl -k text with or without timestamps and syslog prefixes, ibstat,
  lspci -vvv, mlxfwmanager --query, the *.devlink.json evidence files of
  --collector.devlink.capture-dir, and nic_exporter collect's pci_sysfs.txt,
  netdev_sysfs.txt, ethtool_-m_IF.txt, devlink dev info and manifest (its
  earlier_sample/ gives no findings of its own). Other files are listed as
  ignored.

  Each finding names the condition, the device, the severity and runbook of
  the alert in deploy/prometheus/alerts.yml that covers it, and the evidence
  (file:line). A bundle is one snapshot: cumulative counters are reported as
  "since boot", fault states (a devlink reporter in error, link down, a PCIe
  link below its capability, an InfiniBand port not LinkUp, wd_expired > 0)
  as findings.

  --format=openmetrics writes the series the daemon's ethtool and kmsg
  collectors export from the bundle, stamped with the current time and
  labelled instance=PATH, for promtool tsdb create-blocks-from openmetrics.

  The text output and the messages on stderr show the control characters,
  bidirectional formatting characters and non-UTF-8 bytes of names and
  contents escaped (\x1b, \n, \u202e), so a bundle cannot drive the terminal.

  Archives are read in memory: members with absolute paths, ".." or links,
  and members larger than 64 MiB or 512 MiB in all are refused; nothing is
  extracted. Lines longer than 4096 bytes are passed over, a file is cut
  after 1,048,576 lines and a bundle after 4,194,304; the file list notes
  each.

EXIT STATUS
  0  no documented condition found
  1  at least one finding
  2  an input could not be read (missing, not a bundle, corrupt or refused
     archive); the reason is printed in one line on stderr`

// runDiagnose is the `nic_exporter diagnose` subcommand.
func runDiagnose(args []string, stdout, stderr io.Writer) int {
	app := kingpin.New("nic_exporter diagnose", diagnoseHelp)
	app.UsageWriter(stdout)
	app.ErrorWriter(stderr)
	app.HelpFlag.Short('h')
	app.Terminate(nil)
	var (
		format    string
		rulesFile string
		paths     []string
	)
	app.Flag("format", "Output format: text, json or openmetrics.").Default("text").EnumVar(&format, "text", "json", "openmetrics")
	app.Flag("rules-file", "Kernel log rules file to add to the built-in rules (as --collector.kmsg.rules-file).").StringVar(&rulesFile)
	app.Arg("path", "Bundle directories or .tar.gz/.tgz archives.").StringsVar(&paths)
	helped := false
	app.HelpFlag.Action(func(*kingpin.ParseContext) error { helped = true; return nil })
	if _, err := app.Parse(args); err != nil {
		// An argument may be a hostile file name a shell glob expanded.
		fmt.Fprintf(stderr, "nic_exporter diagnose: %s\n", diagnose.Escape(err.Error()))
		return diagnose.ExitUnreadable
	}
	if helped {
		return diagnose.ExitClean
	}
	rules, err := logrules.Load(rulesFile, logrules.KernelRules())
	if err != nil {
		fmt.Fprintf(stderr, "nic_exporter diagnose: --rules-file: %s\n", diagnose.Escape(err.Error()))
		return diagnose.ExitUnreadable
	}
	return diagnose.Run(diagnose.Config{
		Paths: paths, Format: format, Rules: rules, Limits: diagnose.DefaultLimits, Now: time.Now(),
	}, stdout, stderr, zap.NewNop())
}
