package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/daemon"
	"github.com/nic-exporter/nic_exporter/internal/logging"
	"github.com/nic-exporter/nic_exporter/nodehealth"
	"github.com/nic-exporter/nic_exporter/nodehealth/slurm"
)

// checkHelp is the man-style description of `nic_exporter check`.
const checkHelp = `Read the node verdict of the local nic_exporter and exit with its status.

SYNOPSIS
  nic_exporter check [--url=http://127.0.0.1:21180] [--format=text|nhc|npd]
                     [--condition=TYPE]... [--slurm.drain] [--slurm.resume]
                     [--slurm.node=NAME]

DESCRIPTION
  Reads /health of the running daemon (the node conditions of
  docs/node-health.md, computed by the daemon with hysteresis) and prints
  a one-line reason. It reads no device itself and keeps no state.

  --format=text   a summary line, then one line per true condition
  --format=nhc    one line: "OK", or the status and reason, for LBNL NHC:
                    * || check_cmd_output -t 10 -r 0 -m '/^OK$/' /usr/bin/nic_exporter check --format=nhc
  --format=npd    one line, the reason cut to --npd.max-output-length, for a
                  node-problem-detector custom plugin (deploy/npd/)

  Slurm ignores the exit status of its HealthCheckProgram; with
  --slurm.drain the check drains the node itself when the verdict is
  unhealthy (scontrol update nodename=NODE state=drain reason="nic_exporter:
  REASON"), unless the node is already drained. With --slurm.resume it
  resumes the node when the verdict is ok again, but only if its drain
  reason starts with "nic_exporter: " (never an administrator's drain) and
  it has been drained for --slurm.min-drained. An unknown verdict (the
  daemon down or still starting) neither drains nor resumes.

EXIT STATUS (node-problem-detector's)
  0  ok: no NIC condition is true
  1  unhealthy: at least one condition is true
  2  unknown: the daemon could not be read, or has not polled yet`

// runCheck is the `nic_exporter check` subcommand.
func runCheck(args []string, stdout, stderr io.Writer) int {
	app := kingpin.New("nic_exporter check", checkHelp)
	app.UsageWriter(stdout)
	app.ErrorWriter(stderr)
	app.HelpFlag.Short('h')
	app.Terminate(nil)
	var (
		rawURL     string
		format     string
		timeout    time.Duration
		npdMax     int
		drain      bool
		resume     bool
		node       string
		scontrol   string
		minDrained time.Duration
		conditions []string
	)
	app.Flag("url", "Address of the local exporter, or its /health URL.").Default("http://127.0.0.1" + daemon.DefaultAddress).StringVar(&rawURL)
	app.Flag("format", "Output format: text, nhc or npd.").Default(nodehealth.FormatText).EnumVar(&format, nodehealth.Formats()...)
	app.Flag("condition", "Judge only this node condition (repeatable), e.g. NICFirmwareFatal: one node-problem-detector rule per condition. Default: all.").StringsVar(&conditions)
	app.Flag("timeout", "How long to wait for /health (and for each scontrol call).").Default("5s").DurationVar(&timeout)
	app.Flag("npd.max-output-length", "Longest message of --format=npd, in bytes: the max_output_length of the node-problem-detector plugin config (NPD's default is 80).").Default(fmt.Sprint(nodehealth.DefaultNPDMaxOutput)).IntVar(&npdMax)
	app.Flag("slurm.drain", "Drain the Slurm node when the verdict is unhealthy and the node is not drained yet.").BoolVar(&drain)
	app.Flag("slurm.resume", "Resume the Slurm node when the verdict is ok and the node was drained by this check (its reason starts with \""+strings.TrimSpace(slurm.Prefix)+"\").").BoolVar(&resume)
	app.Flag("slurm.node", "Slurm node name of this host; default: $SLURMD_NODENAME (set by slurmd for its HealthCheckProgram), else the short host name.").StringVar(&node)
	app.Flag("slurm.scontrol", "The scontrol command.").Default("scontrol").StringVar(&scontrol)
	app.Flag("slurm.min-drained", "Shortest time a node this check drained stays drained before --slurm.resume resumes it; with the daemon's --health.clear-after it bounds how often a node goes in and out of service.").Default("10m").DurationVar(&minDrained)
	helped := false
	app.HelpFlag.Action(func(*kingpin.ParseContext) error { helped = true; return nil })
	if _, err := app.Parse(args); err != nil {
		fmt.Fprintf(stderr, "nic_exporter check: %v\n", err)
		return nodehealth.ExitUnknown
	}
	if helped {
		return nodehealth.ExitOK
	}
	healthURL, err := checkURL(rawURL)
	if err != nil {
		fmt.Fprintf(stderr, "nic_exporter check: --url: %v\n", err)
		return nodehealth.ExitUnknown
	}
	log, err := logging.New(logging.Config{Level: "info", Format: "logfmt"}, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "nic_exporter check: %v\n", err)
		return nodehealth.ExitUnknown
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	v, err := nodehealth.Fetch(ctx, &http.Client{}, healthURL)
	cancel()
	if err == nil && len(conditions) > 0 {
		v, err = v.Only(conditions)
	}
	out, code := nodehealth.Report(v, err, format, npdMax)
	if _, werr := io.WriteString(stdout, out); werr != nil {
		fmt.Fprintf(stderr, "nic_exporter check: writing the report: %v\n", werr)
	}
	if err != nil || v.Status == nodehealth.VerdictUnknown || (!drain && !resume) {
		return code
	}
	if node == "" {
		node = os.Getenv("SLURMD_NODENAME")
	}
	if node == "" {
		h, herr := os.Hostname()
		if herr != nil {
			fmt.Fprintf(stderr, "nic_exporter check: no --slurm.node and no host name: %v\n", herr)
			return code
		}
		node, _, _ = strings.Cut(h, ".")
	}
	sc, err := slurm.New(slurm.Config{Scontrol: scontrol, Node: node, MinDrained: minDrained, Timeout: timeout}, log.Named("slurm"))
	if err != nil {
		fmt.Fprintf(stderr, "nic_exporter check: %v\n", err)
		return code
	}
	action, what, err := sc.Reconcile(context.Background(), v.Status == nodehealth.VerdictUnhealthy, v.Reason, drain, resume)
	if err != nil {
		log.Error("the Slurm action failed; the node's scheduling state is unchanged", zap.Error(err))
		return code
	}
	log.Info("slurm", zap.String("action", string(action)), zap.String("detail", what))
	return code
}

// checkURL returns the /health URL of --url: an address without a path
// gets /health.
func checkURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("%q: want an http:// or https:// URL", raw)
	}
	if u.Host == "" {
		return "", fmt.Errorf("%q has no host", raw)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/health"
	}
	return u.String(), nil
}
