// Package logrules turns log lines into named events. A rule is data: an
// event name, the driver or program that prints the line, a severity, a
// regular expression, a runbook anchor and how to find the device the line
// is about. An Engine compiles a table of rules once and matches lines
// against it cheaply: each rule carries a literal substring that must be
// present before its regular expression runs.
package logrules

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"

	"go.yaml.in/yaml/v2"

	"github.com/nic-exporter/nic_exporter/internal/safefile"
)

// Severity levels a rule may carry, most severe first.
const (
	SeverityCritical = "critical"
	SeverityError    = "error"
	SeverityWarning  = "warning"
	SeverityInfo     = "info"
)

// How a rule finds the device a line is about.
const (
	// DevicePCI takes the PCI address the line names, for example
	// 0000:08:00.0 from "mlx5_core 0000:08:00.0: ...".
	DevicePCI = "pci"
	// DeviceInterface takes the network interface from a netdev-prefixed
	// line such as "ena 0000:00:05.0 eth0: ...", falling back to the PCI
	// address when the line has no interface (the kmsg collector then
	// names the function's only interface, as the ethtool and netdev
	// series do).
	DeviceInterface = "interface"
	// DeviceName takes the device name the driver printed after its own
	// name, for example mlx5_0 from "infiniband mlx5_0: ...".
	DeviceName = "name"
	// DeviceNone means the line names no device.
	DeviceNone = "none"
)

// Rule is one log condition.
type Rule struct {
	// Event is the event name used as a label value, for example
	// "mlx5_fw_fatal". Several rules may share an event name.
	Event string `yaml:"event"`
	// Driver is the kernel driver or program that prints the line; it is
	// the driver label of kernel events.
	Driver string `yaml:"driver"`
	// Severity is one of critical, error, warning, info.
	Severity string `yaml:"severity"`
	// Regex is an RE2 regular expression matched against the message. A
	// named group "device" overrides Device; a named group "driver"
	// overrides Driver as the match's driver (for lines such as the
	// netdev watchdog's that any driver's device can print).
	Regex string `yaml:"regex"`
	// Runbook is the anchor of the rule's section in docs/runbooks.md.
	Runbook string `yaml:"runbook"`
	// Device says how to find the device: pci, interface, name or none.
	// Empty means pci.
	Device string `yaml:"device"`
	// Source names where the matched string is printed, for example a
	// driver source file; informational.
	Source string `yaml:"source"`
	// NICOnly marks events that any PCI function can log (PCIe AER,
	// IOMMU faults, PCIe bandwidth): the kmsg collector counts them only
	// when the device is not known to be something other than a network
	// or InfiniBand controller (see collector/kmsg Config.Devices).
	NICOnly bool `yaml:"nic_only"`
}

// Compiled is a Rule ready for matching.
type Compiled struct {
	Rule
	re       *regexp.Regexp
	literals []string
	devIdx   int // index of the "device" group, or -1
	drvIdx   int // index of the "driver" group, or -1
}

// Literals returns the substrings of which a line must contain one before
// the rule's regular expression runs; nil if none could be derived, in
// which case the regular expression runs on every line.
func (c *Compiled) Literals() []string { return c.literals }

// prefilter reports whether line can match c.
func (c *Compiled) prefilter(line string) bool {
	if c.literals == nil {
		return true
	}
	for _, l := range c.literals {
		if strings.Contains(line, l) {
			return true
		}
	}
	return false
}

// Engine matches lines against a compiled rule table. It is immutable and
// safe for concurrent use.
type Engine struct {
	rules []*Compiled
}

// Match is the result of matching one line.
type Match struct {
	Rule *Compiled
	// Driver is the rule's driver, or the text of its "driver" group.
	Driver string
	// Device is the device the line names, "" if none.
	Device string
}

var eventName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// Compile checks and compiles rules. Rules are tried in order and the first
// that matches a line wins.
func Compile(rules []Rule) (*Engine, error) {
	e := &Engine{rules: make([]*Compiled, 0, len(rules))}
	for i, r := range rules {
		c, err := compile(r)
		if err != nil {
			return nil, fmt.Errorf("rule %d (event %q): %w", i+1, r.Event, err)
		}
		e.rules = append(e.rules, c)
	}
	return e, nil
}

func compile(r Rule) (*Compiled, error) {
	if !eventName.MatchString(r.Event) {
		return nil, errors.New("event must be lower case letters, digits and _, starting with a letter")
	}
	if r.Driver == "" {
		return nil, errors.New("driver is required")
	}
	switch r.Severity {
	case SeverityCritical, SeverityError, SeverityWarning, SeverityInfo:
	default:
		return nil, fmt.Errorf("severity %q is not one of critical, error, warning, info", r.Severity)
	}
	switch r.Device {
	case "":
		r.Device = DevicePCI
	case DevicePCI, DeviceInterface, DeviceName, DeviceNone:
	default:
		return nil, fmt.Errorf("device %q is not one of pci, interface, name, none", r.Device)
	}
	if r.Regex == "" {
		return nil, errors.New("regex is required")
	}
	re, err := regexp.Compile(r.Regex)
	if err != nil {
		return nil, fmt.Errorf("regex: %w", err)
	}
	lits, err := requiredLiterals(r.Regex)
	if err != nil {
		return nil, fmt.Errorf("regex: %w", err)
	}
	return &Compiled{Rule: r, re: re, literals: lits, devIdx: re.SubexpIndex("device"), drvIdx: re.SubexpIndex("driver")}, nil
}

// requiredLiterals returns a set of case-sensitive literals of which every
// match of expr contains at least one, or nil if there is no such set (for
// example when a branch of an alternation has no literal, or under (?i)).
func requiredLiterals(expr string) ([]string, error) {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil, err
	}
	return literals(re.Simplify()), nil
}

func literals(re *syntax.Regexp) []string {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 || len(re.Rune) == 0 {
			return nil
		}
		return []string{string(re.Rune)}
	case syntax.OpCapture, syntax.OpPlus:
		return literals(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min > 0 {
			return literals(re.Sub[0])
		}
	case syntax.OpConcat:
		// Pick the operand whose shortest literal is the longest.
		var best []string
		for _, sub := range re.Sub {
			if l := literals(sub); l != nil && shortest(l) > shortest(best) {
				best = l
			}
		}
		return best
	case syntax.OpAlternate:
		var out []string
		for _, sub := range re.Sub {
			l := literals(sub)
			if l == nil {
				return nil
			}
			out = append(out, l...)
		}
		return out
	}
	return nil
}

func shortest(set []string) int {
	if len(set) == 0 {
		return 0
	}
	n := len(set[0])
	for _, s := range set[1:] {
		n = min(n, len(s))
	}
	return n
}

// Rules returns the compiled rules in matching order.
func (e *Engine) Rules() []*Compiled { return e.rules }

// Match returns the first rule that matches line and the device it names.
func (e *Engine) Match(line string) (Match, bool) {
	for _, c := range e.rules {
		if !c.prefilter(line) {
			continue
		}
		if c.devIdx < 0 && c.drvIdx < 0 {
			if !c.re.MatchString(line) {
				continue
			}
			return Match{Rule: c, Driver: c.Driver, Device: ExtractDevice(line, c.Device)}, true
		}
		m := c.re.FindStringSubmatchIndex(line)
		if m == nil {
			continue
		}
		group := func(i int) string {
			if i < 0 || m[2*i] < 0 {
				return ""
			}
			return line[m[2*i]:m[2*i+1]]
		}
		dev := group(c.devIdx)
		if dev == "" {
			dev = ExtractDevice(line, c.Device)
		}
		drv := group(c.drvIdx)
		if drv == "" {
			drv = c.Driver
		}
		return Match{Rule: c, Driver: drv, Device: dev}, true
	}
	return Match{}, false
}

// ExtractDevice finds the device a kernel log message names, as mode says.
// Kernel device messages start with "<driver> <device>[ <interface>]: "
// (dev_printk and netdev_printk); PCI mode also accepts a PCI address
// anywhere in the line. It returns "" when the line names no device.
func ExtractDevice(line, mode string) string {
	switch mode {
	case DeviceNone:
		return ""
	case DeviceName:
		_, dev, _ := header(line)
		return dev
	case DeviceInterface:
		_, dev, ifname := header(line)
		if ifname != "" {
			return ifname
		}
		if IsPCIAddress(dev) {
			return dev
		}
		return ""
	default:
		if _, dev, _ := header(line); IsPCIAddress(dev) {
			return dev
		}
		return FindPCIAddress(line)
	}
}

// header splits the dev_printk prefix "<driver> <device>[ <ifname>]: " of
// a kernel message. It returns empty strings when there is none. The
// netdev's registration state that netdev_printk appends ("eth0
// (unregistering)") is dropped, and so is the name of a netdev that has
// none yet ("(unnamed net_device) (uninitialized)", printed while the
// driver probes or resets the device): that line names the PCI function
// only.
func header(line string) (driver, dev, ifname string) {
	end := strings.Index(line, ": ")
	if end <= 0 {
		return "", "", ""
	}
	fields := strings.Fields(line[:end])
	for i := 2; i < len(fields); i++ {
		if strings.HasPrefix(fields[i], "(") {
			fields = fields[:i]
			break
		}
	}
	switch len(fields) {
	case 2:
		return fields[0], fields[1], ""
	case 3:
		return fields[0], fields[1], fields[2]
	}
	return "", "", ""
}

// IsPCIAddress reports whether s is a PCI address of the form
// dddd:bb:dd.f in hexadecimal.
func IsPCIAddress(s string) bool {
	if len(s) != 12 || s[4] != ':' || s[7] != ':' || s[10] != '.' {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch i {
		case 4, 7, 10:
			continue
		}
		if !isHex(s[i]) {
			return false
		}
	}
	return s[11] >= '0' && s[11] <= '7'
}

// FindPCIAddress returns the first PCI address in s, or "".
func FindPCIAddress(s string) string {
	for i := 0; i+12 <= len(s); i++ {
		j := strings.IndexByte(s[i:], ':')
		if j < 0 {
			return ""
		}
		start := i + j - 4
		if start >= 0 && start+12 <= len(s) && IsPCIAddress(s[start:start+12]) &&
			(start == 0 || !isHex(s[start-1])) {
			return s[start : start+12]
		}
		i += j
	}
	return ""
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// File is the layout of a rules file.
type File struct {
	Rules []Rule `yaml:"rules"`
}

// ParseFile parses the YAML rules in data. Unknown fields are errors so a
// misspelt key does not silently disable a rule.
func ParseFile(data []byte) ([]Rule, error) {
	var f File
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, err
	}
	if len(f.Rules) == 0 {
		return nil, errors.New("no rules: want a top-level list \"rules:\"")
	}
	return f.Rules, nil
}

// MaxFileSize is the largest rules file Load reads, 1 MiB: far more than
// any rule set, small enough that a wrong path (/dev/zero, a log file)
// fails at once.
const MaxFileSize = 1 << 20

// Load returns an Engine for the rules of the YAML file at path (tried
// first) followed by builtin. An empty path means builtin only. The file
// must be a regular file of at most MaxFileSize bytes; it is opened
// without blocking, so a FIFO fails at once. Any error names the file and
// the rule.
func Load(path string, builtin []Rule) (*Engine, error) {
	rules := builtin
	if path != "" {
		data, err := safefile.ReadRegular(path, MaxFileSize)
		if err != nil {
			return nil, fmt.Errorf("reading rules file: %w", err)
		}
		extra, err := ParseFile(data)
		if err != nil {
			return nil, fmt.Errorf("rules file %s: %w", path, err)
		}
		if _, err := Compile(extra); err != nil {
			return nil, fmt.Errorf("rules file %s: %w", path, err)
		}
		rules = append(append([]Rule(nil), extra...), builtin...)
	}
	return Compile(rules)
}
