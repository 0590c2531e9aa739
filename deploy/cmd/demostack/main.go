// Command demostack runs the whole alerting pipeline on this machine: the
// exporter's demo host with a fault schedule, a real Prometheus with the
// shipped rules (prometheus/alerts.yml and rules.yml, unchanged), a real
// Alertmanager with the shipped routing and inhibit rules
// (alertmanager/alertmanager.yml, its timings unchanged) and a webhook
// receiver that prints every notification to the terminal. Everything
// listens on 127.0.0.1; Ctrl-C (SIGINT) or SIGTERM stops every child and
// removes the temporary directory. make demo-stack builds the exporter and
// runs it from the deploy directory:
//
//	go run ./cmd/demostack --exporter=../nic_exporter
//
// The default faults page within a minute: fw_fatal starts 15 s after the
// demo host, and its page NICDevlinkFwFatalError has "for: 0m".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// defaultFaults is the demo's fault schedule (docs/faults.md): a fatal
// firmware error early, which pages, then a degraded PCIe link and a
// flapping link, which open tickets.
const defaultFaults = "fw_fatal@15s,pcie_degraded@1m,link_flap@2m-4m"

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "demostack:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "demostack:", err)
		os.Exit(1)
	}
}

// parseFlags returns the configuration that args ask for.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("demostack", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.Exporter, "exporter", "nic_exporter", "nic_exporter binary to run (a name is looked up in PATH); make demo-stack builds one")
	fs.StringVar(&c.DeployDir, "deploy-dir", ".", "the repository's deploy directory, with prometheus/ and alertmanager/")
	fs.StringVar(&c.Faults, "faults", defaultFaults, "demo fault schedule, as --demo.faults of nic_exporter (docs/faults.md); empty for a healthy host")
	fs.IntVar(&c.Ports.Exporter, "port.exporter", 21180, "port of the exporter on 127.0.0.1 (0: any free port)")
	fs.IntVar(&c.Ports.Prometheus, "port.prometheus", 9090, "port of Prometheus on 127.0.0.1 (0: any free port)")
	fs.IntVar(&c.Ports.Alertmanager, "port.alertmanager", 9093, "port of Alertmanager on 127.0.0.1 (0: any free port)")
	fs.IntVar(&c.Ports.Webhook, "port.webhook", 5001, "port of the webhook receiver on 127.0.0.1 (0: any free port)")
	fs.DurationVar(&c.ScrapeInterval, "scrape-interval", 15*time.Second, "Prometheus' scrape interval (deploy/README.md recommends 15-30 s)")
	fs.DurationVar(&c.EvaluationInterval, "evaluation-interval", 15*time.Second, "Prometheus' rule evaluation interval")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	for name, p := range map[string]int{"exporter": c.Ports.Exporter, "prometheus": c.Ports.Prometheus,
		"alertmanager": c.Ports.Alertmanager, "webhook": c.Ports.Webhook} {
		if p < 0 || p > 65535 {
			return config{}, fmt.Errorf("--port.%s=%s: not a port", name, strconv.Itoa(p))
		}
	}
	if c.ScrapeInterval <= 0 || c.EvaluationInterval <= 0 {
		return config{}, errors.New("--scrape-interval and --evaluation-interval must be positive")
	}
	return c, nil
}
