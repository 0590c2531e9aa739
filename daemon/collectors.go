package daemon

import (
	"fmt"

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
	"github.com/nic-exporter/nic_exporter/collector/topology"
	"github.com/nic-exporter/nic_exporter/collector/vma"
)

// collectorSpec is one collector of the daemon: the spec of its common
// flags, which its package gives, and the glue between its own flags, the
// Sources and its constructor.
type collectorSpec struct {
	collector.Spec
	// register declares the collector's own flags on app, after its
	// common ones, through its package's RegisterFlags, and returns what
	// the daemon does with them.
	register func(app *kingpin.Application) collectorParts
}

// collectorParts is what the daemon does with one collector's own flags.
// Only build is required.
type collectorParts struct {
	// check refuses values of the collector's own flags that parse but
	// cannot work.
	check func() error
	// checkPaths refuses paths given to the collector's own flags that
	// cannot be what their flag says; it runs on a host, for an enabled
	// collector.
	checkPaths func() error
	// host sets the parts of this host's Sources that the collector's
	// own flags name.
	host func(src *Sources)
	// build makes the collector from its device filter and the sources
	// it reads, with the settings of its own flags.
	build func(src *Sources, filter collector.NameFilter, log *zap.Logger) (collector.Collector, error)
}

// collectorFlags are the parsed flags of one collector.
type collectorFlags struct {
	common *collector.CommonFlags
	collectorParts
}

// registerAll declares the collector's flags on app: the common ones, then
// its own.
func (s collectorSpec) registerAll(app *kingpin.Application) *collectorFlags {
	cf := &collectorFlags{common: collector.RegisterCommonFlags(app, s.Spec)}
	cf.collectorParts = s.register(app)
	return cf
}

// newCollector builds the collector on src with its device filter.
func (cf *collectorFlags) newCollector(src *Sources, log *zap.Logger) (collector.Collector, error) {
	f, err := cf.common.Filter()
	if err != nil {
		return nil, err
	}
	return cf.build(src, f, log)
}

// collectorSpecs lists every collector, in the order their series appear
// and their flags are listed.
func collectorSpecs() []collectorSpec {
	return []collectorSpec{
		{
			Spec: netdev.Spec(),
			register: func(app *kingpin.Application) collectorParts {
				f := netdev.RegisterFlags(app)
				return collectorParts{
					host: func(src *Sources) {
						src.NetdevLinks, src.NetdevForeign = f.Links, f.Foreign()
					},
					build: func(src *Sources, filter collector.NameFilter, log *zap.Logger) (collector.Collector, error) {
						c := netdev.Config{SysfsPath: src.SysfsPath, Filter: filter, ForeignNamespace: src.NetdevForeign}
						if src.NetdevLinks != nil { // nil: sysfs at SysfsPath
							var err error
							if c.Links, err = src.NetdevLinks(); err != nil {
								return nil, fmt.Errorf("opening the netdev interface list: %w", err)
							}
						}
						return netdev.New(c, log), nil
					},
				}
			},
		},
		{
			Spec: infiniband.Spec(),
			register: func(*kingpin.Application) collectorParts {
				return collectorParts{
					build: func(src *Sources, filter collector.NameFilter, log *zap.Logger) (collector.Collector, error) {
						return infiniband.New(infiniband.Config{SysfsPath: src.SysfsPath, Filter: filter}, log), nil
					},
				}
			},
		},
		{
			Spec: vma.Spec(),
			register: func(app *kingpin.Application) collectorParts {
				f := vma.RegisterFlags(app)
				return collectorParts{
					checkPaths: f.CheckPaths,
					host:       func(src *Sources) { src.VMADirs = f.Dirs },
					build: func(src *Sources, filter collector.NameFilter, log *zap.Logger) (collector.Collector, error) {
						c, err := f.Config(vma.Config{Dirs: src.VMADirs, ProcPath: src.ProcPath, Liveness: src.VMALiveness, Filter: filter})
						if err != nil {
							return nil, err
						}
						return vma.New(c, log), nil
					},
				}
			},
		},
		{
			Spec: vma.XLIOSpec(),
			register: func(app *kingpin.Application) collectorParts {
				f := vma.RegisterXLIOFlags(app)
				return collectorParts{
					checkPaths: f.CheckPaths,
					host:       func(src *Sources) { src.XLIODirs = f.Dirs },
					build: func(src *Sources, filter collector.NameFilter, log *zap.Logger) (collector.Collector, error) {
						c, err := f.Config(vma.XLIOConfig{Dirs: src.XLIODirs, ProcPath: src.ProcPath, Liveness: src.XLIOLiveness, Filter: filter})
						if err != nil {
							return nil, err
						}
						return vma.NewXLIO(c, log), nil
					},
				}
			},
		},
		{
			Spec: ethtool.Spec(),
			register: func(app *kingpin.Application) collectorParts {
				f := ethtool.RegisterFlags(app)
				return collectorParts{
					host: func(src *Sources) { src.Ethtool = f.Source },
					build: func(src *Sources, filter collector.NameFilter, log *zap.Logger) (collector.Collector, error) {
						c, err := f.Config(ethtool.Config{Filter: filter})
						if err != nil {
							return nil, err
						}
						if c.Source, err = src.Ethtool(); err != nil {
							return nil, err
						}
						return ethtool.New(c, log)
					},
				}
			},
		},
		{
			Spec: kmsg.Spec(),
			register: func(app *kingpin.Application) collectorParts {
				f := kmsg.RegisterFlags(app)
				return collectorParts{
					checkPaths: f.CheckPaths,
					host:       func(src *Sources) { src.Kmsg = f.Opener() },
					build: func(src *Sources, filter collector.NameFilter, log *zap.Logger) (collector.Collector, error) {
						c, err := f.Config(kmsg.Config{Open: src.Kmsg, BootTime: src.KmsgBootTime, Devices: src.KmsgDevices,
							Filter: filter, BootID: src.KmsgBootID})
						if err != nil {
							return nil, err
						}
						return kmsg.New(c, log), nil
					},
				}
			},
		},
		{
			Spec: applog.Spec(),
			register: func(app *kingpin.Application) collectorParts {
				f := applog.RegisterFlags(app)
				return collectorParts{
					checkPaths: f.CheckPaths,
					host:       func(src *Sources) { src.AppLogGlobs, src.AppLogFromStart = f.Files, f.FromStart },
					build: func(src *Sources, filter collector.NameFilter, log *zap.Logger) (collector.Collector, error) {
						c, err := f.Config(applog.Config{Globs: src.AppLogGlobs, FromStart: src.AppLogFromStart,
							TrimPrefix: src.AppLogTrimPrefix, Filter: filter})
						if err != nil {
							return nil, err
						}
						return applog.New(c, log)
					},
				}
			},
		},
		{
			Spec: devlinkhealth.Spec(),
			register: func(app *kingpin.Application) collectorParts {
				f := devlinkhealth.RegisterFlags(app)
				return collectorParts{
					check: f.Check,
					build: func(src *Sources, filter collector.NameFilter, log *zap.Logger) (collector.Collector, error) {
						c, err := f.Config(devlinkhealth.Config{Open: src.Devlink, Filter: filter})
						if err != nil {
							return nil, err
						}
						return devlinkhealth.New(c, log), nil
					},
				}
			},
		},
		{
			Spec: phy.Spec(),
			register: func(app *kingpin.Application) collectorParts {
				f := phy.RegisterFlags(app)
				return collectorParts{
					check: f.Check,
					build: func(src *Sources, filter collector.NameFilter, log *zap.Logger) (collector.Collector, error) {
						c, err := f.Config(phy.Config{Filter: filter, Now: src.PhyNow})
						if err != nil {
							return nil, err
						}
						if c.Source, err = src.Phy(log); err != nil {
							return nil, err
						}
						return phy.New(c, log)
					},
				}
			},
		},
		{
			Spec: topology.Spec(),
			register: func(app *kingpin.Application) collectorParts {
				f := topology.RegisterFlags(app)
				return collectorParts{
					check: f.Check,
					build: func(src *Sources, filter collector.NameFilter, log *zap.Logger) (collector.Collector, error) {
						c, err := f.Config(topology.Config{SysfsPath: src.SysfsPath, GPUInfoDir: src.GPUInfoDir, Filter: filter})
						if err != nil {
							return nil, err
						}
						return topology.New(c, log), nil
					},
				}
			},
		},
		{
			Spec: fabric.Spec(),
			register: func(app *kingpin.Application) collectorParts {
				f := fabric.RegisterFlags(app)
				return collectorParts{
					check: f.Check,
					host:  func(src *Sources) { src.Fabric = f.Opener(src.SysfsPath) },
					build: func(src *Sources, filter collector.NameFilter, log *zap.Logger) (collector.Collector, error) {
						c, err := f.Config(fabric.Config{Open: src.Fabric, Filter: filter})
						if err != nil {
							return nil, err
						}
						return fabric.New(c, log), nil
					},
				}
			},
		},
	}
}
