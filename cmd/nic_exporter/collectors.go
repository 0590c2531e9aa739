package main

import (
	"fmt"
	"os"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/applog"
	"github.com/nic-exporter/nic_exporter/collector/devlinkhealth"
	"github.com/nic-exporter/nic_exporter/collector/ethtool"
	"github.com/nic-exporter/nic_exporter/collector/infiniband"
	"github.com/nic-exporter/nic_exporter/collector/kmsg"
	"github.com/nic-exporter/nic_exporter/collector/netdev"
	"github.com/nic-exporter/nic_exporter/collector/vma"
	"github.com/nic-exporter/nic_exporter/internal/demo"
	"github.com/nic-exporter/nic_exporter/internal/ethtoolioctl"
	"github.com/nic-exporter/nic_exporter/internal/logrules"
)

// sources says where the collectors read from: the host's paths, or the
// demo host's replacements.
type sources struct {
	sysfs  string
	procfs string
	demo   *demo.Host // nil unless --demo
}

// collectorSpec describes one collector's flags and how to build it.
type collectorSpec struct {
	name            string
	help            string
	defaultInterval string
	defaultTimeout  string
	// extraFlags registers the collector's own flags and returns a builder
	// that uses them.
	extraFlags func(app *kingpin.Application, cf *collectorFlags) func(env sources, filter collector.NameFilter, log *zap.Logger) (collector.Collector, error)
}

// collectorFlags are the parsed flags of one collector.
type collectorFlags struct {
	spec     collectorSpec
	enabled  bool
	interval time.Duration
	timeout  time.Duration
	include  string
	exclude  string
	builder  func(env sources, filter collector.NameFilter, log *zap.Logger) (collector.Collector, error)
}

func (s collectorSpec) addFlags(app *kingpin.Application) *collectorFlags {
	cf := &collectorFlags{spec: s}
	p := "collector." + s.name
	app.Flag(p, "Enable the "+s.name+" collector: "+s.help+" Disable with --no-"+p+".").Default("true").BoolVar(&cf.enabled)
	app.Flag(p+".interval", "How often the "+s.name+" collector polls its sources.").Default(s.defaultInterval).DurationVar(&cf.interval)
	app.Flag(p+".timeout", "How long one poll of the "+s.name+" collector may take before it counts as failed.").Default(s.defaultTimeout).DurationVar(&cf.timeout)
	app.Flag(p+".device-include", "Regular expression (anchored) of the devices the "+s.name+" collector reads; empty means all.").StringVar(&cf.include)
	app.Flag(p+".device-exclude", "Regular expression (anchored) of the devices the "+s.name+" collector never reads.").StringVar(&cf.exclude)
	cf.builder = s.extraFlags(app, cf)
	return cf
}

func (cf *collectorFlags) build(env sources, log *zap.Logger) (collector.Collector, error) {
	f, err := collector.NewNameFilter("collector."+cf.spec.name+".device", cf.include, cf.exclude)
	if err != nil {
		return nil, err
	}
	return cf.builder(env, f, log)
}

// collectorSpecs lists every collector, in the order their series appear.
func collectorSpecs() []collectorSpec {
	return []collectorSpec{
		{
			name:            "netdev",
			help:            "interface state, statistics and PCIe link from sysfs.",
			defaultInterval: "5s",
			defaultTimeout:  "4s",
			extraFlags: func(*kingpin.Application, *collectorFlags) func(sources, collector.NameFilter, *zap.Logger) (collector.Collector, error) {
				return func(env sources, f collector.NameFilter, log *zap.Logger) (collector.Collector, error) {
					return netdev.New(netdev.Config{SysfsPath: env.sysfs, Filter: f}, log), nil
				}
			},
		},
		{
			name:            "infiniband",
			help:            "RDMA device and port state, rate, IBA port counters and driver hw_counters from /sys/class/infiniband.",
			defaultInterval: "5s",
			defaultTimeout:  "4s",
			extraFlags: func(*kingpin.Application, *collectorFlags) func(sources, collector.NameFilter, *zap.Logger) (collector.Collector, error) {
				// The demo host's tree includes /sys/class/infiniband, so
				// env.sysfs serves both the real and the demo source.
				return func(env sources, f collector.NameFilter, log *zap.Logger) (collector.Collector, error) {
					return infiniband.New(infiniband.Config{SysfsPath: env.sysfs, Filter: f}, log), nil
				}
			},
		},
		{
			name: "vma",
			help: "per-process NVIDIA VMA (libvma) statistics from vmastat.<pid> files; device filters match the process name (comm).",
			// libvma copies counters into the file for about 10 s after a
			// reader's handshake, so polls must come more often than that.
			defaultInterval: "5s",
			defaultTimeout:  "4s",
			extraFlags: func(app *kingpin.Application, _ *collectorFlags) func(sources, collector.NameFilter, *zap.Logger) (collector.Collector, error) {
				var dirs []string
				perSocket := false
				app.Flag("collector.vma.stats-dir", "Directory holding libvma's vmastat.<pid> files (VMA_STATS_SHMEM_DIR); repeat for several.").Default("/tmp").StringsVar(&dirs)
				app.Flag("collector.vma.per-socket", "Also export per-socket VMA series (labels fd, protocol, local, remote); sockets churn, so this is off by default.").BoolVar(&perSocket)
				return func(env sources, f collector.NameFilter, log *zap.Logger) (collector.Collector, error) {
					cfg := vma.Config{Dirs: dirs, ProcPath: env.procfs, PerSocket: perSocket, Filter: f}
					if env.demo != nil {
						cfg.Dirs = []string{env.demo.VMADir()}
						cfg.Liveness = env.demo.VMALiveness()
					}
					return vma.New(cfg, log), nil
				}
			},
		},
		{
			name:            "ethtool",
			help:            "driver information, link settings and driver statistics (ethtool -i, ethtool, ethtool -S) with queue, priority and lane numbers as labels.",
			defaultInterval: "5s",
			defaultTimeout:  "4s",
			extraFlags: func(app *kingpin.Application, _ *collectorFlags) func(sources, collector.NameFilter, *zap.Logger) (collector.Collector, error) {
				var include, exclude, perQueue, netns string
				app.Flag("collector.ethtool.stat-include", "Regular expression (anchored) of the driver statistic names, as ethtool -S prints them, the ethtool collector exports; empty means all.").StringVar(&include)
				app.Flag("collector.ethtool.stat-exclude", "Regular expression (anchored) of the driver statistic names the ethtool collector never exports.").StringVar(&exclude)
				app.Flag("collector.ethtool.per-queue", "What the ethtool collector does with per-queue statistics: keep (a series per queue, label queue), sum (one series per interface, monotonic when queues go away) or drop.").Default("keep").EnumVar(&perQueue, "keep", "sum", "drop")
				app.Flag("collector.ethtool.netns", "Network namespace file (e.g. /run/netns/NAME or /proc/PID/ns/net) whose interfaces the ethtool collector reads; empty means the exporter's own.").StringVar(&netns)
				return func(env sources, f collector.NameFilter, log *zap.Logger) (collector.Collector, error) {
					mode, err := ethtool.ParseQueueMode(perQueue)
					if err != nil {
						return nil, err
					}
					stats, err := collector.NewNameFilter("collector.ethtool.stat", include, exclude)
					if err != nil {
						return nil, err
					}
					var src ethtool.Source
					if env.demo != nil {
						src = env.demo.EthtoolSource()
					} else {
						s, err := ethtoolioctl.New(netns)
						if err != nil {
							return nil, err
						}
						src = s
					}
					return ethtool.New(ethtool.Config{
						Source: src, Filter: f, StatFilter: stats, QueueMode: mode,
					}, log)
				}
			},
		},
		{
			name:            "kmsg",
			help:            "driver error messages (mlx5_core, mlx5_ib, ena, PCIe) from the kernel log, /dev/kmsg; needs CAP_SYSLOG.",
			defaultInterval: "5s",
			defaultTimeout:  "4s",
			extraFlags: func(app *kingpin.Application, _ *collectorFlags) func(sources, collector.NameFilter, *zap.Logger) (collector.Collector, error) {
				path := app.Flag("collector.kmsg.path", "The kernel log device.").Default("/dev/kmsg").String()
				rulesFile := app.Flag("collector.kmsg.rules-file", "YAML file of extra kernel log rules, tried before the built-in ones (see docs/metrics.md).").String()
				replay := app.Flag("collector.kmsg.replay", "Count the records still in the kernel log buffer at start (boot-time errors, errors before a restart); --no-collector.kmsg.replay counts only new records.").Default("true").Bool()
				return func(env sources, f collector.NameFilter, log *zap.Logger) (collector.Collector, error) {
					rules, err := logrules.Load(*rulesFile, logrules.KernelRules())
					if err != nil {
						return nil, fmt.Errorf("--collector.kmsg.rules-file: %w", err)
					}
					cfg := kmsg.Config{Open: kmsg.OpenDevKmsg(*path), Rules: rules, Replay: *replay, Filter: f}
					if env.demo != nil {
						cfg.Open = func() (kmsg.Device, error) { return env.demo.OpenKmsg() }
						cfg.BootTime = env.demo.BootTime()
					}
					return kmsg.New(cfg, log), nil
				}
			},
		},
		{
			name:            "applog",
			help:            "error messages in application log files such as VMA_LOG_FILE, followed through rotation.",
			defaultInterval: "5s",
			defaultTimeout:  "4s",
			extraFlags: func(app *kingpin.Application, _ *collectorFlags) func(sources, collector.NameFilter, *zap.Logger) (collector.Collector, error) {
				files := app.Flag("collector.applog.files", "Glob of application log files to follow, e.g. /var/log/vma/*.log; repeatable. The device filters apply to the file paths.").Strings()
				rulesFile := app.Flag("collector.applog.rules-file", "YAML file of extra application log rules, tried before the built-in VMA ones.").String()
				fromStart := app.Flag("collector.applog.from-start", "Also count the lines already in the files at start; by default only lines written after the start (and whole files that appear later) are counted.").Bool()
				return func(env sources, f collector.NameFilter, log *zap.Logger) (collector.Collector, error) {
					rules, err := logrules.Load(*rulesFile, logrules.VMARules())
					if err != nil {
						return nil, fmt.Errorf("--collector.applog.rules-file: %w", err)
					}
					cfg := applog.Config{Globs: *files, Rules: rules, FromStart: *fromStart, Filter: f}
					if env.demo != nil {
						// The demo log is written from the demo host's start.
						cfg.Globs, cfg.FromStart, cfg.TrimPrefix = []string{env.demo.VMALogGlob()}, true, env.demo.Dir()
					}
					return applog.New(cfg, log)
				}
			},
		},
		{
			name:            "devlink",
			help:            "devlink health reporters (mlx5 fw, fw_fatal, vnic, tx, rx), device info and health events, with evidence capture.",
			defaultInterval: "10s",
			defaultTimeout:  "8s",
			extraFlags: func(app *kingpin.Application, cf *collectorFlags) func(sources, collector.NameFilter, *zap.Logger) (collector.Collector, error) {
				p := "collector." + cf.spec.name
				var capture devlinkhealth.CaptureConfig
				app.Flag(p+".capture-dir", "Directory to write evidence to when a devlink health reporter goes to error: reporter attributes, diagnose and dump as one JSON file. Off when empty.").StringVar(&capture.Dir)
				app.Flag(p+".capture-max-files", "Most evidence files kept in --"+p+".capture-dir; the oldest are removed first.").Default("100").IntVar(&capture.MaxFiles)
				app.Flag(p+".capture-max-bytes", "Most bytes of evidence kept in --"+p+".capture-dir; the oldest files are removed first, the newest is always kept.").Default("67108864").Int64Var(&capture.MaxBytes)
				return func(env sources, f collector.NameFilter, log *zap.Logger) (collector.Collector, error) {
					if capture.Dir != "" {
						// Fail at start, not at the first error worth capturing.
						if err := os.MkdirAll(capture.Dir, 0o750); err != nil {
							return nil, fmt.Errorf("--%s.capture-dir: %w", p, err)
						}
					}
					cfg := devlinkhealth.Config{Filter: f, Capture: capture, Open: devlinkhealth.Open}
					if env.demo != nil {
						dl := env.demo.Devlink()
						cfg.Open = func() (devlinkhealth.Source, error) { return dl, nil }
					}
					return devlinkhealth.New(cfg, log), nil
				}
			},
		},
	}
}
