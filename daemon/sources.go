package daemon

import (
	"fmt"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector/devlinkhealth"
	"github.com/nic-exporter/nic_exporter/collector/ethtool"
	"github.com/nic-exporter/nic_exporter/collector/fabric"
	"github.com/nic-exporter/nic_exporter/collector/kmsg"
	"github.com/nic-exporter/nic_exporter/collector/netdev"
	"github.com/nic-exporter/nic_exporter/collector/phy"
	"github.com/nic-exporter/nic_exporter/demo"
	"github.com/nic-exporter/nic_exporter/vmastats"
)

// Sources is where the collectors read from: this host's kernel
// interfaces and files, or the demo host's replacements for them. main
// builds one bundle and each collector gets its part through its
// constructor's Config, so no collector knows which one it reads.
type Sources struct {
	// SysfsPath is the sysfs mount point the netdev and infiniband
	// collectors read.
	SysfsPath string
	// NetdevLinks opens the netdev collector's interface list: an
	// rtnetlink dump on a host, the demo's sysfs tree on the demo host.
	NetdevLinks func() (netdev.LinkSource, error)
	// NetdevForeign says NetdevLinks reads another network namespace
	// than the one SysfsPath shows (--collector.netdev.netns).
	NetdevForeign bool
	// ProcPath is the procfs mount point.
	ProcPath string
	// GPUInfoDir is the NVIDIA driver's directory of GPU information
	// files (/proc/driver/nvidia/gpus), which the topology collector reads
	// for each GPU's UUID.
	GPUInfoDir string

	// VMADirs are the directories searched for libvma's vmastat.<pid>
	// files. VMALiveness verifies their writers; nil means procfs at
	// ProcPath.
	VMADirs     []string
	VMALiveness vmastats.Liveness

	// XLIODirs are the directories searched for libxlio's xliostat.<pid>
	// files. XLIOLiveness verifies their writers; nil means procfs at
	// ProcPath.
	XLIODirs     []string
	XLIOLiveness vmastats.Liveness

	// Ethtool opens the ethtool collector's source.
	Ethtool func() (ethtool.Source, error)

	// Kmsg opens the kernel log. KmsgBootTime is the wall-clock time of
	// its timestamp zero; zero means now minus CLOCK_MONOTONIC.
	Kmsg         kmsg.Opener
	KmsgBootTime time.Time
	// KmsgDevices looks up the PCI class of the functions and the PCI
	// function of the RDMA devices the kernel log names.
	KmsgDevices kmsg.Devices
	// KmsgBootID returns the boot id a kernel log state file is tied to.
	KmsgBootID func() (string, error)

	// AppLogGlobs select the application log files. AppLogFromStart also
	// counts the lines already in them at start; AppLogTrimPrefix is
	// removed from the paths used as file labels.
	AppLogGlobs      []string
	AppLogFromStart  bool
	AppLogTrimPrefix string

	// Devlink opens the devlink health collector's source; it is called
	// on every poll until it succeeds.
	Devlink func() (devlinkhealth.Source, error)

	// Phy opens the phy collector's source. PhyNow is its clock, which
	// stamps module reads; nil means time.Now.
	Phy    func(log *zap.Logger) (phy.Source, error)
	PhyNow func() time.Time

	// Fabric opens the fabric collector's endpoints: over the transport
	// --collector.fabric.transport names on a host, the demo host's far
	// end on the demo.
	Fabric fabric.Opener
}

// hostSources returns this host's sources, as the flags name them: the
// daemon's paths, then what each collector's own flags name.
func hostSources(o *Options) *Sources {
	src := &Sources{
		SysfsPath:   o.sysfs,
		ProcPath:    o.procfs,
		GPUInfoDir:  filepath.Join(o.procfs, "driver", "nvidia", "gpus"),
		KmsgDevices: kmsg.SysfsDevices(o.sysfs),
		KmsgBootID:  kmsg.ReadBootID(o.procfs),
		Devlink:     devlinkhealth.Open,
		Phy: func(log *zap.Logger) (phy.Source, error) {
			return phy.NewHostSource(phy.HostConfig{SysfsPath: o.sysfs}, log), nil
		},
	}
	for _, cf := range o.collectors {
		if cf.host != nil {
			cf.host(src)
		}
	}
	return src
}

// DemoSources returns the demo host's replacements for every source.
func DemoSources(h *demo.Host, o *Options) *Sources {
	dl := h.Devlink()
	return &Sources{
		SysfsPath:    h.SysfsPath(), // includes /sys/class/infiniband
		NetdevLinks:  func() (netdev.LinkSource, error) { return netdev.NewSysfsLinks(h.SysfsPath()), nil },
		ProcPath:     o.procfs,
		GPUInfoDir:   h.GPUInfoDir(),
		VMADirs:      []string{h.VMADir()},
		VMALiveness:  h.VMALiveness(),
		XLIODirs:     []string{h.XLIODir()},
		XLIOLiveness: h.XLIOLiveness(),
		Ethtool:      func() (ethtool.Source, error) { return h.EthtoolSource(), nil },
		Kmsg:         func() (kmsg.Device, error) { return h.OpenKmsg() },
		KmsgDevices:  kmsg.SysfsDevices(h.SysfsPath()),
		// The demo kernel log counts from the demo host's own boot time.
		KmsgBootTime: h.BootTime(),
		// The demo kernel log is the same after a restart only with the
		// same demo boot time (--demo.start).
		KmsgBootID: func() (string, error) { return fmt.Sprintf("demo-%d", h.BootTime().UnixNano()), nil },
		// The demo log is written from the demo host's start.
		AppLogGlobs:      []string{h.VMALogGlob()},
		AppLogFromStart:  true,
		AppLogTrimPrefix: h.Dir(),
		Devlink:          func() (devlinkhealth.Source, error) { return dl, nil },
		Phy:              func(*zap.Logger) (phy.Source, error) { return h.PhySource(), nil },
		// Module reads are stamped with the demo clock, frozen or not.
		PhyNow: func() time.Time { return h.Start().Add(h.Elapsed()) },
		// The switch port at the far end of the demo's InfiniBand port.
		Fabric: func(*zap.Logger) ([]fabric.Endpoint, error) {
			return []fabric.Endpoint{{Device: "mlx5_0", Port: 1, Client: h.FabricPort()}}, nil
		},
	}
}
