package diagnose

import (
	"bytes"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/nic-exporter/nic_exporter/internal/ethtooldump"
)

// optionFileName is the interface in a file name that spells the ethtool
// command with its option: ethtool_-S_eth0 (sosreport), ethtool_-S_eth0.txt
// (nic_exporter collect), ethtool_-i_ens5.100.log. Only an extension of
// a text file is taken off, so a VLAN interface such as eth0.100 keeps
// its dot.
var optionFileName = regexp.MustCompile(`^ethtool_-[a-zA-Z]_([^/\s]+?)(?:\.(?:txt|log|out))?$`)

// commandLine is an ethtool -i/-S command line in a file's content, as a
// shell transcript or a script's echo leaves it: "$ ethtool -S eth0",
// "[root@h ~]# ethtool -S ens5 | grep drop", "+ ethtool -i eth0".
var commandLine = regexp.MustCompile(`(?:^|[\s#$>+:])ethtool\s+(?:-[iS]|--driver|--statistics)\s+([^\s|;&><]+)`)

// maxCommandLines is how many lines at the start of a file are searched
// for the command that wrote it.
const maxCommandLines = 5

// dumpText is an ethtool -i/-S file made ready for ethtooldump.Parse:
// lines that are not ethtool's (a shell prompt and command, a shell's
// error such as "ethtool: command not found") are left out and counted,
// the command's interface kept.
type dumpText struct {
	data []byte
	// command is the interface the file's command line names, or "".
	command string
	// skipped are the 1-based numbers of the lines left out.
	skipped []int
	// stats and info say what the file holds.
	stats, info bool
	// busInfo is the PCI address ethtool -i printed, or "".
	busInfo string
}

// cleanDump returns the lines of an ethtool -i/-S file that ethtooldump
// reads: comments, empty lines, "key: value" lines, and after "NIC
// statistics:" the statistics; any other line (a prompt with the command,
// a shell's error) is left out and its number noted. The interface of a
// command line in the first lines is kept.
func cleanDump(data []byte) dumpText {
	var d dumpText
	var out bytes.Buffer
	seen := 0
	for i, raw := range lines(data) {
		t := strings.TrimSpace(raw)
		if t != "" && !strings.HasPrefix(t, "#") && seen < maxCommandLines {
			seen++
			if m := commandLine.FindStringSubmatch(t); m != nil && d.command == "" {
				d.command = m[1]
				d.skipped = append(d.skipped, i+1)
				out.WriteByte('\n')
				continue
			}
		}
		switch {
		case t == "NIC statistics:":
			d.stats = true
		case t == "" || strings.HasPrefix(t, "#"):
		case !strings.Contains(t, ":") || strings.HasPrefix(t, "bash:") || strings.HasPrefix(t, "sh:") ||
			strings.Contains(t, "command not found") || strings.HasPrefix(t, "Cannot ") || strings.HasPrefix(t, "ethtool:"):
			d.skipped = append(d.skipped, i+1)
			out.WriteByte('\n')
			continue
		case !d.stats:
			k, v, _ := strings.Cut(t, ":")
			switch k {
			case "driver":
				d.info = true
			case "bus-info":
				d.busInfo = strings.TrimSpace(v)
			}
		}
		out.WriteString(raw)
		out.WriteByte('\n')
	}
	d.data = out.Bytes()
	return d
}

// skippedNote says which lines of a file were left out.
func (d dumpText) skippedNote() string {
	if len(d.skipped) == 0 {
		return ""
	}
	ns := make([]string, 0, len(d.skipped))
	for i, n := range d.skipped {
		if i == 5 {
			ns = append(ns, fmt.Sprintf("and %d more", len(d.skipped)-5))
			break
		}
		ns = append(ns, fmt.Sprint(n))
	}
	return "not ethtool output, left out: line " + strings.Join(ns, ", ")
}

// linkAt is an `ethtool DEV` output and the directory of its file.
type linkAt struct {
	dir string
	ls  *LinkSettings
}

// namedDump is an ethtool -i/-S file with the interface it was given and
// how.
type namedDump struct {
	dumpFile
	text  dumpText
	iface string
	how   string
}

// nameDumps gives each ethtool -i/-S file its interface, in this order:
//  1. the file's name, when it spells the command with its option
//     (ethtool_-S_eth0, ethtool_-S_eth0.txt);
//  2. the command line at the top of its content (ethtool -S eth0);
//  3. the "Settings for DEV:" of the only `ethtool DEV` output in its
//     directory (else in the bundle), when the file is the only unnamed
//     -S output there and the -i output beside it (collect_debug.sh
//     writes ethtool_i.txt, ethtool_stats.txt and ethtool.txt for eth0);
//  4. the bus-info of its ethtool -i output, or of the only unnamed -i
//     file in its directory, when nothing names the interface;
//  5. the file's own name without its extension.
//
// Each -S output is its own interface unless 1 or 2 name the same one;
// an -i output joins the -S output of the same name. A name is never a
// guess from a suffix of the file name. Files are taken in name order,
// so the result does not depend on the archive's order.
func nameDumps(dumps []namedDump, links []linkAt) {
	sort.SliceStable(dumps, func(i, j int) bool { return dumps[i].Name < dumps[j].Name })
	for i := range dumps {
		d := &dumps[i]
		if m := optionFileName.FindStringSubmatch(path.Base(d.Name)); m != nil {
			d.iface, d.how = m[1], "named by the file name"
		} else if d.text.command != "" {
			d.iface, d.how = d.text.command, "named by the command line in the file"
		}
	}
	byDir := map[string][]*namedDump{}
	for i := range dumps {
		if dumps[i].iface == "" {
			dir := path.Dir(dumps[i].Name)
			byDir[dir] = append(byDir[dir], &dumps[i])
		}
	}
	dirs := make([]string, 0, len(byDir))
	for dir := range byDir {
		dirs = append(dirs, dir)
	}
	sort.Strings(dirs)
	for _, dir := range dirs {
		var stats, info []*namedDump
		for _, d := range byDir[dir] {
			if d.text.stats {
				stats = append(stats, d)
			} else {
				info = append(info, d)
			}
		}
		if len(stats) <= 1 && len(info) <= 1 {
			if name, how := linkName(dir, links); name != "" {
				for _, d := range byDir[dir] {
					d.iface, d.how = name, how
				}
				continue
			}
			if len(stats) == 1 && len(info) == 1 && stats[0].text.busInfo == "" && info[0].text.busInfo != "" {
				stats[0].iface, stats[0].how = info[0].text.busInfo, "no file names the interface: named by the PCI address of the ethtool -i output beside it"
				info[0].iface, info[0].how = stats[0].iface, stats[0].how
				continue
			}
		}
		for _, d := range byDir[dir] {
			switch {
			case d.text.busInfo != "":
				d.iface, d.how = d.text.busInfo, "no file names the interface: named by its PCI address (bus-info)"
			default:
				d.iface, d.how = withoutExt(path.Base(d.Name)), fileNamed
			}
		}
	}
	// Two files named alike in different directories stay two
	// interfaces: both are then named by their paths.
	count := map[string]int{}
	for _, d := range dumps {
		if d.how == fileNamed {
			count[d.iface]++
		}
	}
	for i := range dumps {
		if d := &dumps[i]; d.how == fileNamed && count[d.iface] > 1 {
			d.iface = withoutExt(d.Name)
		}
	}
}

// fileNamed is how an interface that only its file's name names was
// found.
const fileNamed = "no file names the interface: named after the file"

// withoutExt returns name without the extension of a text file.
func withoutExt(name string) string {
	if ext := path.Ext(name); ext == ".txt" || ext == ".log" || ext == ".out" {
		return strings.TrimSuffix(name, ext)
	}
	return name
}

// linkName returns the interface of the only `ethtool DEV` output in dir,
// else of the only one in the bundle, and how it was found.
func linkName(dir string, links []linkAt) (name, how string) {
	var here []string
	for _, l := range links {
		if l.dir == dir {
			here = append(here, l.ls.Interface)
		}
	}
	switch {
	case len(here) == 1:
		return here[0], "named by the ethtool output beside it (Settings for " + here[0] + ")"
	case len(here) == 0 && len(links) == 1:
		return links[0].ls.Interface, "named by the bundle's only ethtool output (Settings for " + links[0].ls.Interface + ")"
	}
	return "", ""
}

// parseOwn parses a cleaned ethtool -i/-S file alone, so a file that does
// not parse costs only itself.
func (d namedDump) parseOwn() error {
	_, err := ethtooldump.Parse(bytes.NewReader(d.text.data))
	return err
}
