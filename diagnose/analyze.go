package diagnose

import (
	"bytes"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/nic-exporter/nic_exporter/collector/kmsg"
	"github.com/nic-exporter/nic_exporter/internal/ethtooldump"
	"github.com/nic-exporter/nic_exporter/internal/logrules"
)

// Kinds of file diagnose recognises.
const (
	KindEthtoolDump   = "ethtool -i/-S"
	KindEthtoolLink   = "ethtool"
	KindDevlinkHealth = "devlink health show"
	KindIbstat        = "ibstat"
	KindLspci         = "lspci -vvv"
	KindMlxfwmanager  = "mlxfwmanager --query"
	KindKernelLog     = "kernel log"
	// KindDevlinkEvidence is an evidence file of the exporter's devlink
	// capture.
	KindDevlinkEvidence = "devlink evidence capture"
)

// FileResult says how one file of the bundle was read.
type FileResult struct {
	Name string `json:"name"`
	// Kind is empty for an ignored file.
	Kind string `json:"kind,omitempty"`
	// Note says why a file was ignored or could not be parsed.
	Note string `json:"note,omitempty"`
}

// addNote adds a note to the ones the file already has.
func (f *FileResult) addNote(note string) {
	if f.Note != "" {
		f.Note += "; "
	}
	f.Note += note
}

// Finding is one documented condition of one device.
type Finding struct {
	Condition string `json:"condition"`
	Device    string `json:"device"`
	Severity  string `json:"severity"`
	Alert     string `json:"alert"`
	Runbook   string `json:"runbook"`
	// Evidence is file:line, or file and the value read.
	Evidence string `json:"evidence"`
	Detail   string `json:"detail"`
}

// Report is what diagnose found in one bundle.
type Report struct {
	Source   string           `json:"source"`
	Files    []FileResult     `json:"files"`
	Findings []Finding        `json:"findings"`
	Firmware []FirmwareDevice `json:"firmware,omitempty"`

	// ethtool and kernel log inputs for the daemon's collectors.
	ethIfaces []*ethIface
	kmsgLines []string
	// pciClasses are the classes of the PCI functions lspci lists, by
	// full address, for the rules that count only NIC functions.
	pciClasses pciClasses
	// linesAnalysed counts the lines of all files given to recognition
	// and the parsers, within Limits.MaxBundleLines.
	linesAnalysed int
	// textBytesAnalysed counts their bytes, within
	// Limits.MaxBundleTextBytes.
	textBytesAnalysed int
	// aerCounted are the PCI functions whose AER counters a PCI sysfs
	// file holds (see dropCountedAERLogFindings).
	aerCounted map[string]bool
	// adminDown are the interfaces a netdev sysfs file shows
	// administratively down (see dropAdminDownLinkFindings).
	adminDown map[string]bool
}

// pciClasses implements kmsg.Devices over the functions of lspci -vvv:
// lspci prints class names, not numbers, so a function is a network
// controller (class 0x02), a bridge (0x06) or other.
type pciClasses map[string]uint32

// PCIClass implements kmsg.Devices.
func (p pciClasses) PCIClass(addr string) (uint32, bool) {
	c, ok := p[addr]
	return c, ok
}

// RDMAFunction implements kmsg.Devices; a bundle does not map RDMA
// device names to functions.
func (pciClasses) RDMAFunction(string) (string, bool) { return "", false }

// NetInterface implements kmsg.Devices; a bundle does not map functions
// to interfaces, so such lines keep the PCI address.
func (pciClasses) NetInterface(string) (string, bool) { return "", false }

// add records the class of each function lspci listed, by its full
// address (a domain-less address gets domain 0000).
func (p pciClasses) add(fns []PCIFunction) {
	for _, f := range fns {
		if f.Address == "" {
			continue
		}
		addr := f.Address
		if strings.Count(addr, ":") == 1 {
			addr = "0000:" + addr
		}
		d := strings.ToLower(f.Description)
		switch {
		case f.NetworkClass():
			p[addr] = 0x020000
		case strings.HasPrefix(d, "pci bridge"), strings.HasPrefix(d, "host bridge"):
			p[addr] = 0x060400
		default:
			p[addr] = 0xff0000
		}
	}
}

// ethIface is one interface's ethtool -i/-S input, gathered from the
// files of the bundle, and what was parsed from it.
type ethIface struct {
	name    string
	text    strings.Builder // ethtool -i then ethtool -S, as ethtooldump.Parse wants
	link    *LinkSettings
	dump    *ethtooldump.Dump
	statsAt map[string]string // statistic name -> file:line
	// results are the indexes of its files in Report.Files.
	results []int
}

// dumpFile is an ethtool -i/-S file and the index of its result in
// Report.Files.
type dumpFile struct {
	File
	result int
}

// Analyzer recognises the files of a bundle and names their findings.
type Analyzer struct {
	rules *logrules.Engine
}

// NewAnalyzer returns an Analyzer using the kernel log rules.
func NewAnalyzer(rules *logrules.Engine) *Analyzer {
	return &Analyzer{rules: rules}
}

// recogniseJSON returns the kind of a JSON document the whole of data
// is, or "". A JSON document is parsed whole, not in lines.
func recogniseJSON(data []byte) string {
	t := bytes.TrimSpace(data)
	switch {
	case !bytes.HasPrefix(t, []byte("{")):
		return ""
	case isCollectManifest(t):
		return KindCollectManifest
	case bytes.Contains(t, []byte(`"trigger"`)) && bytes.Contains(t, []byte(`"reporter"`)) && bytes.Contains(t, []byte(`"attributes"`)):
		return KindDevlinkEvidence
	case bytes.Contains(t, []byte(`"health"`)):
		return KindDevlinkHealth
	}
	return ""
}

// recognise returns the kind of a text file from its lines.
func (a *Analyzer) recognise(f File) string {
	ls := lines(f.Data)
	has := func(pred func(string) bool) bool {
		for _, l := range ls {
			if pred(strings.TrimSpace(l)) {
				return true
			}
		}
		return false
	}
	prefix := func(p string) func(string) bool {
		return func(l string) bool { return strings.HasPrefix(l, p) }
	}
	switch {
	case has(prefix("NIC statistics:")) || has(prefix("driver:")) && has(prefix("bus-info:")):
		return KindEthtoolDump
	case has(prefix("Settings for ")) && (has(prefix("Link detected:")) || has(prefix("Speed:"))):
		return KindEthtoolLink
	case has(prefix("CA '")) && has(prefix("Physical state:")):
		return KindIbstat
	case has(prefix("LnkSta:")) || has(prefix("LnkCap:")):
		return KindLspci
	case has(prefix("Device #")) && has(prefix("Versions:")):
		return KindMlxfwmanager
	case (has(prefix("reporter ")) || has(prefix("name "))) && has(prefix("state ")):
		return KindDevlinkHealth
	case has(pciSysfsLine.MatchString):
		return KindPCISysfs
	case has(netdevSysfsCarrier.MatchString):
		return KindNetdevSysfs
	case has(prefix("page addr=0x")):
		return KindModuleDump
	case has(prefix("driver ")) && has(prefix("versions:")):
		return KindDevlinkInfo
	}
	kernel := 0
	for _, l := range ls {
		msg := logrules.StripPrefix(l)
		if msg != l {
			kernel++
		}
		if _, ok := a.rules.Match(msg); ok {
			return KindKernelLog
		}
	}
	if len(ls) > 0 && kernel*2 >= len(ls) {
		return KindKernelLog
	}
	return ""
}

// sosIface is the interface in a sosreport name such as ethtool_-S_eth0.
var sosIface = regexp.MustCompile(`^ethtool_(?:-[a-zA-Z]_)?([A-Za-z0-9._-]+)$`)

// collectIface is the interface in a name nic_exporter collect writes,
// such as ethtool_-S_eth0.txt.
var collectIface = regexp.MustCompile(`^ethtool_-[iS]_([A-Za-z0-9._-]+)\.txt$`)

// bundleInputs are the files whose findings need the whole bundle read
// first: kernel logs (after lspci, for the PCI classes), ethtool -i/-S
// files (grouped by interface) and ethtool link outputs (which name the
// default interface).
type bundleInputs struct {
	kernelLogs []File
	dumps      []dumpFile
	links      []*LinkSettings
}

// Analyze reads every file of b and returns the findings. It analyses
// at most b.Limits' lines of each file and of the bundle, each at most
// b.Limits.MaxLineBytes long, and notes what it passed over. The steps:
// each file is recognised, parsed and given its own findings (readFile);
// then the kernel logs are matched against the rules; then the ethtool
// -i/-S files are grouped by interface and analysed together; last the
// findings are sorted by severity, alert and device.
func (a *Analyzer) Analyze(b *Bundle) *Report {
	r := &Report{Source: b.Source, Findings: []Finding{}, pciClasses: pciClasses{}}
	lim := b.Limits.withDefaultWork()
	var in bundleInputs
	for _, f := range b.Files {
		a.readFile(r, f, lim, &in)
	}
	for _, f := range in.kernelLogs {
		a.kernelFindings(r, f)
	}
	dropCountedAERLogFindings(r)
	dropAdminDownLinkFindings(r)
	ifaces := groupDumps(r, in.dumps, defaultInterface(in.links))
	for _, ls := range in.links {
		if it := ifaces[ls.Interface]; it != nil {
			it.link = ls
		}
	}
	a.analyseInterfaces(r, ifaces)
	sortFindings(r.Findings)
	return r
}

// readFile recognises one file of the bundle, parses it and adds its
// findings and its FileResult to r; files whose findings need the whole
// bundle go to in. A JSON document is parsed whole (encoding/json, in one
// pass); text is analysed in lines, within the limits lim, counted
// against the bundle's totals in r.
func (a *Analyzer) readFile(r *Report, f File, lim Limits, in *bundleInputs) {
	if strings.HasPrefix(f.Name, earlierSampleDir) {
		r.Files = append(r.Files, FileResult{Name: f.Name,
			Note: "earlier sample of nic_exporter collect: findings come from the later sample at the top level"})
		return
	}
	kind := recogniseJSON(f.Data)
	var cut fileText
	if kind == "" {
		cut = analysedText(f.Data, lim, lim.MaxBundleLines-r.linesAnalysed, lim.MaxBundleTextBytes-r.textBytesAnalysed)
		r.linesAnalysed += cut.lines
		r.textBytesAnalysed += len(cut.data)
		f.Data = cut.data
		if cut.lines > 0 {
			kind = a.recognise(f)
		}
	}
	res := FileResult{Name: f.Name, Kind: kind}
	if kind == "" && (cut.lines > 0 || cut.note == "") {
		res.Note = "ignored: not a format diagnose reads"
	}
	if err := a.parseFile(r, f, kind, &res, in); err != nil {
		res.addNote("unparsable: " + err.Error())
	}
	if cut.note != "" {
		res.addNote(cut.note)
	}
	r.Files = append(r.Files, res)
}

// parseFile parses f as a file of the given kind and adds its findings
// (or its firmware inventory) to r, or queues it in in when its findings
// need the whole bundle. Notes about the file go to res, the result that
// readFile appends to r.Files next; the error is the parser's.
func (a *Analyzer) parseFile(r *Report, f File, kind string, res *FileResult, in *bundleInputs) error {
	switch kind {
	case KindEthtoolDump:
		in.dumps = append(in.dumps, dumpFile{f, len(r.Files)})
	case KindEthtoolLink:
		ls, err := ParseLinkSettings(string(f.Data))
		if err != nil {
			return err
		}
		in.links = append(in.links, ls)
		a.linkFindings(r, f.Name, ls)
	case KindDevlinkHealth:
		reps, err := ParseDevlinkHealth(string(f.Data))
		if err != nil {
			return err
		}
		a.devlinkFindings(r, f.Name, reps)
	case KindDevlinkEvidence:
		reps, err := ParseDevlinkEvidence(string(f.Data))
		if err != nil {
			return err
		}
		a.devlinkFindings(r, f.Name, reps)
	case KindIbstat:
		ports, err := ParseIbstat(string(f.Data))
		if err != nil {
			return err
		}
		a.ibFindings(r, f.Name, ports)
	case KindLspci:
		fns, err := ParseLspci(string(f.Data))
		if err != nil {
			return err
		}
		a.pciFindings(r, f.Name, fns)
		r.pciClasses.add(fns)
		for _, fn := range fns {
			for _, why := range fn.Rejected {
				res.addNote("not compared: " + why)
			}
		}
	case KindMlxfwmanager:
		devs, err := ParseMlxfwmanager(string(f.Data))
		if err != nil {
			return err
		}
		r.Firmware = append(r.Firmware, devs...)
	case KindKernelLog:
		in.kernelLogs = append(in.kernelLogs, f) // after lspci
	case KindPCISysfs:
		fns, err := ParsePCISysfs(string(f.Data))
		if err != nil {
			return err
		}
		a.pciSysfsFindings(r, f.Name, fns)
	case KindNetdevSysfs:
		ifs, err := ParseNetdevSysfs(string(f.Data))
		if err != nil {
			return err
		}
		a.netdevSysfsFindings(r, f.Name, ifs)
	case KindModuleDump:
		return a.moduleFindings(r, f.Name, string(f.Data))
	case KindDevlinkInfo:
		devs, err := ParseDevlinkInfo(string(f.Data))
		if err != nil {
			return err
		}
		r.Firmware = append(r.Firmware, devs...)
	}
	return nil
}

// defaultInterface returns the interface of an ethtool -i/-S file whose
// name does not say it: the interface of the only `ethtool DEV` output,
// or eth0, the interface collect_debug.sh reads.
func defaultInterface(links []*LinkSettings) string {
	if len(links) == 1 {
		return links[0].Interface
	}
	return "eth0"
}

// groupDumps parses each ethtool -i/-S file on its own, so one that does
// not parse costs only itself (noted in r.Files), and groups the others
// by interface: the one its name gives the way sosreport does
// (ethtool_-S_eth0), else defName.
func groupDumps(r *Report, dumps []dumpFile, defName string) map[string]*ethIface {
	ifaces := map[string]*ethIface{}
	for _, df := range dumps {
		f := df.File
		if _, err := ethtooldump.Parse(bytes.NewReader(f.Data)); err != nil {
			r.Files[df.result].addNote("unparsable: " + err.Error())
			continue
		}
		name := defName
		if m := collectIface.FindStringSubmatch(path.Base(f.Name)); m != nil {
			name = m[1]
		} else if m := sosIface.FindStringSubmatch(path.Base(f.Name)); m != nil && m[1] != "S" && m[1] != "i" {
			name = m[1]
		}
		it := ifaces[name]
		if it == nil {
			it = &ethIface{name: name, statsAt: map[string]string{}}
			ifaces[name] = it
		}
		it.results = append(it.results, df.result)
		it.addDump(f)
	}
	return ifaces
}

// addDump adds one ethtool -i or -S file to the interface's text, ethtool
// -i lines first: ethtooldump.Parse reads the driver fields, then the
// statistics after "NIC statistics:". It records the file and line of
// each statistic for the evidence.
func (it *ethIface) addDump(f File) {
	if strings.Contains(string(f.Data), "NIC statistics:") {
		it.text.WriteString(string(f.Data) + "\n")
		for i, l := range lines(f.Data) {
			k, _, ok := strings.Cut(strings.TrimSpace(l), ":")
			if ok {
				it.statsAt[k] = fmt.Sprintf("%s:%d", f.Name, i+1)
			}
		}
		return
	}
	s := it.text.String()
	it.text.Reset()
	it.text.WriteString(string(f.Data) + "\n" + s)
}

// analyseInterfaces parses the ethtool -i/-S text of each interface, in
// name order, keeps it for the daemon's collectors and adds its findings;
// an interface whose files do not parse together gets a note on each of
// them.
func (a *Analyzer) analyseInterfaces(r *Report, ifaces map[string]*ethIface) {
	names := make([]string, 0, len(ifaces))
	for n := range ifaces {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		it := ifaces[n]
		d, err := ethtooldump.Parse(strings.NewReader(it.text.String()))
		if err != nil {
			for _, i := range it.results {
				r.Files[i].addNote("unparsable together with the other ethtool -i/-S files of " + n + ": " + err.Error())
			}
			continue
		}
		it.dump = d
		r.ethIfaces = append(r.ethIfaces, it)
		a.ethtoolFindings(r, it)
	}
}

// sortFindings orders findings by severity (pages first), then alert,
// then device, keeping the order of equal ones.
func sortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		x, y := fs[i], fs[j]
		if x.Severity != y.Severity {
			return severityRank(x.Severity) < severityRank(y.Severity)
		}
		if x.Alert != y.Alert {
			return x.Alert < y.Alert
		}
		return x.Device < y.Device
	})
}

// severityRank orders severities: page, then warning, then the rest.
func severityRank(s string) int {
	switch s {
	case SeverityPage:
		return 0
	case SeverityWarning:
		return 1
	}
	return 2
}

// add adds a finding of alert a to the report.
func (r *Report) add(a Alert, condition, device, evidence, detail string) {
	r.Findings = append(r.Findings, Finding{Condition: condition, Device: device, Severity: a.Severity,
		Alert: a.Name, Runbook: a.Runbook(), Evidence: evidence, Detail: detail})
}

// linkFindings adds a link-down finding for an ethtool output that says
// no link was detected.
func (a *Analyzer) linkFindings(r *Report, file string, ls *LinkSettings) {
	if ls.HasDetected && !ls.Detected {
		r.add(alertLinkDown, "link_down", ls.Interface, fmt.Sprintf("%s:%d", file, ls.DetectedLine),
			"ethtool reports \"Link detected: no\": no carrier.")
	}
}

// devlinkFindings adds the findings of devlink health reporters with an
// alert: a reporter in error (and stuck, without auto-recovery), or a
// healthy one that counted errors since boot (more than two for tx and
// rx, which recover routinely).
func (a *Analyzer) devlinkFindings(r *Report, file string, reps []Reporter) {
	for _, rep := range reps {
		ev := file
		if rep.Line > 0 {
			ev = fmt.Sprintf("%s:%d", file, rep.Line)
		}
		dev := rep.Device + " reporter " + rep.Name
		al, ok := devlinkAlert(rep.Name)
		if !ok {
			// A reporter with no alert of its own (ice's port or mdd,
			// another driver's): the daemon's NICDevlinkReporterStuck
			// fires for any reporter that stays in error.
			if rep.State != "" && rep.State != "healthy" {
				r.add(alertReporterStuck, "devlink_reporter_in_error", dev, ev,
					fmt.Sprintf("reporter %s is in state %q (error %d, recover %d since boot); the exporter alerts when a reporter stays in error for 15 minutes.", rep.Name, rep.State, rep.Errors, rep.Recover))
			}
			continue
		}
		switch {
		case rep.State != "" && rep.State != "healthy":
			r.add(al, "devlink_reporter_"+rep.Name+"_in_error", dev, ev,
				fmt.Sprintf("reporter %s is in state %q (error %d, recover %d since boot).", rep.Name, rep.State, rep.Errors, rep.Recover))
			if rep.AutoRecover != nil && !*rep.AutoRecover {
				r.add(alertReporterStuck, "devlink_reporter_stuck", dev, ev,
					fmt.Sprintf("reporter %s is in error with auto_recover false: the driver will not recover it.", rep.Name))
			}
		case rep.Errors > 0 && (al != alertTxRx || rep.Errors > 2):
			r.add(al, "devlink_reporter_"+rep.Name+"_errors", dev, ev,
				fmt.Sprintf("reporter %s counted %d errors and %d recoveries since boot; it is healthy now.", rep.Name, rep.Errors, rep.Recover))
		}
	}
}

// ibFindings adds the findings of InfiniBand ports whose physical link is
// not up, or up but not activated by a subnet manager.
func (a *Analyzer) ibFindings(r *Report, file string, ports []IBPort) {
	for _, p := range ports {
		if p.LinkLayer != "InfiniBand" {
			continue
		}
		dev := fmt.Sprintf("%s port %d", p.CA, p.Port)
		ev := fmt.Sprintf("%s:%d", file, p.Line)
		switch {
		case p.PhysicalState != "" && p.PhysicalState != "LinkUp":
			r.add(alertIBNotLinkUp, "infiniband_port_not_linkup", dev, ev,
				fmt.Sprintf("physical state %s (state %s) instead of LinkUp.", p.PhysicalState, p.State))
		case p.PhysicalState == "LinkUp" && p.State != "" && p.State != "Active":
			r.add(alertIBNotActive, "infiniband_port_not_active", dev, ev,
				fmt.Sprintf("physical link up but state %s: no subnet manager has activated the port.", p.State))
		}
	}
}

// pciFindings adds the findings of network functions whose PCIe link
// trained below its capability or whose device status has an
// uncorrectable error bit set.
func (a *Analyzer) pciFindings(r *Report, file string, fns []PCIFunction) {
	for _, f := range fns {
		if !f.NetworkClass() {
			continue
		}
		dev := f.Address
		if dev == "" {
			dev = "(PCI function not named in the excerpt)"
		}
		if f.LinkDegraded() {
			r.add(alertPCIeDegraded, "pcie_link_degraded", dev, fmt.Sprintf("%s:%d", file, f.LnkStaLine),
				fmt.Sprintf("LnkSta %gGT/s x%d below LnkCap %gGT/s x%d.", f.StaSpeedGTs, f.StaWidth, f.CapSpeedGTs, f.CapWidth))
		}
		// CorrErr and UnsupReq are set on healthy functions (config
		// space probing sets UnsupReq); the uncorrectable bits are what
		// the AER alert covers.
		var unc []string
		for _, b := range f.DevStaErrors {
			switch b {
			case "NonFatalErr", "UncorrErr", "FatalErr":
				unc = append(unc, b)
			}
		}
		if len(unc) > 0 {
			r.add(alertPCIeUncorrected, "pcie_device_status_error", dev, fmt.Sprintf("%s:%d", file, f.DevStaLine),
				"DevSta has "+strings.Join(unc, "+ ")+"+ set: an uncorrectable error was detected since the bits were last cleared.")
		}
	}
}

// enaCounters are the ENA device counters whose alert fires on any
// increase; in a snapshot any non-zero value is one since boot.
var enaCounters = []struct {
	stat  string
	alert Alert
}{
	{"wd_expired", alertENAWatchdog},
	{"tx_timeout", alertENATxTimeout},
	{"admin_q_pause", alertENAAdminQPause},
}

// ethtoolFindings adds a finding for each ENA device counter of the
// interface that is not zero (an interface of another driver has none).
func (a *Analyzer) ethtoolFindings(r *Report, it *ethIface) {
	if it.dump.Driver != "" && it.dump.Driver != "ena" {
		return
	}
	for _, c := range enaCounters {
		i := it.dump.Index(c.stat)
		if i < 0 || it.dump.Values[i] == 0 {
			continue
		}
		r.add(c.alert, "ena_"+c.stat, it.name, it.statsAt[c.stat],
			fmt.Sprintf("%s = %d since boot (ethtool -S).", c.stat, it.dump.Values[i]))
	}
}

// enaStatLine is a line of the statistics the ENA driver prints to the
// kernel log after a reset: "ena 0000:00:05.0 eth0: wd_expired: 1".
var enaStatLine = regexp.MustCompile(`^ena (\S+) (\S+): (wd_expired|tx_timeout|admin_q_pause): (\d+)$`)

// kernelFindings keeps the messages of kernel log f for the daemon's
// collectors and adds a finding per alert, device and event it matched,
// with the first line as evidence and the count of lines: the ENA
// driver's statistics dump after a reset, and the lines the log rules
// map to an alert (for NIC functions only when lspci did not show the
// function to be something else).
func (a *Analyzer) kernelFindings(r *Report, f File) {
	type key struct{ alert, device, event string }
	type agg struct {
		n     int
		first string
		al    Alert
	}
	found := map[key]*agg{}
	var order []key
	note := func(k key, al Alert, ev string) {
		g := found[k]
		if g == nil {
			g = &agg{first: ev, al: al}
			found[k] = g
			order = append(order, k)
		}
		g.n++
	}
	for i, l := range lines(f.Data) {
		msg := strings.TrimSpace(logrules.StripPrefix(l))
		if msg == "" {
			continue
		}
		r.kmsgLines = append(r.kmsgLines, msg)
		if e, ok := a.matchKernelLine(r, msg); ok {
			note(key{e.alert.Name, e.device, e.event}, e.alert, fmt.Sprintf("%s:%d", f.Name, i+1))
		}
	}
	for _, k := range order {
		g := found[k]
		detail := fmt.Sprintf("kernel log event %s, %d line(s) in this log.", k.event, g.n)
		if g.al == alertENAWatchdog || g.al == alertENATxTimeout || g.al == alertENAAdminQPause {
			detail = fmt.Sprintf("the ENA driver's statistics dump after a reset shows %s > 0 since boot.", strings.TrimPrefix(k.event, "ena_"))
		}
		r.add(g.al, k.event, k.device, g.first, detail)
	}
}

// kernelEvent is what one kernel log line counts for: an alert, the
// device and the event.
type kernelEvent struct {
	alert         Alert
	device, event string
}

// matchKernelLine returns the event a kernel log message counts for, if
// any: a non-zero counter of the ENA driver's statistics dump, or a line
// a log rule maps to an alert. As in the kmsg collector, a rule for NIC
// functions only does not count a function lspci shows to be something
// else.
func (a *Analyzer) matchKernelLine(r *Report, msg string) (kernelEvent, bool) {
	if m := enaStatLine.FindStringSubmatch(msg); m != nil {
		if n, _ := strconv.ParseUint(m[4], 10, 64); n > 0 {
			for _, c := range enaCounters {
				if c.stat == m[3] {
					return kernelEvent{c.alert, m[2], "ena_" + c.stat}, true
				}
			}
		}
		return kernelEvent{}, false
	}
	m, ok := a.rules.Match(msg)
	if !ok {
		return kernelEvent{}, false
	}
	if m.Rule.NICOnly && logrules.IsPCIAddress(m.Device) {
		if class, ok := r.pciClasses.PCIClass(m.Device); ok && !kmsg.IsNICClass(class) {
			return kernelEvent{}, false
		}
	}
	al, ok := kernelLogAlert(m.Rule.Event)
	if !ok {
		return kernelEvent{}, false
	}
	return kernelEvent{al, m.Device, m.Rule.Event}, true
}
