package daemon

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/demo"
	"github.com/nic-exporter/nic_exporter/internal/logging"
)

// DefaultAddress is outside the exporter port range 9100-9999, which the
// Prometheus default port allocations list had filled by 2023, and below
// the Linux ephemeral port range.
const DefaultAddress = ":21180"

// Options are the parsed command-line flags of the daemon.
type Options struct {
	web            *web.FlagConfig
	metricsPath    string
	maxRequests    int
	seriesBudget   int
	readHeader     time.Duration
	writeTimeout   time.Duration
	idleTimeout    time.Duration
	sysfs          string
	sysfsSet       bool
	procfs         string
	procfsSet      bool
	logLevel       string
	logFormat      string
	demo           bool
	demoFaults     string
	demoElapsed    time.Duration
	demoStart      string
	shutdownGrace  time.Duration
	errLogInterval time.Duration
	collectors     []*collectorFlags
	health         healthFlags
	kubernetes     kubernetesFlags
}

// healthFlags configure the node verdict (package nodehealth).
type healthFlags struct {
	interval   time.Duration
	clearAfter time.Duration
}

// ParseFlags parses the daemon's command line, writing usage and errors
// to stderr, and checks the values that parse but cannot work. Its errors
// are reported like kingpin's, with exit status 2.
func ParseFlags(args []string, stderr io.Writer) (*Options, error) {
	app, o := newApp(stderr)
	if _, err := app.Parse(args); err != nil {
		return nil, err
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	return o, nil
}

// newApp declares the daemon's flags on a new kingpin application, which
// writes usage and errors to stderr, and returns it with the Options its
// flags fill in when it parses.
func newApp(stderr io.Writer) (*kingpin.Application, *Options) {
	app := kingpin.New("nic_exporter", "Prometheus exporter for the health of high-performance NICs: devlink health, ethtool, InfiniBand, PCIe and VMA statistics. `nic_exporter diagnose --help` describes the subcommand that reads support bundles instead, `nic_exporter check --help` the one that reads this daemon's node verdict for Slurm, NHC and node-problem-detector.")
	app.UsageWriter(stderr)
	app.ErrorWriter(stderr)
	app.Version(version.Print("nic_exporter"))
	app.HelpFlag.Short('h')
	o := &Options{}
	o.web = kingpinflag.AddFlags(app, DefaultAddress)
	app.Flag("web.telemetry-path", "Path under which to expose metrics.").Default("/metrics").StringVar(&o.metricsPath)
	app.Flag("web.series-budget", "Per-host budget of series in the default scrape (collector series, not the exporter's own metrics); above it the exporter logs one warning naming the top contributors and sets nic_exporter_series_budget_exceeded to 1. 0 turns the check off. The default is sized from the large host of docs/benchmarks.md (Fleet cost).").Default(strconv.Itoa(defaultSeriesBudget)).IntVar(&o.seriesBudget)
	app.Flag("web.max-requests", "Maximum number of scrapes prepared at once, of the metrics and detail endpoints together; more get HTTP 503. A scrape's slot is freed once its answer is prepared, before it is written, so clients that read slowly or never hold none. 0 means no limit.").Default("64").IntVar(&o.maxRequests)
	app.Flag("web.read-header-timeout", "How long a client may take to send the headers of a request.").Default("10s").DurationVar(&o.readHeader)
	app.Flag("web.write-timeout", "How long one answer may take to write; a scrape whose client reads slower loses the connection.").Default("1m").DurationVar(&o.writeTimeout)
	app.Flag("web.idle-timeout", "How long an idle keep-alive connection stays open between requests.").Default("2m").DurationVar(&o.idleTimeout)
	app.Flag("path.sysfs", "sysfs mount point; when given, it must be a directory with a class directory.").Default("/sys").IsSetByUser(&o.sysfsSet).StringVar(&o.sysfs)
	app.Flag("path.procfs", "procfs mount point.").Default("/proc").IsSetByUser(&o.procfsSet).StringVar(&o.procfs)
	app.Flag("log.level", "Only log messages with the given severity or above: debug, info, warn, error.").Default("info").EnumVar(&o.logLevel, logging.Levels()...)
	app.Flag("log.format", "Output format of log messages: logfmt or json (console is an alias of logfmt).").Default("logfmt").EnumVar(&o.logFormat, logging.Formats()...)
	app.Flag("log.source-error-interval", "How often a repeated source error of the same file or object is logged again.").Default("10m").DurationVar(&o.errLogInterval)
	app.Flag("web.shutdown-grace", "How long in-flight scrapes may take to finish after SIGTERM.").Default("10s").DurationVar(&o.shutdownGrace)
	app.Flag("demo", "Run the real collectors against the embedded reference host instead of this machine.").BoolVar(&o.demo)
	app.Flag("demo.faults", "Documented faults to schedule on the demo host, as name@start or name@start-end, comma-separated, e.g. pcie_degraded@4m,link_flap@2m-3m. Known: "+joinFaults()+".").StringVar(&o.demoFaults)
	app.Flag("demo.elapsed", "Freeze the demo clock at this time after the start (reproducible output).").DurationVar(&o.demoElapsed)
	app.Flag("demo.start", "Wall-clock time (RFC 3339, e.g. 2026-11-25T10:00:00Z) the demo clock counts from instead of the exporter's start, so a restarted demo exporter continues the same host: faults, counters and kernel log records as if it had run all along.").StringVar(&o.demoStart)
	app.Flag("health.interval", "How often the node verdict (/health, nic_exporter_node_condition) is computed from the collectors' latest snapshots; it reads no device.").Default("5s").DurationVar(&o.health.interval)
	app.Flag("health.clear-after", "How long a node condition must show no evidence before it is cleared (hysteresis; a condition is set as soon as its evidence holds for its alert's for:).").Default("5m").DurationVar(&o.health.clearAfter)
	o.kubernetes.addFlags(app)
	for _, spec := range collectorSpecs() {
		o.collectors = append(o.collectors, spec.registerAll(app))
	}
	return app, o
}

// check refuses flag values that parse but cannot work. Its errors are
// reported like kingpin's, with exit status 2.
func (o *Options) check() error {
	// The common flags of every collector first, then the own flags of
	// each.
	for _, cf := range o.collectors {
		if err := cf.common.Check(); err != nil {
			return err
		}
	}
	for _, cf := range o.collectors {
		if cf.check == nil {
			continue
		}
		if err := cf.check(); err != nil {
			return err
		}
	}
	if o.seriesBudget < 0 {
		return fmt.Errorf("--web.series-budget must not be negative (0 turns the check off), got %d", o.seriesBudget)
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{
		{"--web.read-header-timeout", o.readHeader},
		{"--web.write-timeout", o.writeTimeout},
		{"--web.idle-timeout", o.idleTimeout},
		{"--web.shutdown-grace", o.shutdownGrace},
	} {
		if d.v <= 0 {
			return fmt.Errorf("%s must be positive, got %s", d.flag, d.v)
		}
	}
	if d := o.health.interval; d < collector.MinInterval {
		return fmt.Errorf("--health.interval must be at least %s, got %s", collector.MinInterval, d)
	}
	if o.health.clearAfter < 0 {
		return fmt.Errorf("--health.clear-after must not be negative, got %s", o.health.clearAfter)
	}
	if err := o.kubernetes.check(); err != nil {
		return err
	}
	if o.maxRequests < 0 {
		return fmt.Errorf("--web.max-requests must not be negative (0 means no limit), got %d", o.maxRequests)
	}
	if (o.demoFaults != "" || o.demoElapsed != 0 || o.demoStart != "") && !o.demo {
		return errors.New("--demo.faults, --demo.elapsed and --demo.start need --demo")
	}
	if o.demoStart != "" {
		if o.demoElapsed != 0 {
			return errors.New("--demo.start and --demo.elapsed exclude each other: a frozen clock has a fixed start")
		}
		if _, err := time.Parse(time.RFC3339Nano, o.demoStart); err != nil {
			return fmt.Errorf("--demo.start: want an RFC 3339 time such as 2026-11-25T10:00:00Z: %w", err)
		}
	}
	if p := *o.web.WebConfigFile; p != "" {
		if err := checkWebConfig(p); err != nil {
			return fmt.Errorf("--web.config.file: %w", err)
		}
	}
	if !o.demo {
		if err := o.checkPaths(); err != nil {
			return err
		}
	}
	return checkTelemetryPath(o.metricsPath)
}

// defaultSeriesBudget is the default of --web.series-budget. The large
// host of docs/benchmarks.md ("Fleet cost": 16 ConnectX ports of 64
// channels, 16 InfiniBand ports) has about 1,600 collector series in its
// default scrape; the budget leaves half as much again for hosts with
// more ports, VMA applications or log rules, and catches the default
// scrape growing by an order of magnitude (per-queue detail, a
// mis-configured filter) long before it costs a fleet that much.
const defaultSeriesBudget = 2500

// otherEndpoints are the paths the exporter serves besides the metrics.
var otherEndpoints = []string{"/", "/healthz", "/readyz", "/health"}

// checkTelemetryPath refuses a --web.telemetry-path that http.ServeMux
// would reject with a panic, that no request could reach, or that would
// hide another endpoint.
func checkTelemetryPath(p string) error {
	const flag = "--web.telemetry-path"
	switch {
	case p == "":
		return fmt.Errorf("%s must not be empty", flag)
	case !strings.HasPrefix(p, "/"):
		return fmt.Errorf("%s %q must start with /", flag, p)
	case strings.ContainsFunc(p, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || strings.ContainsRune("{}?#", r)
	}):
		return fmt.Errorf("%s %q may not contain spaces, control characters or any of {}?#", flag, p)
	case path.Clean(p) != p:
		return fmt.Errorf("%s %q must be a clean path: no trailing slash, no //, . or .. segments", flag, p)
	case slices.Contains(otherEndpoints, p):
		return fmt.Errorf("%s %q is taken by another endpoint (/ is the landing page, /healthz and /readyz the probes, /health the node verdict)", flag, p)
	}
	// Whatever else ServeMux refuses, it refuses with a panic.
	return func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("%s %q: %v", flag, p, r)
			}
		}()
		http.NewServeMux().Handle(p, http.NotFoundHandler())
		return nil
	}()
}

func joinFaults() string {
	s := ""
	for i, f := range demo.Faults() {
		if i > 0 {
			s += ", "
		}
		s += f
	}
	return s
}

// LogConfig returns the logging configuration of the flags.
func (o *Options) LogConfig() logging.Config {
	return logging.Config{Level: o.logLevel, Format: o.logFormat}
}
