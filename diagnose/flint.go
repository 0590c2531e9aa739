package diagnose

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// Kinds of firmware tool outputs besides mlxfwmanager's, and of a tool's
// failure in its place.
const (
	// KindFlintQuery is `flint -d DEV query` (or q, q full) or
	// `mstflint -d DEV query` output: one device's firmware image.
	KindFlintQuery = "flint/mstflint query"
	// KindToolFailure is what a tool printed instead of its output, as
	// a script's 2>&1 keeps it (collect_debug.sh's firmware.txt,
	// ibstat.txt, devlink_health.txt): the shell's "command not found"
	// for a firmware tool, devlink or ibstat, or the Mellanox tools' -E-
	// errors (mst not started, device not found). It is noted, not
	// parsed.
	KindToolFailure = "tool not installed or failed"
)

// flintCommand is a flint or mstflint command line naming its device:
// "# flint -d /dev/mst/mt4127_pciconf0 query", "$ mstflint -d 01:00.0 q".
var flintCommand = regexp.MustCompile(`\b(?:mst)?flint\s+(?:\S+\s+)*?-d\s+(\S+)\s+(?:\S+\s+)*?(?:q|query)\b`)

// ParseFlintQuery parses `flint query` or `mstflint query` output into
// the firmware inventory: per "Image type:" block its PSID, part number
// (q full), the firmware version as Versions["FW"] and the expansion
// ROMs of "Rom Info" (type=PXE version=3.6.502) as Versions["PXE"],
// Versions["UEFI"]; flint prints no available version. The device is
// the -d argument of the command line before the block (an mst device
// such as /dev/mst/mt4127_pciconf0, or a PCI address), else empty. The
// layout is flint's own "Key: value" block, with Rom Info continued on
// indented lines; no library reads it.
func ParseFlintQuery(text string) ([]FirmwareDevice, error) {
	var out []FirmwareDevice
	var cur *FirmwareDevice
	dev := ""
	inRom := false
	for _, raw := range strings.Split(text, "\n") {
		l := strings.TrimSpace(raw)
		if m := flintCommand.FindStringSubmatch(l); m != nil {
			dev = m[1]
			continue
		}
		k, v, ok := strings.Cut(l, ":")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if ok && k == "Image type" {
			out = append(out, FirmwareDevice{PCIName: dev, Versions: map[string][2]string{}})
			cur, inRom = &out[len(out)-1], false
			continue
		}
		if cur == nil || l == "" {
			continue
		}
		if inRom && strings.HasPrefix(l, "type=") {
			cur.addRom(l)
			continue
		}
		if !ok || strings.HasPrefix(l, "type=") {
			continue
		}
		inRom = false
		switch k {
		case "FW Version":
			cur.Versions["FW"] = [2]string{v, ""}
		case "PSID":
			cur.PSID = v
		case "Part Number":
			cur.PartNumber = v
		case "Rom Info":
			inRom = true
			cur.addRom(v)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no \"Image type:\" block")
	}
	for _, d := range out {
		if _, ok := d.Versions["FW"]; !ok && d.PSID == "" {
			return nil, fmt.Errorf("an \"Image type:\" block without FW Version or PSID")
		}
	}
	return out, nil
}

// addRom adds one expansion ROM of flint's Rom Info, "type=UEFI
// version=14.26.17 cpu=AMD64,AARCH64", as Versions[TYPE].
func (d *FirmwareDevice) addRom(s string) {
	typ, ver := "", ""
	for _, f := range strings.Fields(s) {
		if t, ok := strings.CutPrefix(f, "type="); ok {
			typ = t
		} else if v, ok := strings.CutPrefix(f, "version="); ok {
			ver = v
		}
	}
	if typ != "" && ver != "" {
		d.Versions[typ] = [2]string{ver, ""}
	}
}

// toolNotFound is the shell's message for a tool that is not
// installed: "bash: mlxfwmanager: command not found", "sh: 1: flint: not
// found", "./collect_debug.sh: line 9: mlxfwmanager: command not found".
// The tools are the firmware tools, devlink and ibstat.
var toolNotFound = regexp.MustCompile(`\b(mlxfwmanager|mstfwmanager|mlxup|flint|mstflint|mst|mlxconfig|mstconfig|mstdump|mlxdump|devlink|ibstat)\b:\s+(?:command )?not found\s*$`)

// mftError is an error or warning line of the Mellanox tools:
// "-E- No devices found or specified, mst might be stopped, run 'mst
// start' to load MST modules".
var mftError = regexp.MustCompile(`^-[EW]-\s+(.+)$`)

// toolFailure says why a tool printed no output to read, or "" when the
// file is not such a failure: every non-empty line is the shell's "not
// found" for one of the tools of toolNotFound, one of the Mellanox
// tools' -E-/-W-/-I- lines, mlxfwmanager's "Querying Mellanox devices
// firmware ..." or a # comment, and at least one is a failure.
func toolFailure(ls []string) string {
	var why []string
	for i, l := range ls {
		l = strings.TrimSpace(l)
		switch {
		case l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "-I-") || strings.HasPrefix(l, "Querying Mellanox devices firmware"):
		case toolNotFound.MatchString(l):
			m := toolNotFound.FindStringSubmatch(l)
			why = append(why, fmt.Sprintf("%s is not installed on the host (line %d: %s)", m[1], i+1, l))
		case mftError.MatchString(l):
			why = append(why, fmt.Sprintf("the tool failed (line %d: %s)", i+1, l))
		default:
			return ""
		}
	}
	return strings.Join(why, "; ")
}

// flintDeviceNote says that a flint output does not name its device.
func flintDeviceNote(file string, devs []FirmwareDevice) string {
	for _, d := range devs {
		if d.PCIName == "" {
			return fmt.Sprintf("device unknown: no flint -d command line in %s", path.Base(file))
		}
	}
	return ""
}
