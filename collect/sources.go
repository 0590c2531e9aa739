package collect

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/nic-exporter/nic_exporter/collector/phy"
	"github.com/nic-exporter/nic_exporter/demo"
	"github.com/nic-exporter/nic_exporter/devlink"
	"github.com/nic-exporter/nic_exporter/internal/ethtoolioctl"
	"github.com/nic-exporter/nic_exporter/internal/safefile"
	"github.com/nic-exporter/nic_exporter/vmastats"
	"github.com/nic-exporter/nic_exporter/xliostats"
)

// Ethtool is the ethtool ioctl source: ethtoolioctl.Source on a host,
// the demo's recorded dumps on the demo host (the ethtool collector's
// Source).
type Ethtool interface {
	Interfaces() ([]ethtoolioctl.Interface, error)
	DriverInfo(name string) (ethtoolioctl.DriverInfo, error)
	Link(name string) (ethtoolioctl.Link, error)
	StatNames(name string, n int) ([]string, error)
	Stats(name string, dst []uint64) error
}

// Devlink is the part of the devlink client collect uses (the devlink
// collector's Source has it too).
type Devlink interface {
	Devices(ctx context.Context) ([]devlink.Device, error)
	Info(ctx context.Context, h devlink.Handle) (devlink.Info, error)
	HealthReporters(ctx context.Context) ([]devlink.HealthReporter, error)
	Diagnose(ctx context.Context, id devlink.ReporterID) (devlink.Object, error)
	Close() error
}

// Kmsg is the kernel log device, read without blocking (the kmsg
// collector's Device).
type Kmsg interface {
	Read(p []byte) (int, error)
	Pending() (bool, error)
	Close() error
}

// Sources are where collect reads: this host (HostSources) or the demo
// host (DemoSources).
type Sources struct {
	// Host names the host in the manifest.
	Host string
	// SysfsPath is the sysfs mount point.
	SysfsPath string
	// Ethtool opens the ethtool source.
	Ethtool func() (Ethtool, error)
	// Devlink opens the devlink client.
	Devlink func() (Devlink, error)
	// Modules opens the pluggable module reader.
	Modules func() (ModuleReader, error)
	// Kmsg opens the kernel log at its oldest record.
	Kmsg func() (Kmsg, error)
	// Uptime returns the host's uptime; nil when unknown.
	Uptime func() (time.Duration, error)
	// Identity returns the files that identify the host (uname.txt,
	// os-release.txt) with their sources; nil collects none.
	Identity func() []IdentityFile
	// Commands, when set, runs external commands: lspci -vvv and
	// journalctl -k, whose sources have no native reader. The demo host
	// has no such tools of its own.
	Commands bool
	// Refresh, when set, runs before each sample (the demo host's
	// Update, so its counters advance between the samples).
	Refresh func() error
	// ProcPath is the procfs mount point, where the writers of the
	// statistics files are verified; empty means /proc.
	ProcPath string
	// VMADirs and XLIODirs are the directories of libvma's
	// vmastat.<pid> and libxlio's xliostat.<pid> files, as the vma and
	// xlio collectors' --collector.*.stats-dir; none copies none.
	VMADirs, XLIODirs []string
	// VMALiveness and XLIOLiveness verify the files' writers; nil means
	// procfs at ProcPath. The demo host's applications are simulated.
	VMALiveness, XLIOLiveness vmastats.Liveness
}

// IdentityFile is one file identifying the host, or why it could not be
// read.
type IdentityFile struct {
	Name, Source string
	Data         []byte
	Err          error
}

// HostSources returns this host's sources under the sysfs and procfs
// mount points given.
func HostSources(sysfsPath, procPath string) Sources {
	host, _ := os.Hostname()
	return Sources{
		Host:      host,
		SysfsPath: sysfsPath,
		Ethtool: func() (Ethtool, error) {
			s, err := ethtoolioctl.New("")
			if err != nil {
				return nil, err
			}
			return s, nil
		},
		Devlink: func() (Devlink, error) {
			c, err := devlink.New()
			if err != nil {
				return nil, err
			}
			return c, nil
		},
		Modules: func() (ModuleReader, error) {
			h := phy.NewHostSource(phy.HostConfig{SysfsPath: sysfsPath}, zap.NewNop())
			// The first interface list opens its ethtool netlink socket.
			if _, err := h.Interfaces(); err != nil {
				h.Close()
				return nil, err
			}
			return h, nil
		},
		Kmsg:     openDevKmsg,
		Uptime:   func() (time.Duration, error) { return readUptime(filepath.Join(procPath, "uptime")) },
		Identity: hostIdentity,
		Commands: true,
		ProcPath: procPath,
		VMADirs:  []string{DefaultVMADir},
		XLIODirs: []string{xliostats.DefaultDir},
	}
}

// DemoSources returns the demo host's sources, as the daemon's --demo
// wires them: its sysfs tree, recorded ethtool dumps, devlink and kernel
// log, with its clock advanced before each sample.
func DemoSources(h *demo.Host) Sources {
	dl := h.Devlink()
	return Sources{
		Host:      "demo",
		SysfsPath: h.SysfsPath(),
		Ethtool:   func() (Ethtool, error) { return h.EthtoolSource(), nil },
		Devlink:   func() (Devlink, error) { return dl, nil },
		Kmsg:      func() (Kmsg, error) { return h.OpenKmsg() },
		Modules: func() (ModuleReader, error) {
			m, ok := h.PhySource().(ModuleReader)
			if !ok {
				return nil, errors.New("the demo's phy source reads no modules")
			}
			return m, nil
		},
		Uptime: func() (time.Duration, error) {
			return h.Start().Add(h.Elapsed()).Sub(h.BootTime()), nil
		},
		Refresh:      h.Update,
		VMADirs:      []string{h.VMADir()},
		VMALiveness:  h.VMALiveness(),
		XLIODirs:     []string{h.XLIODir()},
		XLIOLiveness: h.XLIOLiveness(),
	}
}

// DefaultVMADir is libvma's default statistics directory
// (VMA_STATS_SHMEM_DIR), the vma collector's default.
const DefaultVMADir = "/tmp"

// readUptime reads /proc/uptime's first field.
func readUptime(p string) (time.Duration, error) {
	data, err := safefile.ReadRegular(p, 4096)
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 0, fmt.Errorf("%s: empty", p)
	}
	secs, err := strconv.ParseFloat(f[0], 64)
	if err != nil || secs < 0 {
		return 0, fmt.Errorf("%s: uptime %q is not a number of seconds", p, f[0])
	}
	return time.Duration(secs * float64(time.Second)), nil
}

// hostIdentity reads uname(2) (the fields uname -a prints) and
// /etc/os-release.
func hostIdentity() []IdentityFile {
	u := IdentityFile{Name: "uname.txt", Source: "uname -a (uname(2))"}
	var un unix.Utsname
	if err := unix.Uname(&un); err != nil {
		u.Err = fmt.Errorf("uname: %w", err)
	} else {
		f := []string{unix.ByteSliceToString(un.Sysname[:]), unix.ByteSliceToString(un.Nodename[:]),
			unix.ByteSliceToString(un.Release[:]), unix.ByteSliceToString(un.Version[:]), unix.ByteSliceToString(un.Machine[:])}
		u.Data = []byte(strings.Join(f, " ") + "\n")
	}
	osr := IdentityFile{Name: "os-release.txt", Source: "cat /etc/os-release"}
	osr.Data, osr.Err = safefile.ReadRegular("/etc/os-release", 64<<10)
	if osr.Err != nil {
		osr.Source = "cat /usr/lib/os-release"
		osr.Data, osr.Err = safefile.ReadRegular("/usr/lib/os-release", 64<<10)
	}
	return []IdentityFile{u, osr}
}
