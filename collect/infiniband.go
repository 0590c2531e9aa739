package collect

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/nic-exporter/nic_exporter/internal/safefile"
)

// ibDevices returns the RDMA devices in sysfs, sorted.
func (c *collector) ibDevices() []string {
	ents, err := os.ReadDir(filepath.Join(c.src.SysfsPath, "class/infiniband"))
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			c.b.unreadableErr("/sys/class/infiniband", err)
		}
		return nil
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

// ibPorts returns the port numbers of an RDMA device, in order.
func (c *collector) ibPorts(dev string) []int {
	ents, err := os.ReadDir(filepath.Join(c.src.SysfsPath, "class/infiniband", dev, "ports"))
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, n)
		}
	}
	sort.Ints(out)
	return out
}

// infinibandSample writes each port's counters/ and hw_counters/, and
// each device's own hw_counters/ (EFA), into dir, as `grep -H .` in the
// directory prints them: name:value, in file name order.
func (c *collector) infinibandSample(dir string) {
	for _, dev := range c.ibDevices() {
		base := filepath.Join(c.src.SysfsPath, "class/infiniband", dev)
		c.counterDir(filepath.Join(base, "hw_counters"), "/sys/class/infiniband/"+dev+"/hw_counters",
			name(dir, "hw_counters_"+fileSafe(dev)+".txt"))
		for _, p := range c.ibPorts(dev) {
			ps := strconv.Itoa(p)
			for _, kind := range []struct{ sub, file string }{{"counters", "ib_counters_"}, {"hw_counters", "hw_counters_"}} {
				c.counterDir(filepath.Join(base, "ports", ps, kind.sub), "/sys/class/infiniband/"+dev+"/ports/"+ps+"/"+kind.sub,
					name(dir, kind.file+fileSafe(dev)+"_"+ps+".txt"))
			}
		}
	}
}

// counterDir writes the counters of one directory to file. Files that
// cannot be read (EINVAL from a counter the device does not have, "N/A
// (no PMA)") are left out and named in the manifest together.
func (c *collector) counterDir(p, shown, file string) {
	ents, err := os.ReadDir(p)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			c.b.unreadableErr(shown, err)
		}
		return
	}
	var b strings.Builder
	var failed []string
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		data, err := safefile.ReadRegular(filepath.Join(p, e.Name()), 4096)
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s (%v)", e.Name(), errUnwrapPath(err)))
			continue
		}
		fmt.Fprintf(&b, "%s:%s\n", e.Name(), strings.TrimSpace(string(data)))
	}
	if len(failed) > 0 {
		c.b.unreadable(shown, "not readable: "+strings.Join(failed, ", "))
	}
	if b.Len() > 0 {
		c.b.add(file, "cd "+shown+" && grep -H . *", []byte(b.String()))
	}
}

// ibstat port state names, as ibstat prints the numbers of the state
// and phys_state attributes (infiniband-diags, libibumad's tables).
var (
	ibStates     = []string{"???", "Down", "Initializing", "Armed", "Active"}
	ibPhysStates = []string{"No state change", "Sleep", "Polling", "Disabled", "PortConfigurationTraining", "LinkUp", "LinkErrorRecovery", "PhyTest"}
)

// ibstat writes ibstat.txt: what ibstat prints, from the same sysfs
// attributes ibstat reads through libibumad.
func (c *collector) ibstat() {
	var b strings.Builder
	for _, dev := range c.ibDevices() {
		base := filepath.Join(c.src.SysfsPath, "class/infiniband", dev)
		attr := func(p string) string {
			data, err := safefile.ReadRegular(filepath.Join(base, p), 4096)
			if err != nil {
				return ""
			}
			return strings.TrimSpace(string(data))
		}
		ports := c.ibPorts(dev)
		fmt.Fprintf(&b, "CA '%s'\n", dev)
		if v := attr("hca_type"); v != "" {
			fmt.Fprintf(&b, "\tCA type: %s\n", v)
		}
		fmt.Fprintf(&b, "\tNumber of ports: %d\n", len(ports))
		if v := attr("fw_ver"); v != "" {
			fmt.Fprintf(&b, "\tFirmware version: %s\n", v)
		}
		if v := attr("hw_rev"); v != "" {
			fmt.Fprintf(&b, "\tHardware version: %s\n", v)
		}
		if v := attr("node_guid"); v != "" {
			fmt.Fprintf(&b, "\tNode GUID: 0x%s\n", strings.ReplaceAll(v, ":", ""))
		}
		if v := attr("sys_image_guid"); v != "" {
			fmt.Fprintf(&b, "\tSystem image GUID: 0x%s\n", strings.ReplaceAll(v, ":", ""))
		}
		for _, p := range ports {
			pp := filepath.Join("ports", strconv.Itoa(p))
			fmt.Fprintf(&b, "\tPort %d:\n", p)
			if v := attr(filepath.Join(pp, "state")); v != "" {
				fmt.Fprintf(&b, "\t\tState: %s\n", numbered(v, ibStates))
			}
			if v := attr(filepath.Join(pp, "phys_state")); v != "" {
				fmt.Fprintf(&b, "\t\tPhysical state: %s\n", numbered(v, ibPhysStates))
			}
			if v := attr(filepath.Join(pp, "rate")); v != "" {
				fmt.Fprintf(&b, "\t\tRate: %s\n", strings.Fields(v)[0])
			}
			for _, f := range []struct{ file, label string }{{"lid", "Base lid"}, {"lid_mask_count", "LMC"}, {"sm_lid", "SM lid"}} {
				if v := attr(filepath.Join(pp, f.file)); v != "" {
					if n, err := strconv.ParseUint(strings.TrimPrefix(v, "0x"), 16, 32); err == nil && strings.HasPrefix(v, "0x") {
						v = strconv.FormatUint(n, 10)
					}
					fmt.Fprintf(&b, "\t\t%s: %s\n", f.label, v)
				}
			}
			if v := attr(filepath.Join(pp, "cap_mask")); v != "" {
				fmt.Fprintf(&b, "\t\tCapability mask: %s\n", v)
			}
			if v := attr(filepath.Join(pp, "link_layer")); v != "" {
				fmt.Fprintf(&b, "\t\tLink layer: %s\n", v)
			}
		}
	}
	if b.Len() > 0 {
		c.b.add("ibstat.txt", "ibstat (from /sys/class/infiniband, the attributes ibstat reads)", []byte(b.String()))
	}
}

// numbered returns the name of a "N: NAME" sysfs state in names, or the
// attribute's own name when N is out of the table.
func numbered(v string, names []string) string {
	num, rest, _ := strings.Cut(v, ":")
	if n, err := strconv.Atoi(strings.TrimSpace(num)); err == nil && n >= 0 && n < len(names) {
		return names[n]
	}
	return strings.TrimSpace(rest)
}
