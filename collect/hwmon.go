package collect

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"testing/fstest"

	"go.uber.org/zap"

	pollpkg "github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/collector/netdev"
	"github.com/nic-exporter/nic_exporter/internal/sysfs"
)

// HwmonFile is the name of the file of each sample that holds the NIC
// functions' temperatures.
const HwmonFile = "hwmon_sysfs.txt"

// maxFunctionInterfaces bounds the interfaces listed per PCI function:
// a PF in switchdev mode has one representor per VF, at most a few
// hundred.
const maxFunctionInterfaces = 1024

// hwmonSource describes hwmon_sysfs.txt in the manifest.
const hwmonSource = "cd /sys && grep -H . bus/pci/devices/FUNCTION/hwmon/hwmon*/{name,temp*_input,temp*_label,temp*_crit,temp*_emergency,temp*_highest} " +
	"bus/pci/devices/FUNCTION/net/*/ifindex, and class/thermal/thermal_zone*/{type,temp,trip_point_*_type,trip_point_*_temp} " +
	"for a function without a hwmon device (each NIC function with a temperature: the files the netdev collector reads)"

// hwmonSample writes hwmon_sysfs.txt into dir: for each NIC function
// with a temperature, the files the netdev collector reads for it (its
// hwmon devices, or its mlx5 thermal zone) and the interfaces it backs
// (their ifindex), as `grep -H .` in /sys prints them, the function's
// directory as bus/pci/devices/<address>. The files are the ones
// netdev.AddHwmonFS reads: it runs over the host's sysfs through a file
// system that keeps a copy of each attribute it reads, so the bundle holds
// exactly what the daemon's reading needs, and diagnose runs the same
// reading over the copy.
func (c *collector) hwmonSample(dir string) {
	lines := map[string]string{}
	for _, addr := range c.nicFunctions() {
		devDir := c.pciDevice(addr)
		if _, err := os.Stat(devDir); err != nil {
			devDir = c.pciDeviceByClass(addr)
		}
		rec := &recordingFS{fn: path.Join("bus/pci/devices", addr), root: sysfs.DirFS(c.src.SysfsPath),
			dev: sysfs.DirFS(devDir), files: map[string]string{}, b: c.b}
		b := exposition.NewBuilder()
		netdev.AddHwmonFS(pollpkg.NewPoll(b, pollpkg.NewSourceErrors(zap.NewNop(), 0)), rec, rec.fn, addr)
		if b.Snapshot().Series() == 0 {
			continue // no temperature: its files are of no use
		}
		rec.interfaces()
		for n, v := range rec.files {
			lines[n] = v
		}
	}
	if len(lines) == 0 {
		return
	}
	names := make([]string, 0, len(lines))
	for n := range lines {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		for _, l := range strings.Split(lines[n], "\n") {
			fmt.Fprintf(&b, "%s:%s\n", n, l)
		}
	}
	c.b.add(name(dir, HwmonFile), hwmonSource, []byte(b.String()))
}

// recordingFS is sysfs as netdev.AddHwmonFS reads it for one PCI
// function, keeping a copy of each attribute read: the directory fn
// (bus/pci/devices/<address>) is the function's directory dev, any other
// name is under root. It reads only directories and regular files, as
// sysfs.DirFS does; a read that fails other than for a missing file is
// noted in the bundle's manifest.
type recordingFS struct {
	fn        string
	root, dev fs.FS
	files     map[string]string
	b         *Bundle
	buf       [4096]byte
}

// resolve returns the file system and name within it of name.
func (r *recordingFS) resolve(name string) (fs.FS, string) {
	if name == r.fn {
		return r.dev, "."
	}
	if rest, ok := strings.CutPrefix(name, r.fn+"/"); ok {
		return r.dev, rest
	}
	return r.root, name
}

// Open implements fs.FS: it reads the attribute name whole and returns
// its copy.
func (r *recordingFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	fsys, rel := r.resolve(name)
	s, err := sysfs.ReadFSAttr(fsys, rel, r.buf[:])
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			r.b.unreadable("/sys/"+name, errUnwrapPath(err).Error())
		}
		return nil, &fs.PathError{Op: "open", Path: name, Err: errUnwrapPath(err)}
	}
	r.files[name] = s
	return fstest.MapFS{"f": {Data: []byte(s + "\n")}}.Open("f")
}

// ReadDir implements fs.ReadDirFS.
func (r *recordingFS) ReadDir(name string) ([]fs.DirEntry, error) {
	fsys, rel := r.resolve(name)
	ents, err := fs.ReadDir(fsys, rel)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		r.b.unreadable("/sys/"+name, errUnwrapPath(err).Error())
	}
	return ents, err
}

// interfaces copies the ifindex of each network interface of the
// function, which says diagnose the interfaces the daemon names its
// temperatures by.
func (r *recordingFS) interfaces() {
	ents, err := r.ReadDir(path.Join(r.fn, "net"))
	if err != nil {
		return
	}
	for i, e := range ents {
		if i == maxFunctionInterfaces {
			r.b.unreadable("/sys/"+path.Join(r.fn, "net"), fmt.Sprintf("more than %d interfaces; the rest are not listed in %s", maxFunctionInterfaces, HwmonFile))
			return
		}
		if f, err := r.Open(path.Join(r.fn, "net", e.Name(), "ifindex")); err == nil {
			f.Close()
		}
	}
}
