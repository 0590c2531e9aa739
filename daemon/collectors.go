package daemon

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
	"github.com/nic-exporter/nic_exporter/collector/fabric"
	"github.com/nic-exporter/nic_exporter/collector/infiniband"
	"github.com/nic-exporter/nic_exporter/collector/kmsg"
	"github.com/nic-exporter/nic_exporter/collector/netdev"
	"github.com/nic-exporter/nic_exporter/collector/phy"
	"github.com/nic-exporter/nic_exporter/collector/vma"
	"github.com/nic-exporter/nic_exporter/internal/logrules"
	"github.com/nic-exporter/nic_exporter/internal/mad"
)

// collectorSpec describes one collector: its flags and how to build it.
type collectorSpec struct {
	name            string
	help            string
	defaultInterval string
	defaultTimeout  string
	// flags registers the collector's own flags, if it has any, into x.
	flags func(app *kingpin.Application, x *extraFlags)
	// off makes the collector opt-in: disabled unless --collector.<name>
	// is given.
	off bool
	// build makes the collector from its flags, its device filter and the
	// sources it reads.
	build func(x *extraFlags, src *Sources, filter collector.NameFilter, log *zap.Logger) (collector.Collector, error)
}

// collectorFlags are the parsed flags every collector has.
type collectorFlags struct {
	spec     collectorSpec
	enabled  bool
	interval time.Duration
	timeout  time.Duration
	include  string
	exclude  string
}

// extraFlags are the parsed flags particular to single collectors.
type extraFlags struct {
	vmaDirs      []string
	vmaDirsSet   bool
	vmaPerSocket bool

	xlioDirs      []string
	xlioDirsSet   bool
	xlioPerSocket bool
	xlioHandshake bool

	ethtoolStatInclude string
	ethtoolStatExclude string
	ethtoolPerQueue    string
	ethtoolNetns       string

	netdevNetns string

	kmsgPath      string
	kmsgPathSet   bool
	kmsgRulesFile string
	kmsgReplay    bool
	kmsgStateFile string

	applogFiles     []string
	applogRulesFile string
	applogFromStart bool

	devlinkCapture devlinkhealth.CaptureConfig

	phyModuleInterval time.Duration

	fabricTransport        string
	fabricMADTimeout       time.Duration
	fabricConcurrency      int
	fabricScope            string
	fabricSweepConcurrency int
	fabricRediscover       time.Duration
	fabricResetSaturated   bool
	fabricResetInterval    time.Duration
}

func (s collectorSpec) addFlags(app *kingpin.Application, x *extraFlags) *collectorFlags {
	cf := &collectorFlags{spec: s}
	p := "collector." + s.name
	if s.off {
		app.Flag(p, "Enable the "+s.name+" collector (off by default): "+s.help).Default("false").BoolVar(&cf.enabled)
	} else {
		app.Flag(p, "Enable the "+s.name+" collector: "+s.help+" Disable with --no-"+p+".").Default("true").BoolVar(&cf.enabled)
	}
	app.Flag(p+".interval", "How often the "+s.name+" collector polls its sources.").Default(s.defaultInterval).DurationVar(&cf.interval)
	app.Flag(p+".timeout", "How long one poll of the "+s.name+" collector may take before it counts as failed.").Default(s.defaultTimeout).DurationVar(&cf.timeout)
	app.Flag(p+".device-include", "Regular expression (anchored) of the devices the "+s.name+" collector reads; empty means all.").StringVar(&cf.include)
	app.Flag(p+".device-exclude", "Regular expression (anchored) of the devices the "+s.name+" collector never reads.").StringVar(&cf.exclude)
	if s.flags != nil {
		s.flags(app, x)
	}
	return cf
}

func (cf *collectorFlags) build(x *extraFlags, src *Sources, log *zap.Logger) (collector.Collector, error) {
	f, err := collector.NewNameFilter("collector."+cf.spec.name+".device", cf.include, cf.exclude)
	if err != nil {
		return nil, err
	}
	return cf.spec.build(x, src, f, log)
}

// collectorSpecs lists every collector, in the order their series appear.
func collectorSpecs() []collectorSpec {
	return []collectorSpec{
		{
			name:            "netdev",
			help:            "interface state, statistics and PCIe link from sysfs.",
			defaultInterval: "5s",
			defaultTimeout:  "4s",
			flags: func(app *kingpin.Application, x *extraFlags) {
				app.Flag("collector.netdev.netns", "Network namespace file (e.g. /run/netns/NAME or /proc/PID/ns/net) whose interfaces the netdev collector reads; empty means the exporter's own. Another namespace's interfaces have no sysfs directory here: their device (driver, PCIe) is found through rtnetlink, and their speed is left out.").StringVar(&x.netdevNetns)
			},
			build: buildNetdev,
		},
		{
			name:            "infiniband",
			help:            "RDMA device and port state, rate, IBA port counters and driver hw_counters from /sys/class/infiniband.",
			defaultInterval: "5s",
			defaultTimeout:  "4s",
			build:           buildInfiniBand,
		},
		{
			name: "vma",
			help: "per-process NVIDIA VMA (libvma) statistics from vmastat.<pid> files; device filters match the process name (comm).",
			// libvma copies counters into the file for about 10 s after a
			// reader's handshake, so polls must come more often than that.
			defaultInterval: "5s",
			defaultTimeout:  "4s",
			flags: func(app *kingpin.Application, x *extraFlags) {
				app.Flag("collector.vma.stats-dir", "Directory holding libvma's vmastat.<pid> files (VMA_STATS_SHMEM_DIR); repeat for several.").Default("/tmp").IsSetByUser(&x.vmaDirsSet).StringsVar(&x.vmaDirs)
				app.Flag("collector.vma.per-socket", "Also serve the per-socket VMA series (nic_vma_fd_*, labels fd, protocol, local, remote) in /metrics; they are always at /metrics/detail. Sockets churn, so this is off by default.").BoolVar(&x.vmaPerSocket)
			},
			build: buildVMA,
		},
		{
			name: "xlio",
			help: "per-process NVIDIA XLIO (libxlio, VMA's successor) statistics from xliostat.<pid> files; device filters match the process name (comm).",
			// Like libvma, libxlio copies counters for 10 s after a
			// reader's handshake.
			defaultInterval: "5s",
			defaultTimeout:  "4s",
			flags: func(app *kingpin.Application, x *extraFlags) {
				app.Flag("collector.xlio.stats-dir", "Directory holding libxlio's xliostat.<pid> files (XLIO_STATS_SHMEM_DIR); repeat for several.").Default("/tmp/xlio").IsSetByUser(&x.xlioDirsSet).StringsVar(&x.xlioDirs)
				app.Flag("collector.xlio.per-socket", "Also serve the per-socket XLIO series (nic_xlio_fd_*, labels fd, protocol, local, remote) in /metrics; they are always at /metrics/detail. Sockets churn, so this is off by default.").BoolVar(&x.xlioPerSocket)
				app.Flag("collector.xlio.handshake", "Increment reader_counter in each application's xliostat.<pid> file (4 bytes, the one write xlio_stats also makes) so libxlio copies fresh counters into it; without it the counters stay as the last reader left them. It needs write access to the file (its owner or root). Disable with --no-collector.xlio.handshake.").Default("true").BoolVar(&x.xlioHandshake)
			},
			build: buildXLIO,
		},
		{
			name:            "ethtool",
			help:            "driver information, link settings and driver statistics (ethtool -i, ethtool, ethtool -S) with queue, priority and lane numbers as labels.",
			defaultInterval: "5s",
			defaultTimeout:  "4s",
			flags: func(app *kingpin.Application, x *extraFlags) {
				app.Flag("collector.ethtool.stat-include", "Regular expression (anchored) of the driver statistic names, as ethtool -S prints them, the ethtool collector exports; empty means all.").StringVar(&x.ethtoolStatInclude)
				app.Flag("collector.ethtool.stat-exclude", "Regular expression (anchored) of the driver statistic names the ethtool collector never exports.").StringVar(&x.ethtoolStatExclude)
				app.Flag("collector.ethtool.per-queue", "What the ethtool collector does with per-queue statistics: sum (one series per interface in /metrics, monotonic when queues go away, and one per queue as nic_ethtool_per_queue_* in /metrics/detail), keep (a series per queue, label queue, in /metrics) or drop.").Default("sum").EnumVar(&x.ethtoolPerQueue, "keep", "sum", "drop")
				app.Flag("collector.ethtool.netns", "Network namespace file (e.g. /run/netns/NAME or /proc/PID/ns/net) whose interfaces the ethtool collector reads; empty means the exporter's own.").StringVar(&x.ethtoolNetns)
			},
			build: buildEthtool,
		},
		{
			name:            "kmsg",
			help:            "driver error messages (mlx5_core, mlx5_ib, ena, PCIe) from the kernel log, /dev/kmsg; needs CAP_SYSLOG.",
			defaultInterval: "5s",
			defaultTimeout:  "4s",
			flags: func(app *kingpin.Application, x *extraFlags) {
				app.Flag("collector.kmsg.path", "The kernel log device; when given, it must be the kernel log device (character device 1:11), and the device opened is checked again.").Default("/dev/kmsg").IsSetByUser(&x.kmsgPathSet).StringVar(&x.kmsgPath)
				app.Flag("collector.kmsg.rules-file", "YAML file of extra kernel log rules, tried before the built-in ones (see docs/metrics.md).").StringVar(&x.kmsgRulesFile)
				app.Flag("collector.kmsg.replay", "Count the records still in the kernel log buffer at start (boot-time errors, errors before a restart); --no-collector.kmsg.replay counts only new records.").Default("true").BoolVar(&x.kmsgReplay)
				app.Flag("collector.kmsg.state-file", "File to save the kernel log counters to at each poll and restore them from at start on the same boot, so they continue even if the kernel buffer rotated in between; its directory must exist and be writable. Empty: off.").StringVar(&x.kmsgStateFile)
			},
			build: buildKmsg,
		},
		{
			name:            "applog",
			help:            "error messages in application log files such as VMA_LOG_FILE, followed through rotation.",
			defaultInterval: "5s",
			defaultTimeout:  "4s",
			flags: func(app *kingpin.Application, x *extraFlags) {
				app.Flag("collector.applog.files", "Glob of application log files to follow, e.g. /var/log/vma/*.log; repeatable. The device filters apply to the file paths.").StringsVar(&x.applogFiles)
				app.Flag("collector.applog.rules-file", "YAML file of extra application log rules, tried before the built-in VMA ones.").StringVar(&x.applogRulesFile)
				app.Flag("collector.applog.from-start", "Also count the lines already in the files at start; by default only lines written after the start (and whole files that appear later) are counted.").BoolVar(&x.applogFromStart)
			},
			build: buildApplog,
		},
		{
			name:            "devlink",
			help:            "devlink health reporters (mlx5 fw, fw_fatal, vnic, tx, rx), device info and health events, with evidence capture.",
			defaultInterval: "10s",
			defaultTimeout:  "8s",
			flags: func(app *kingpin.Application, x *extraFlags) {
				const p = "collector.devlink"
				app.Flag(p+".capture-dir", "Directory to write evidence to when a devlink health reporter goes to error: reporter attributes, diagnose and dump as one JSON file. Off when empty.").StringVar(&x.devlinkCapture.Dir)
				app.Flag(p+".capture-max-files", "Most evidence files kept in --"+p+".capture-dir; the oldest are removed first.").Default("100").IntVar(&x.devlinkCapture.MaxFiles)
				app.Flag(p+".capture-max-bytes", "Most bytes of evidence kept in --"+p+".capture-dir; the oldest files are removed first, the newest is always kept.").Default("67108864").Int64Var(&x.devlinkCapture.MaxBytes)
			},
			build: buildDevlink,
		},
		{
			name:            "phy",
			help:            "physical layer over ethtool netlink: pluggable module (optic) diagnostics and thresholds, link down reason and count, FEC mode and counters, IEEE 802.3 standard counters.",
			defaultInterval: "5s",
			defaultTimeout:  "4s",
			flags: func(app *kingpin.Application, x *extraFlags) {
				app.Flag("collector.phy.module-interval", "How often the phy collector reads pluggable module memory (an I2C transaction, ~0.1 s on some NICs); the last values are exported in between.").Default("60s").DurationVar(&x.phyModuleInterval)
			},
			build: buildPhy,
		},
		topologySpec(),
		{
			name:            "fabric",
			help:            "the InfiniBand switch port (or HCA) at the far end of each local HCA port, read over management datagrams: its identity, state, and error, congestion and traffic counters, labelled with both ends of the cable. Needs read-write access to /dev/infiniband/umad*.",
			defaultInterval: "30s",
			defaultTimeout:  "10s",
			off:             true,
			flags: func(app *kingpin.Application, x *extraFlags) {
				const p = "collector.fabric"
				app.Flag(p+".transport", "How the fabric collector sends management datagrams: umad (the kernel's /dev/infiniband/umadN, one per local port) or ibsim (a simulated fabric: ibsim's socket named by IBSIM_SOCKNAME, attached at the node SIM_HOST names, as ibsim's own client library reads them).").Default("umad").EnumVar(&x.fabricTransport, "umad", "ibsim")
				app.Flag(p+".mad-timeout", "How long the fabric collector waits for each management datagram's answer; with umad the kernel resends it once halfway. A query that times out is a counted source error and the poll goes on.").Default("500ms").DurationVar(&x.fabricMADTimeout)
				app.Flag(p+".concurrency", "How many local ports the fabric collector queries at once.").Default("4").IntVar(&x.fabricConcurrency)
				app.Flag(p+".scope", "What the fabric collector reads: far-end (the port at the other end of each local port's cable; every node can run it) or switches (every port of every switch reachable from the first selected local port, by directed-route discovery: for one or a few designated hosts; raise --"+p+".timeout for large fabrics).").Default("far-end").EnumVar(&x.fabricScope, "far-end", "switches")
				app.Flag(p+".sweep-concurrency", "With --"+p+".scope=switches, how many management datagrams are in flight at once.").Default("16").IntVar(&x.fabricSweepConcurrency)
				app.Flag(p+".rediscover-interval", "With --"+p+".scope=switches, how long a discovery of the fabric's switches is used before the fabric is walked again; each poll reads the ports found up at the last discovery.").Default("10m").DurationVar(&x.fabricRediscover)
				app.Flag(p+".reset-saturated", "Reset (a PortCounters Set, as perfquery -R sends) the fixed-width counters of a far-end or swept switch port that the fabric collector reads stuck at their maximum, so that they count again. Off by default: every other reader of that port (the subnet manager's PerfMgr, UFM, other exporters) sees the reset too.").Default("false").BoolVar(&x.fabricResetSaturated)
				app.Flag(p+".reset-interval", "With --"+p+".reset-saturated, the least time between two resets of one port.").Default("1h").DurationVar(&x.fabricResetInterval)
			},
			build: buildFabric,
		},
	}
}

func buildFabric(x *extraFlags, src *Sources, f collector.NameFilter, log *zap.Logger) (collector.Collector, error) {
	var open fabric.Opener
	switch {
	case src.Fabric != nil:
		open = src.Fabric
	case x.fabricTransport == "ibsim":
		open = fabric.SimOpener(mad.SimConfigFromEnv(), x.fabricMADTimeout)
	default:
		open = fabric.UmadOpener(src.SysfsPath, fabric.UmadDir, x.fabricMADTimeout)
	}
	return fabric.New(fabric.Config{Open: open, Filter: f, MADTimeout: x.fabricMADTimeout, Concurrency: x.fabricConcurrency,
		Scope: x.fabricScope, SweepConcurrency: x.fabricSweepConcurrency, Rediscover: x.fabricRediscover,
		ResetSaturated: x.fabricResetSaturated, ResetInterval: x.fabricResetInterval}, log), nil
}

func buildPhy(x *extraFlags, src *Sources, f collector.NameFilter, log *zap.Logger) (collector.Collector, error) {
	s, err := src.Phy(log)
	if err != nil {
		return nil, err
	}
	return phy.New(phy.Config{Source: s, Filter: f, ModuleInterval: x.phyModuleInterval, Now: src.PhyNow}, log)
}

func buildNetdev(_ *extraFlags, src *Sources, f collector.NameFilter, log *zap.Logger) (collector.Collector, error) {
	var links netdev.LinkSource // nil: sysfs at SysfsPath
	if src.NetdevLinks != nil {
		var err error
		if links, err = src.NetdevLinks(); err != nil {
			return nil, fmt.Errorf("opening the netdev interface list: %w", err)
		}
	}
	return netdev.New(netdev.Config{SysfsPath: src.SysfsPath, Filter: f, Links: links, ForeignNamespace: src.NetdevForeign}, log), nil
}

func buildInfiniBand(_ *extraFlags, src *Sources, f collector.NameFilter, log *zap.Logger) (collector.Collector, error) {
	return infiniband.New(infiniband.Config{SysfsPath: src.SysfsPath, Filter: f}, log), nil
}

func buildVMA(x *extraFlags, src *Sources, f collector.NameFilter, log *zap.Logger) (collector.Collector, error) {
	return vma.New(vma.Config{
		Dirs: src.VMADirs, ProcPath: src.ProcPath, Liveness: src.VMALiveness,
		PerSocket: x.vmaPerSocket, Filter: f,
	}, log), nil
}

func buildXLIO(x *extraFlags, src *Sources, f collector.NameFilter, log *zap.Logger) (collector.Collector, error) {
	return vma.NewXLIO(vma.XLIOConfig{
		Dirs: src.XLIODirs, ProcPath: src.ProcPath, Liveness: src.XLIOLiveness,
		PerSocket: x.xlioPerSocket, NoHandshake: !x.xlioHandshake, Filter: f,
	}, log), nil
}

func buildEthtool(x *extraFlags, src *Sources, f collector.NameFilter, log *zap.Logger) (collector.Collector, error) {
	mode, err := ethtool.ParseQueueMode(x.ethtoolPerQueue)
	if err != nil {
		return nil, err
	}
	stats, err := collector.NewNameFilter("collector.ethtool.stat", x.ethtoolStatInclude, x.ethtoolStatExclude)
	if err != nil {
		return nil, err
	}
	s, err := src.Ethtool()
	if err != nil {
		return nil, err
	}
	return ethtool.New(ethtool.Config{Source: s, Filter: f, StatFilter: stats, QueueMode: mode}, log)
}

func buildKmsg(x *extraFlags, src *Sources, f collector.NameFilter, log *zap.Logger) (collector.Collector, error) {
	rules, err := logrules.Load(x.kmsgRulesFile, logrules.KernelRules())
	if err != nil {
		return nil, fmt.Errorf("--collector.kmsg.rules-file: %w", err)
	}
	return kmsg.New(kmsg.Config{
		Open: src.Kmsg, BootTime: src.KmsgBootTime, Devices: src.KmsgDevices,
		Rules: rules, Replay: x.kmsgReplay, Filter: f,
		StateFile: x.kmsgStateFile, BootID: src.KmsgBootID,
	}, log), nil
}

func buildApplog(x *extraFlags, src *Sources, f collector.NameFilter, log *zap.Logger) (collector.Collector, error) {
	rules, err := logrules.Load(x.applogRulesFile, logrules.VMARules())
	if err != nil {
		return nil, fmt.Errorf("--collector.applog.rules-file: %w", err)
	}
	return applog.New(applog.Config{
		Globs: src.AppLogGlobs, FromStart: src.AppLogFromStart, TrimPrefix: src.AppLogTrimPrefix,
		Rules: rules, Filter: f,
	}, log)
}

func buildDevlink(x *extraFlags, src *Sources, f collector.NameFilter, log *zap.Logger) (collector.Collector, error) {
	if x.devlinkCapture.Dir != "" {
		// Fail at start, not at the first error worth capturing.
		if err := os.MkdirAll(x.devlinkCapture.Dir, 0o750); err != nil {
			return nil, fmt.Errorf("--collector.devlink.capture-dir: %w", err)
		}
	}
	return devlinkhealth.New(devlinkhealth.Config{Open: src.Devlink, Filter: f, Capture: x.devlinkCapture}, log), nil
}
