package main

import (
	"time"

	"github.com/alecthomas/kingpin/v2"
	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/demo"
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
	extraFlags func(app *kingpin.Application, cf *collectorFlags) func(env sources, filter collector.DeviceFilter, log *zap.Logger) (collector.Collector, error)
}

// collectorFlags are the parsed flags of one collector.
type collectorFlags struct {
	spec     collectorSpec
	enabled  bool
	interval time.Duration
	timeout  time.Duration
	include  string
	exclude  string
	builder  func(env sources, filter collector.DeviceFilter, log *zap.Logger) (collector.Collector, error)
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
	f, err := collector.NewDeviceFilter("collector."+cf.spec.name, cf.include, cf.exclude)
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
			extraFlags: func(*kingpin.Application, *collectorFlags) func(sources, collector.DeviceFilter, *zap.Logger) (collector.Collector, error) {
				return func(env sources, f collector.DeviceFilter, log *zap.Logger) (collector.Collector, error) {
					return collector.NewNetdev(collector.NetdevConfig{SysfsPath: env.sysfs, Filter: f}, log), nil
				}
			},
		},
		{
			name:            "infiniband",
			help:            "RDMA device and port state, rate, IBA port counters and driver hw_counters from /sys/class/infiniband.",
			defaultInterval: "5s",
			defaultTimeout:  "4s",
			extraFlags: func(*kingpin.Application, *collectorFlags) func(sources, collector.DeviceFilter, *zap.Logger) (collector.Collector, error) {
				// The demo host's tree includes /sys/class/infiniband, so
				// env.sysfs serves both the real and the demo source.
				return func(env sources, f collector.DeviceFilter, log *zap.Logger) (collector.Collector, error) {
					return collector.NewInfiniBand(collector.InfiniBandConfig{SysfsPath: env.sysfs, Filter: f}, log), nil
				}
			},
		},
	}
}
