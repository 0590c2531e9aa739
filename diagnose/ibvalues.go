package diagnose

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/nic-exporter/nic_exporter/collector/infiniband"
)

// KindRDMACounterValues is `cat /sys/class/infiniband/DEV/ports/N/counters/*
// 2>&1`: the values of an IB port's counters without their names, as
// the ConnectX-7 troubleshooting guide's collect_debug.sh writes them to
// ib_counters.txt.
const KindRDMACounterValues = "RDMA port counters (cat counters/*)"

// The counter files the kernel creates in ports/N/counters, in the order
// of drivers/infiniband/core/sysfs.c (torvalds/linux): pma_attrs,
// pma_attrs_ext or pma_attrs_noietf, chosen by the port's PMA
// ClassPortInfo capability mask. pmaBase are the first twelve of every
// group; pmaData the data and packet counters (32-bit in pma_attrs,
// PortCountersExtended in the others, under the same file names);
// port_xmit_wait is in every group of later kernels (commit e04360a2 of
// the stored copy) and in none of earlier ones (commit 0147ebcf);
// pmaExt the four counters only pma_attrs_ext adds. pma_attrs and
// pma_attrs_noietf hold the same file names.
var (
	pmaBase = []string{"symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors",
		"port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors", "port_xmit_discards",
		"port_xmit_constraint_errors", "port_rcv_constraint_errors", "local_link_integrity_errors",
		"excessive_buffer_overrun_errors", "VL15_dropped"}
	pmaData = []string{"port_xmit_data", "port_rcv_data", "port_xmit_packets", "port_rcv_packets"}
	pmaExt  = []string{"unicast_rcv_packets", "unicast_xmit_packets", "multicast_rcv_packets", "multicast_xmit_packets"}
)

// pmaGroup is one set of counter files a port can have.
type pmaGroup struct {
	name  string
	files []string
}

// pmaGroups are the sets of counter files of the kernel's groups; each
// has a different number of files, which is how a file of bare values
// names its group.
func pmaGroups() []pmaGroup {
	join := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	wait := []string{"port_xmit_wait"}
	return []pmaGroup{
		{"pma_attrs or pma_attrs_noietf, before port_xmit_wait", join(pmaBase, pmaData)},
		{"pma_attrs or pma_attrs_noietf", join(pmaBase, pmaData, wait)},
		{"pma_attrs_ext, before port_xmit_wait", join(pmaBase, pmaData, pmaExt)},
		{"pma_attrs_ext", join(pmaBase, pmaData, wait, pmaExt)},
	}
}

// globOrders are the two orders in which a shell expands counters/*: by
// bytes (bash in the C and C.UTF-8 locales, dash in any), where
// VL15_dropped comes first, and by glibc's collation (bash in
// en_US.UTF-8 and most other locales; iso14651_t1), which ignores
// punctuation and case at the first level, so VL15_dropped comes last.
// TestGlobOrdersAgreeWithBash checks both against bash.
var globOrders = []struct {
	name string
	less func(a, b string) bool
}{
	{"C", func(a, b string) bool { return a < b }},
	{"en_US.UTF-8", func(a, b string) bool {
		ka, kb := collationKey(a), collationKey(b)
		if ka != kb {
			return ka < kb
		}
		return a < b
	}},
}

// collationKey is a name's first-level collation key in glibc's
// iso14651_t1: letters without case, digits, no punctuation.
func collationKey(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'A' && r <= 'Z':
			return r - 'A' + 'a'
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		}
		return -1
	}, s)
}

// rdmaValuesPath is a counters file path in a `cat` error or a command
// line: /sys/class/infiniband/mlx5_0/ports/1/counters/symbol_error (or
// the device's own path, /sys/devices/.../infiniband/mlx5_0/ports/1/...),
// or the directory with /* or nothing after it.
var rdmaValuesPath = regexp.MustCompile(`/infiniband/([A-Za-z0-9._-]+)/ports/([0-9]+)/counters(?:/([A-Za-z0-9_*]+))?`)

// catError is a `cat` error line: "cat: PATH: Invalid argument".
var catError = regexp.MustCompile(`^cat: (\S+): (.+)$`)

// noPMA is what kernels before sysfs_emit printed for a counter of a
// device without a performance management agent.
const noPMA = "N/A (no PMA)"

// rdmaValueLine classifies a line of a counters values file: a value, a
// counter without a value (a `cat` error naming it, or N/A), a command
// line naming the counters directory, or neither.
type rdmaValueLine struct {
	value   string // digits, or "" for a counter without a value
	errName string // the counter a `cat` error names
	dev     string // the device and port a path on the line names
	port    string
	command bool
	comment bool
}

// classifyRDMAValueLine reads one non-empty, trimmed line; ok is false
// for a line of no kind the file has.
func classifyRDMAValueLine(l string) (rdmaValueLine, bool) {
	var v rdmaValueLine
	if m := rdmaValuesPath.FindStringSubmatch(l); m != nil {
		v.dev, v.port = m[1], m[2]
	}
	switch {
	case isDigits(l):
		v.value = l
		return v, true
	case l == noPMA:
		return v, true
	case strings.HasPrefix(l, "cat: "):
		m := catError.FindStringSubmatch(l)
		if m == nil || v.dev == "" {
			return v, false
		}
		if v.errName = path.Base(m[1]); v.errName == "counters" {
			return v, false
		}
		return v, true
	case strings.HasPrefix(l, "#") && !strings.Contains(l, "cat "):
		// A comment (a fixture's source header), not a root prompt
		// running cat: the paths it mentions name nothing.
		return rdmaValueLine{comment: true}, true
	case strings.HasPrefix(l, "$ ") || strings.HasPrefix(l, "# ") || strings.HasPrefix(l, "+ "):
		v.command = v.dev != ""
		return v, v.command
	}
	return v, false
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// rdmaValuesName is the name collect_debug.sh gives the file, or one
// that names the device and port as collect does.
var rdmaValuesName = regexp.MustCompile(`^ib_counters(?:_.+)?\.txt$`)

// isRDMAValues reports whether a file is the bare values of an IB port's
// counters: every non-empty line a value, a counter without a value or a
// command line naming the counters directory, with at least one value,
// and the file named ib_counters*.txt or a line naming the directory
// (a file of bare numbers says nothing else about itself).
func isRDMAValues(name string, ls []string) bool {
	values, named := 0, rdmaValuesName.MatchString(path.Base(name))
	for _, l := range ls {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		v, ok := classifyRDMAValueLine(l)
		if !ok {
			return false
		}
		if v.value != "" {
			values++
		}
		named = named || v.dev != ""
	}
	return values > 0 && named
}

// rdmaValues is what a counters values file was read as.
type rdmaValues struct {
	files []rdmaFile
	// note says where the device and port came from when the file does
	// not say them, the group and the glob order the values were matched
	// by, and the counters without a value.
	note string
}

// parseRDMAValues matches the values of a `cat counters/* 2>&1` file to
// the counter names. Each line is one file of the directory in the
// order the shell's glob gave: a value, a `cat` error naming a counter
// that gave none (taken out of the list), or N/A for a device without a
// PMA. The number of lines names the kernel's group (pmaGroups); the
// glob order is C or en_US.UTF-8 (globOrders), decided by which reading
// is plausible when they differ; a count of no group, or two plausible
// readings that differ, is an error saying why. The device and port come
// from a path in the file, else from the file name (ib_counters_DEV_PORT.txt
// as collect writes it, or ib_counters.txt, which collect_debug.sh reads
// from mlx5_0 port 1).
func parseRDMAValues(file, text string) (*rdmaValues, error) {
	type entry struct {
		value string
		line  int
	}
	var entries []entry
	var errNames []string
	dev, port := "", ""
	for i, raw := range strings.Split(text, "\n") {
		l := strings.TrimSpace(raw)
		if l == "" {
			continue
		}
		v, ok := classifyRDMAValueLine(l)
		if !ok {
			return nil, fmt.Errorf("line %d: %q is not a counter value, a cat error or a command line", i+1, l)
		}
		if v.dev != "" {
			if dev != "" && (v.dev != dev || v.port != port) {
				return nil, fmt.Errorf("line %d: %s port %s, but an earlier line names %s port %s", i+1, v.dev, v.port, dev, port)
			}
			dev, port = v.dev, v.port
		}
		switch {
		case v.command, v.comment:
		case v.errName != "":
			errNames = append(errNames, v.errName)
		default:
			entries = append(entries, entry{v.value, i + 1})
		}
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("no counter values")
	}
	var notes []string
	if dev == "" {
		base := path.Base(file)
		if m := rdmaCounterFile.FindStringSubmatch(base); m != nil && m[1] == "ib_counters" && m[3] != "" {
			dev, port = m[2], m[3]
		} else if base == "ib_counters.txt" {
			dev, port = "mlx5_0", "1"
			notes = append(notes, "device and port not in the file: mlx5_0 port 1, the ones collect_debug.sh reads into ib_counters.txt")
		} else {
			return nil, fmt.Errorf("neither the file nor its name says the RDMA device and port")
		}
	}
	n := len(entries) + len(errNames)
	var group *pmaGroup
	for _, g := range pmaGroups() {
		if len(g.files) == n {
			group = &g
			break
		}
	}
	if group == nil {
		return nil, fmt.Errorf("%d counters (%d values, %d cat errors) match no counter group of the kernel (16, 17, 20 or 21 files, drivers/infiniband/core/sysfs.c)", n, len(entries), len(errNames))
	}
	names := make([]string, 0, len(group.files))
	skip := map[string]bool{}
	for _, e := range errNames {
		skip[e] = true
	}
	for _, f := range group.files {
		if !skip[f] {
			names = append(names, f)
		}
		delete(skip, f)
	}
	for _, e := range errNames {
		if skip[e] {
			return nil, fmt.Errorf("cat error names %q, which is not a counter of %s", e, group.name)
		}
	}
	if len(names) != len(entries) {
		return nil, fmt.Errorf("%d values for %d counters of %s: a cat error names a counter twice", len(entries), len(names), group.name)
	}
	if len(errNames) > 0 {
		notes = append(notes, "no value for "+strings.Join(errNames, ", "))
	}

	// The readings by each glob order, name -> entry index.
	type reading struct {
		order  string
		names  []string
		reject string
	}
	readings := make([]reading, len(globOrders))
	for i, o := range globOrders {
		ns := append([]string(nil), names...)
		sort.SliceStable(ns, func(a, b int) bool { return o.less(ns[a], ns[b]) })
		vals := map[string]string{}
		for j, nm := range ns {
			vals[nm] = entries[j].value
		}
		readings[i] = reading{order: o.name, names: ns, reject: implausible(vals)}
	}
	same := true
	for j := range entries {
		if entries[j].value != entries[indexOf(readings[1].names, readings[0].names[j])].value {
			same = false
		}
	}
	chosen := readings[0]
	switch {
	case same:
		notes = append(notes, fmt.Sprintf("%s; the C and en_US.UTF-8 glob orders read the same", group.name))
	case readings[0].reject == "" && readings[1].reject != "":
		notes = append(notes, fmt.Sprintf("%s in the C glob order (the en_US.UTF-8 order would give %s)", group.name, readings[1].reject))
	case readings[1].reject == "" && readings[0].reject != "":
		chosen = readings[1]
		notes = append(notes, fmt.Sprintf("%s in the en_US.UTF-8 glob order (the C order would give %s)", group.name, readings[0].reject))
	case readings[0].reject != "":
		return nil, fmt.Errorf("no reading of %s is plausible: in the C glob order %s, in the en_US.UTF-8 order %s", group.name, readings[0].reject, readings[1].reject)
	default:
		return nil, fmt.Errorf("cannot tell whether the shell listed the files of %s in the C or the en_US.UTF-8 order: both readings are plausible and they differ", group.name)
	}
	out := &rdmaValues{note: strings.Join(notes, "; ")}
	dir := path.Join("class/infiniband", dev, "ports", port, "counters")
	for j, nm := range chosen.names {
		e := entries[j]
		if e.value == "" {
			continue // N/A
		}
		out.files = append(out.files, rdmaFile{path: path.Join(dir, nm), value: e.value + "\n", evidence: fmt.Sprintf("%s:%d", file, e.line)})
	}
	if len(out.files) == 0 {
		return nil, fmt.Errorf("no counter values")
	}
	return out, nil
}

func indexOf(ss []string, s string) int {
	for i, x := range ss {
		if x == s {
			return i
		}
	}
	return -1
}

// implausible says why the counter values of one reading cannot be a
// port's, or "": a value wider than its counter (the IBA PortCounters
// width, infiniband.PortCounterBits; the data and packet counters may be
// 64-bit and are not checked), or fewer data words than packets (each
// packet carries at least its 8-byte local route header; 32-bit data and
// packet counters both saturate at the same maximum).
func implausible(vals map[string]string) string {
	names := make([]string, 0, len(vals))
	for n := range vals {
		names = append(names, n)
	}
	sort.Strings(names)
	num := func(n string) (uint64, bool) {
		v, ok := vals[n]
		if !ok || v == "" {
			return 0, false
		}
		x, err := strconv.ParseUint(v, 10, 64)
		return x, err == nil
	}
	for _, n := range names {
		v, ok := num(n)
		if !ok {
			if vals[n] != "" {
				return fmt.Sprintf("%s %s, above 64 bits", n, vals[n])
			}
			continue
		}
		if strings.HasSuffix(n, "_data") || strings.HasSuffix(n, "_packets") {
			continue
		}
		if bits, known := infiniband.PortCounterBits(n); known && bits > 0 && v > 1<<bits-1 {
			return fmt.Sprintf("%s %d, above its %d bits", n, v, bits)
		}
	}
	for _, dir := range []string{"xmit", "rcv"} {
		d, ok1 := num("port_" + dir + "_data")
		p, ok2 := num("port_" + dir + "_packets")
		if ok1 && ok2 && d < p {
			return fmt.Sprintf("port_%s_data %d below port_%s_packets %d", dir, d, dir, p)
		}
	}
	return ""
}
