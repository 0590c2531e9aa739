package topology

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/nic-exporter/nic_exporter/internal/errclass"
	"github.com/nic-exporter/nic_exporter/internal/sysfs"
)

// nvidiaVendor is the PCI vendor ID of NVIDIA.
const nvidiaVendor = "0x10de"

// GPU PCI classes (class code without the programming interface): 3D
// controller (data-centre GPUs) and VGA compatible controller.
const (
	class3D  = 0x0302
	classVGA = 0x0300
)

// representor matches the phys_port_name of an eswitch representor
// netdev ("pf0vf3", "c1pf0sf7"): its device link is the PF, but it is not
// a port of the NIC, and a PF in switchdev mode has one per VF.
var representor = regexp.MustCompile(`^(c[0-9]+)?pf[0-9]+(vf|sf)[0-9]+$`)

// Scan reads the PCIe topology of the NICs and NVIDIA GPUs below the
// sysfs mount point root: the PCI functions behind the network
// interfaces (root/class/net/*/device) and RDMA devices
// (root/class/infiniband/*/device), and the functions of
// root/bus/pci/devices with vendor 0x10de, class 0x0302xx or 0x0300xx and
// the nvidia driver bound, with their places in the tree from the paths
// of their directories under root/devices. Virtual interfaces (no device),
// devices that are not on PCI, SR-IOV virtual functions (they have a
// physfn link) and eswitch representors are left out, and so are the
// devices keep rejects. gpuInfo is the driver's directory of GPU
// information files (/proc/driver/nvidia/gpus); the UUIDs come from
// there when it exists. A device or GPU that cannot be read is passed to
// report with the path that failed, and left out; the rest of the scan
// goes on.
func Scan(root, gpuInfo string, keep func(device string) bool, report func(key string, err error)) (Host, error) {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return Host{}, fmt.Errorf("sysfs root: %w", err)
	}
	s := &scanner{root: root, realRoot: realRoot, report: report}
	nics := make(map[string]*NIC)
	for _, class := range []string{"class/net", "class/infiniband"} {
		dir := filepath.Join(root, filepath.FromSlash(class))
		entries, err := os.ReadDir(dir)
		if err != nil {
			if !errclass.IsNotExist(err) {
				report(dir, err)
			}
			continue
		}
		for _, e := range entries {
			name := e.Name()
			if !keep(name) {
				continue
			}
			devDir := filepath.Join(dir, name)
			if class == "class/net" {
				if ppn, err := sysfs.ReadAttr(filepath.Join(devDir, "phys_port_name")); err == nil && representor.MatchString(ppn) {
					continue
				}
			}
			fn, ok := s.function(filepath.Join(devDir, "device"), false)
			if !ok {
				continue
			}
			if n := nics[fn.Address]; n != nil {
				n.Devices = append(n.Devices, name)
				continue
			}
			nics[fn.Address] = &NIC{Function: fn, Devices: []string{name}}
		}
	}
	var h Host
	for _, n := range nics {
		sort.Strings(n.Devices)
		h.NICs = append(h.NICs, *n)
	}
	sort.Slice(h.NICs, func(i, j int) bool { return h.NICs[i].Address < h.NICs[j].Address })
	h.GPUs = s.gpus(gpuInfo)
	return h, nil
}

// scanner holds what one Scan needs.
type scanner struct {
	root, realRoot string
	report         func(key string, err error)
}

// function resolves link, a device link or a bus/pci/devices entry, to
// the PCI function it is or is under and reads its NUMA node. ok is false
// when the link does not exist, does not lead to a PCI function below
// root/devices, or leads to a virtual function (unless vfs); read errors
// are reported.
func (s *scanner) function(link string, vfs bool) (Function, bool) {
	real, err := filepath.EvalSymlinks(link)
	if err != nil {
		if !errclass.IsNotExist(err) {
			s.report(link, err)
		}
		return Function{}, false
	}
	rel, err := filepath.Rel(s.realRoot, real)
	if err != nil {
		return Function{}, false
	}
	fn, dir, ok := parseDevicePath(filepath.ToSlash(rel))
	if !ok {
		return Function{}, false
	}
	dir = filepath.Join(s.realRoot, filepath.FromSlash(dir))
	if !vfs {
		if _, err := os.Lstat(filepath.Join(dir, "physfn")); err == nil {
			return Function{}, false
		}
	}
	fn.NUMANode = -1
	path := filepath.Join(dir, "numa_node")
	v, err := sysfs.ReadAttr(path)
	switch {
	case errclass.IsNotExist(err):
	case err != nil:
		s.report(path, err)
	default:
		n, err := strconv.Atoi(v)
		if err != nil || n < -1 {
			s.report(path, fmt.Errorf("%w: numa_node %q", errclass.ErrParse, v))
		} else {
			fn.NUMANode = n
		}
	}
	return fn, true
}

// parseDevicePath places a device by its path relative to the sysfs root,
// devices/pci0000:00/0000:00:01.1/0000:08:00.0[/...]: the host bridge,
// the run of PCI functions below it, and, of that run, the last one as
// the function and the others as its bridges. It returns the function's
// directory relative to the root. ok is false for a path that is not
// below a PCI host bridge.
func parseDevicePath(rel string) (fn Function, dir string, ok bool) {
	parts := strings.Split(rel, "/")
	if len(parts) < 3 || parts[0] != "devices" {
		return Function{}, "", false
	}
	host := -1
	for i, p := range parts {
		if isHostBridge(p) {
			host = i
			break
		}
	}
	if host < 0 {
		return Function{}, "", false
	}
	// The run of functions below the host bridge. A host bridge inside
	// it is an Intel VMD domain's, below the VMD function: its functions
	// continue the path through the VMD function.
	var run []string
	end := host + 1
	for ; end < len(parts); end++ {
		if isPCIAddress(parts[end]) {
			run = append(run, parts[end])
		} else if !isHostBridge(parts[end]) {
			break
		}
	}
	if len(run) == 0 || !isPCIAddress(parts[end-1]) {
		return Function{}, "", false
	}
	fn = Function{
		Address:    run[len(run)-1],
		HostBridge: parts[host],
		Bridges:    run[:len(run)-1],
	}
	return fn, strings.Join(parts[:end], "/"), true
}

// isHostBridge reports whether a directory name is a PCI host bridge's,
// "pci" and a domain:bus such as pci0000:00 or pci10000:00.
func isHostBridge(s string) bool {
	rest, ok := strings.CutPrefix(s, "pci")
	if !ok {
		return false
	}
	domain, bus, ok := strings.Cut(rest, ":")
	return ok && len(domain) >= 4 && len(domain) <= 8 && isHex(domain) && len(bus) == 2 && isHex(bus)
}

// gpus finds the NVIDIA GPUs in root/bus/pci/devices that the nvidia
// driver drives, numbers them in PCI address order and reads their UUIDs
// from gpuInfo.
func (s *scanner) gpus(gpuInfo string) []GPU {
	dir := filepath.Join(s.root, "bus", "pci", "devices")
	entries, err := os.ReadDir(dir)
	if err != nil {
		if !errclass.IsNotExist(err) {
			s.report(dir, err)
		}
		return nil
	}
	var out []GPU
	for _, e := range entries {
		addr := e.Name()
		if !isPCIAddress(addr) {
			continue
		}
		fdir := filepath.Join(dir, addr)
		// The vendor first: one read for every other function.
		vendor, err := sysfs.ReadAttr(filepath.Join(fdir, "vendor"))
		if err != nil {
			if !errclass.IsNotExist(err) {
				s.report(filepath.Join(fdir, "vendor"), err)
			}
			continue
		}
		if vendor != nvidiaVendor {
			continue
		}
		class, err := sysfs.ReadAttr(filepath.Join(fdir, "class"))
		if err != nil {
			s.report(filepath.Join(fdir, "class"), err)
			continue
		}
		c, err := strconv.ParseUint(strings.TrimPrefix(class, "0x"), 16, 32)
		if err != nil {
			s.report(filepath.Join(fdir, "class"), fmt.Errorf("%w: class %q", errclass.ErrParse, class))
			continue
		}
		if c>>8 != class3D && c>>8 != classVGA {
			continue // an NVSwitch (0x068000), an audio function
		}
		// nvidia-smi numbers only the GPUs the nvidia driver drives; one
		// bound to vfio-pci for a guest, or to no driver, is not counted.
		drv, err := os.Readlink(filepath.Join(fdir, "driver"))
		if err != nil || filepath.Base(drv) != "nvidia" {
			continue
		}
		fn, ok := s.function(fdir, true)
		if !ok {
			continue
		}
		g := GPU{Function: fn}
		if gpuInfo != "" {
			g.UUID = s.uuid(filepath.Join(gpuInfo, addr, "information"), addr)
		}
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	for i := range out {
		out[i].Index = i
	}
	return out
}

// uuid reads the GPU UUID from the driver's information file at path.
// An absent file (no driver, a container without /proc/driver/nvidia)
// gives "" silently.
func (s *scanner) uuid(path, addr string) string {
	v, err := sysfs.ReadAttr(path)
	if err != nil {
		if !errclass.IsNotExist(err) {
			s.report(path, err)
		}
		return ""
	}
	info, err := ParseGPUInformation([]byte(v))
	if err != nil {
		s.report(path, err)
		return ""
	}
	if info.BusLocation != "" && info.BusLocation != addr {
		s.report(path, fmt.Errorf("%w: bus location %s, want %s", errclass.ErrParse, info.BusLocation, addr))
		return ""
	}
	return info.UUID
}
