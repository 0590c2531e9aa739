package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nic-exporter/nic_exporter/deploy/internal/promstack"
)

// config is what the demo stack runs and where.
type config struct {
	// Exporter is the nic_exporter binary.
	Exporter string
	// DeployDir holds prometheus/alerts.yml, prometheus/rules.yml and
	// alertmanager/alertmanager.yml.
	DeployDir string
	// Faults is the demo fault schedule (--demo.faults).
	Faults string
	// Ports are the ports on 127.0.0.1; 0 picks a free one.
	Ports ports
	// ScrapeInterval and EvaluationInterval are Prometheus' global
	// intervals.
	ScrapeInterval, EvaluationInterval time.Duration
}

type ports struct {
	Exporter, Prometheus, Alertmanager, Webhook int
}

// startWait bounds the wait for each child to answer. It only keeps a
// broken child from hanging the stack; each wait ends as soon as the
// child is ready.
const startWait = 2 * time.Minute

// stopGrace is how long a child has to exit after SIGTERM before it is
// killed.
const stopGrace = 10 * time.Second

// run starts the stack, prints its URLs and every notification to out
// until ctx ends or a child exits, then stops every child and removes
// its temporary directory. Stopping by ctx is a clean end (nil).
func run(ctx context.Context, c config, out io.Writer) (err error) {
	bins, err := lookBinaries(c)
	if err != nil {
		return err
	}
	addrs, err := c.Ports.addrs()
	if err != nil {
		return err
	}
	shippedAM, err := os.ReadFile(filepath.Join(c.DeployDir, "alertmanager", "alertmanager.yml"))
	if err != nil {
		return fmt.Errorf("reading the shipped Alertmanager configuration (--deploy-dir): %w", err)
	}
	var ruleFiles []string
	for _, f := range []string{"alerts.yml", "rules.yml"} {
		p, err := filepath.Abs(filepath.Join(c.DeployDir, "prometheus", f))
		if err == nil {
			_, err = os.Stat(p)
		}
		if err != nil {
			return fmt.Errorf("shipped rules (--deploy-dir): %w", err)
		}
		ruleFiles = append(ruleFiles, p)
	}

	dir, err := os.MkdirTemp("", "demostack-")
	if err != nil {
		return fmt.Errorf("temporary directory: %w", err)
	}
	defer func() {
		if rerr := os.RemoveAll(dir); rerr != nil {
			err = errors.Join(err, fmt.Errorf("removing %s: %w", dir, rerr))
			return
		}
		fmt.Fprintf(out, "stopped every child, removed %s\n", dir)
	}()
	fmt.Fprintf(out, "temporary directory %s\n", dir)

	s := &stack{out: out, exited: make(chan *promstack.Process, 3)}
	defer s.stop()

	// The demo clock counts from a whole second given on the command
	// line (the last one before now), so each fault's start is known.
	demoStart := time.Now().Truncate(time.Second)
	s.demoStart = demoStart

	hook := promstack.NewWebhook(s.print)
	srv, err := promstack.Serve(addrs.Webhook, hook)
	if err != nil {
		return err
	}
	s.onStop(func() {
		ctx, cancel := context.WithTimeout(context.Background(), stopGrace)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})

	exporterArgs := []string{"--demo", "--web.listen-address=" + addrs.Exporter,
		"--demo.start=" + demoStart.UTC().Format(time.RFC3339),
		// Evidence capture is on, so NICDevlinkEvidenceCaptured can fire.
		"--collector.devlink.capture-dir=" + filepath.Join(dir, "evidence")}
	if c.Faults != "" {
		exporterArgs = append(exporterArgs, "--demo.faults="+c.Faults)
	}
	if err := s.start(ctx, dir, "nic_exporter", bins.exporter, exporterArgs, "http://"+addrs.Exporter+"/readyz"); err != nil {
		return stopped(ctx, err)
	}

	amCfg, err := promstack.AlertmanagerConfig(shippedAM, promstack.AlertmanagerOptions{WebhookBase: "http://" + addrs.Webhook})
	if err != nil {
		return err
	}
	amFile := filepath.Join(dir, "alertmanager.yml")
	if err := os.WriteFile(amFile, amCfg, 0o600); err != nil {
		return fmt.Errorf("writing the Alertmanager configuration: %w", err)
	}
	if err := s.start(ctx, dir, "alertmanager", bins.alertmanager,
		promstack.AlertmanagerArgs(amFile, filepath.Join(dir, "alertmanager-data"), addrs.Alertmanager),
		"http://"+addrs.Alertmanager+"/-/ready"); err != nil {
		return stopped(ctx, err)
	}

	promFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(promFile, []byte(prometheusConfig(c, ruleFiles, addrs)), 0o600); err != nil {
		return fmt.Errorf("writing the Prometheus configuration: %w", err)
	}
	if err := s.start(ctx, dir, "prometheus", bins.prometheus,
		promstack.PrometheusArgs(promFile, filepath.Join(dir, "tsdb"), addrs.Prometheus),
		"http://"+addrs.Prometheus+"/-/ready"); err != nil {
		return stopped(ctx, err)
	}

	s.banner(c, addrs)
	return s.wait(ctx)
}

// stopped returns nil if ctx has ended (a signal stopped the stack while
// a child was starting), else err.
func stopped(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// binaries are the paths of the programs the stack runs.
type binaries struct {
	exporter, prometheus, alertmanager string
}

func lookBinaries(c config) (binaries, error) {
	var b binaries
	var err error
	if b.exporter, err = exec.LookPath(c.Exporter); err != nil {
		return b, fmt.Errorf("--exporter: %w (make demo-stack builds one)", err)
	}
	if b.exporter, err = filepath.Abs(b.exporter); err != nil {
		return b, fmt.Errorf("--exporter: %w", err)
	}
	if b.prometheus, err = exec.LookPath("prometheus"); err != nil {
		return b, fmt.Errorf("%w (Debian: apt install prometheus)", err)
	}
	if b.alertmanager, err = promstack.LookAlertmanager(); err != nil {
		return b, fmt.Errorf("%w (Debian: apt install prometheus-alertmanager)", err)
	}
	return b, nil
}

// addresses are the host:port addresses the stack listens on.
type addresses struct {
	Exporter, Prometheus, Alertmanager, Webhook string
}

// addrs returns the 127.0.0.1 addresses of p, with a free port for each
// 0.
func (p ports) addrs() (addresses, error) {
	var a addresses
	for _, x := range []struct {
		port int
		addr *string
	}{{p.Exporter, &a.Exporter}, {p.Prometheus, &a.Prometheus}, {p.Alertmanager, &a.Alertmanager}, {p.Webhook, &a.Webhook}} {
		if x.port != 0 {
			*x.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(x.port))
			continue
		}
		addr, err := promstack.FreeAddr()
		if err != nil {
			return a, err
		}
		*x.addr = addr
	}
	return a, nil
}

// prometheusConfig returns a Prometheus configuration that scrapes the
// demo exporter as job nic_exporter (the job the shipped rules select),
// evaluates the shipped rule files and sends alerts to the stack's
// Alertmanager.
func prometheusConfig(c config, ruleFiles []string, a addresses) string {
	return fmt.Sprintf(`global:
  scrape_interval: %s
  scrape_timeout: %s
  evaluation_interval: %s
rule_files: [%q, %q]
alerting:
  alertmanagers:
    - static_configs:
        - targets: [%q]
scrape_configs:
  - job_name: nic_exporter
    static_configs:
      - targets: [%q]
`, promDuration(c.ScrapeInterval), promDuration(min(c.ScrapeInterval, 10*time.Second)),
		promDuration(c.EvaluationInterval), ruleFiles[0], ruleFiles[1], a.Alertmanager, a.Exporter)
}

// promDuration formats d in Prometheus' duration syntax, to the
// millisecond.
func promDuration(d time.Duration) string {
	return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
}

// stack is the running children and what stops them.
type stack struct {
	out       io.Writer
	demoStart time.Time

	mu       sync.Mutex // serializes writes to out
	children []*promstack.Process
	stops    []func()
	exited   chan *promstack.Process
}

// start starts a child with its output in dir/name.log and waits until
// readyURL answers.
func (s *stack) start(ctx context.Context, dir, name, bin string, args []string, readyURL string) error {
	p, err := promstack.Start(promstack.ProcessConfig{Name: name, Path: bin, Args: args,
		LogFile: filepath.Join(dir, name+".log")})
	if err != nil {
		return err
	}
	s.children = append(s.children, p)
	s.onStop(func() { p.Stop(stopGrace) })
	go func() {
		<-p.Done()
		s.exited <- p
	}()
	s.printf("started %s (pid %d)\n", name, p.Pid())
	wctx, cancel := context.WithTimeout(ctx, startWait)
	defer cancel()
	return promstack.WaitHTTP(wctx, p, readyURL)
}

// onStop registers f to run when the stack stops, before the functions
// registered earlier.
func (s *stack) onStop(f func()) { s.stops = append(s.stops, f) }

// stop stops every child, the last started first.
func (s *stack) stop() {
	for i := len(s.stops) - 1; i >= 0; i-- {
		s.stops[i]()
	}
	s.stops = nil
}

// wait returns nil when ctx ends, or an error with the end of its output
// when a child exits.
func (s *stack) wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		s.printf("stopping\n")
		return nil
	case p := <-s.exited:
		return fmt.Errorf("%s exited (%v); the end of its output:\n%s", p.Name(), p.ExitErr(), p.LogTail(4000))
	}
}

// banner prints the URLs and the fault schedule.
func (s *stack) banner(c config, a addresses) {
	var b strings.Builder
	fmt.Fprintf(&b, "\nThe demo stack is up (Ctrl-C stops it):\n")
	fmt.Fprintf(&b, "  exporter      http://%s/metrics   (the demo host; its status page at /)\n", a.Exporter)
	fmt.Fprintf(&b, "  Prometheus    http://%s/alerts    (the shipped rules, unchanged)\n", a.Prometheus)
	fmt.Fprintf(&b, "  Alertmanager  http://%s/          (the shipped routing and inhibit rules)\n", a.Alertmanager)
	fmt.Fprintf(&b, "  webhook       http://%s/<receiver> (prints each notification below)\n", a.Webhook)
	fmt.Fprintf(&b, "  Grafana       not started: point a Prometheus data source at http://%s and load\n", a.Prometheus)
	fmt.Fprintf(&b, "                the dashboards of dashboards/ (deploy/README.md, \"Dashboards\")\n")
	fmt.Fprintf(&b, "demo start %s; times below count from it\n", s.demoStart.Format(time.TimeOnly))
	if c.Faults == "" {
		fmt.Fprintf(&b, "no faults scheduled: a healthy host, nothing should page\n")
	} else {
		fmt.Fprintf(&b, "faults (docs/faults.md): %s\n", strings.ReplaceAll(c.Faults, ",", ", "))
	}
	fmt.Fprintf(&b, "pages go to the pager, warnings to tickets, info nowhere (deploy/alertmanager/alertmanager.yml)\n\n")
	s.printf("%s", b.String())
}

// print prints one notification the webhook received.
func (s *stack) print(n promstack.Notification) {
	kind := n.Receiver
	switch n.Receiver {
	case "pager":
		kind = "PAGE"
	case "tickets":
		kind = "ticket"
	}
	var labels []string
	for _, k := range []string{"instance", "device", "pci_address", "reporter", "comm", "file"} {
		if v := n.Labels[k]; v != "" {
			labels = append(labels, k+"="+v)
		}
	}
	s.printf("[%s] %-6s %-8s %s %s\n         %s\n", elapsed(n.Received.Sub(s.demoStart)), kind, n.Status,
		n.Labels["alertname"], strings.Join(labels, " "), n.Annotations["summary"])
}

// elapsed formats the time since the demo start, to the tenth of a
// second: +1m02.3s.
func elapsed(d time.Duration) string {
	sign := "+"
	if d < 0 {
		sign, d = "-", -d
	}
	d = d.Round(100 * time.Millisecond)
	m := int(d / time.Minute)
	sec := (d % time.Minute).Seconds()
	return fmt.Sprintf("%s%dm%04.1fs", sign, m, sec)
}

func (s *stack) printf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.out, format, args...)
}
