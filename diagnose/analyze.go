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

// Analyze reads every file of b and returns the findings. It analyses
// at most b.Limits' lines of each file and of the bundle, each at most
// b.Limits.MaxLineBytes long, and notes what it passed over.
func (a *Analyzer) Analyze(b *Bundle) *Report {
	r := &Report{Source: b.Source, Findings: []Finding{}, pciClasses: pciClasses{}}
	lim := b.Limits.withDefaultWork()
	var kernelLogs []File
	ifaces := map[string]*ethIface{}
	var dumps []dumpFile
	var links []*LinkSettings
	for _, f := range b.Files {
		// A JSON document is parsed whole (encoding/json, in one pass);
		// text is analysed in lines, within the limits.
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
		var err error
		switch kind {
		case "":
			if cut.lines > 0 || cut.note == "" {
				res.Note = "ignored: not a format diagnose reads"
			}
		case KindEthtoolDump:
			dumps = append(dumps, dumpFile{f, len(r.Files)})
		case KindEthtoolLink:
			var ls *LinkSettings
			if ls, err = ParseLinkSettings(string(f.Data)); err == nil {
				links = append(links, ls)
				a.linkFindings(r, f.Name, ls)
			}
		case KindDevlinkHealth:
			var reps []Reporter
			if reps, err = ParseDevlinkHealth(string(f.Data)); err == nil {
				a.devlinkFindings(r, f.Name, reps)
			}
		case KindDevlinkEvidence:
			var reps []Reporter
			if reps, err = ParseDevlinkEvidence(string(f.Data)); err == nil {
				a.devlinkFindings(r, f.Name, reps)
			}
		case KindIbstat:
			var ports []IBPort
			if ports, err = ParseIbstat(string(f.Data)); err == nil {
				a.ibFindings(r, f.Name, ports)
			}
		case KindLspci:
			var fns []PCIFunction
			if fns, err = ParseLspci(string(f.Data)); err == nil {
				a.pciFindings(r, f.Name, fns)
				r.pciClasses.add(fns)
				for _, fn := range fns {
					for _, why := range fn.Rejected {
						res.addNote("not compared: " + why)
					}
				}
			}
		case KindMlxfwmanager:
			var devs []FirmwareDevice
			if devs, err = ParseMlxfwmanager(string(f.Data)); err == nil {
				r.Firmware = append(r.Firmware, devs...)
			}
		case KindKernelLog:
			kernelLogs = append(kernelLogs, f) // after lspci
		}
		if err != nil {
			res.addNote("unparsable: " + err.Error())
		}
		if cut.note != "" {
			res.addNote(cut.note)
		}
		r.Files = append(r.Files, res)
	}
	for _, f := range kernelLogs {
		a.kernelFindings(r, f)
	}
	// An ethtool -i/-S file names its interface the way sosreport does
	// (ethtool_-S_eth0); otherwise it is the interface of the only
	// `ethtool DEV` output, or eth0, the interface collect_debug.sh reads.
	defName := "eth0"
	if len(links) == 1 {
		defName = links[0].Interface
	}
	for _, df := range dumps {
		f := df.File
		// Each file parses on its own first, so one that does not costs
		// only itself.
		if _, err := ethtooldump.Parse(bytes.NewReader(f.Data)); err != nil {
			r.Files[df.result].addNote("unparsable: " + err.Error())
			continue
		}
		name := defName
		if m := sosIface.FindStringSubmatch(path.Base(f.Name)); m != nil && m[1] != "S" && m[1] != "i" {
			name = m[1]
		}
		it := ifaces[name]
		if it == nil {
			it = &ethIface{name: name, statsAt: map[string]string{}}
			ifaces[name] = it
		}
		it.results = append(it.results, df.result)
		// ethtool -i lines first: ethtooldump.Parse reads the driver
		// fields, then the statistics after "NIC statistics:".
		if strings.Contains(string(f.Data), "NIC statistics:") {
			it.text.WriteString(string(f.Data) + "\n")
			for i, l := range lines(f.Data) {
				k, _, ok := strings.Cut(strings.TrimSpace(l), ":")
				if ok {
					it.statsAt[k] = fmt.Sprintf("%s:%d", f.Name, i+1)
				}
			}
		} else {
			s := it.text.String()
			it.text.Reset()
			it.text.WriteString(string(f.Data) + "\n" + s)
		}
	}
	for _, ls := range links {
		if it := ifaces[ls.Interface]; it != nil {
			it.link = ls
		}
	}
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
	sort.SliceStable(r.Findings, func(i, j int) bool {
		x, y := r.Findings[i], r.Findings[j]
		if x.Severity != y.Severity {
			return severityRank(x.Severity) < severityRank(y.Severity)
		}
		if x.Alert != y.Alert {
			return x.Alert < y.Alert
		}
		return x.Device < y.Device
	})
	return r
}

func severityRank(s string) int {
	switch s {
	case SeverityPage:
		return 0
	case SeverityWarning:
		return 1
	}
	return 2
}

func (r *Report) add(a Alert, condition, device, evidence, detail string) {
	r.Findings = append(r.Findings, Finding{Condition: condition, Device: device, Severity: a.Severity,
		Alert: a.Name, Runbook: a.Runbook(), Evidence: evidence, Detail: detail})
}

func (a *Analyzer) linkFindings(r *Report, file string, ls *LinkSettings) {
	if ls.HasDetected && !ls.Detected {
		r.add(alertLinkDown, "link_down", ls.Interface, fmt.Sprintf("%s:%d", file, ls.DetectedLine),
			"ethtool reports \"Link detected: no\": no carrier.")
	}
}

func (a *Analyzer) devlinkFindings(r *Report, file string, reps []Reporter) {
	for _, rep := range reps {
		al, ok := devlinkAlert(rep.Name)
		if !ok {
			continue
		}
		ev := file
		if rep.Line > 0 {
			ev = fmt.Sprintf("%s:%d", file, rep.Line)
		}
		dev := rep.Device + " reporter " + rep.Name
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
		ev := fmt.Sprintf("%s:%d", f.Name, i+1)
		if m := enaStatLine.FindStringSubmatch(msg); m != nil {
			if n, _ := strconv.ParseUint(m[4], 10, 64); n > 0 {
				for _, c := range enaCounters {
					if c.stat == m[3] {
						note(key{c.alert.Name, m[2], "ena_" + c.stat}, c.alert, ev)
					}
				}
			}
			continue
		}
		m, ok := a.rules.Match(msg)
		if !ok {
			continue
		}
		// As the kmsg collector: a rule for NIC functions only does not
		// count a function lspci shows to be something else.
		if m.Rule.NICOnly && logrules.IsPCIAddress(m.Device) {
			if class, ok := r.pciClasses.PCIClass(m.Device); ok && !kmsg.IsNICClass(class) {
				continue
			}
		}
		al, ok := kernelLogAlert(m.Rule.Event)
		if !ok {
			continue
		}
		note(key{al.Name, m.Device, m.Rule.Event}, al, ev)
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
