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
  nic_exporter diagnose [--format=text|json|openmetrics] [--rules-file=FILE]
                        [--alert-rules-file=FILE [--recording-rules-file=FILE]] PATH...

DESCRIPTION
  PATH is a bundle directory or a .tar.gz/.tgz archive of one with a single
  top-level directory, as collect_debug.sh, a sosreport or the exporter's
  evidence capture writes. Files are recognised by their content: ethtool -i,
  ethtool -S, ethtool DEV, devlink health show (text and -j), dmesg or
  journalctl -k text with or without timestamps and syslog prefixes, ibstat,
  lspci -vvv, mlxfwmanager --query, the *.devlink.json evidence files of
  --collector.devlink.capture-dir, and nic_exporter collect's pci_sysfs.txt,
  netdev_sysfs.txt, ethtool_-m_IF.txt, InfiniBand ib_counters_* and
  hw_counters_*, devlink dev info and manifest (whose earlier sample under
  earlier_sample/ is the first observation of each series). Other files
  are listed as ignored.

  The bundle becomes the series the daemon would export (the daemon's
  ethtool and kmsg collectors over its ethtool -i/-S dumps and kernel logs,
  and the devlink, netdev, PCIe and InfiniBand series of its devlink health,
  ethtool DEV, lspci and ibstat outputs), and the alerting rules of
  deploy/prometheus/alerts.yml (built in; with the recording rules of
  rules.yml they read) are evaluated over them with Prometheus' PromQL
  engine. Each sample an alert returns is a finding: the alert, its severity
  and runbook, the device, and the series it read with their file:line.

  A bundle is one snapshot. A counter's value is "since boot": it is
  evaluated as growing from zero at boot (uptime from a /proc/uptime file,
  else the latest kernel log timestamp, else 24 hours) at its average rate,
  so any count fires the "increase > 0" alerts and rate thresholds compare
  with the average since boot. A rule's "for:" cannot be observed: a
  condition that holds in the snapshot is a finding.

  Counters in both of collect's samples are evaluated at their rate between
  them, and since boot up to the earlier sample: a finding only the latter
  gives (a count that did not rise between the samples) is listed last,
  as view "since_boot_only", and does not count for the exit status.

  --alert-rules-file and --recording-rules-file evaluate other rule files
  instead of the built-in ones, such as the mixin rendered with your own
  thresholds.

  --format=openmetrics writes the series the rules are evaluated over,
  stamped with the current time and labelled instance=PATH, for promtool
  tsdb create-blocks-from openmetrics.

  The text output and the messages on stderr show the control characters,
  bidirectional formatting characters and non-UTF-8 bytes of names and
  contents escaped (\x1b, \n, \u202e), so a bundle cannot drive the terminal.

  Archives are read in memory: members with absolute paths, ".." or links,
  and members larger than 64 MiB or 512 MiB in all are refused; nothing is
  extracted. Lines longer than 4096 bytes are passed over, a file is cut
  after 1,048,576 lines and a bundle after 4,194,304; the file list notes
  each.

EXIT STATUS
  0  no documented condition found (since_boot_only findings aside)
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
		format      string
		rulesFile   string
		alertsFile  string
		recordsFile string
		paths       []string
	)
	app.Flag("format", "Output format: text, json or openmetrics.").Default("text").EnumVar(&format, "text", "json", "openmetrics")
	app.Flag("rules-file", "Kernel log rules file to add to the built-in rules (as --collector.kmsg.rules-file).").StringVar(&rulesFile)
	app.Flag("alert-rules-file", "Alerting rules file to evaluate instead of the built-in deploy/prometheus/alerts.yml.").StringVar(&alertsFile)
	app.Flag("recording-rules-file", "Recording rules file for --alert-rules-file instead of the built-in deploy/prometheus/rules.yml.").StringVar(&recordsFile)
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
		Paths: paths, Format: format, Rules: rules, AlertRulesFile: alertsFile, RecordingRulesFile: recordsFile,
		Limits: diagnose.DefaultLimits, Now: time.Now(),
	}, stdout, stderr, zap.NewNop())
}
