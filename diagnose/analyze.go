package diagnose

import (
	"bytes"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/internal/ethtooldump"
	"github.com/nic-exporter/nic_exporter/internal/logrules"
	"github.com/nic-exporter/nic_exporter/internal/ruleeval"
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
	KindUptime        = "/proc/uptime"
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

// Finding is one sample an alerting rule of alerts.yml returned over the
// bundle's series: the alert, its severity and runbook from the rule,
// the device, and the series it read with the file and line of each.
type Finding struct {
	// Condition is the alert's summary, expanded for the sample.
	Condition string `json:"condition"`
	Device    string `json:"device"`
	Severity  string `json:"severity"`
	Alert     string `json:"alert"`
	Runbook   string `json:"runbook"`
	// Evidence lists the series the alert read for this device, each
	// with its value and the file:line it was read from.
	Evidence string `json:"evidence"`
	// Detail says what the expression returned and how the bundle's
	// time was treated (since boot, "for:"); the alert's description
	// speaks of windows a bundle does not have.
	Detail string `json:"detail"`
	// View is the view of the bundle's time the alert fired in:
	// ViewBetweenSamples or ViewSinceBoot (findings.go).
	View string `json:"view"`
	// Labels are the labels of the sample the alert's expression
	// returned, without job and instance.
	Labels map[string]string `json:"labels,omitempty"`
}

// Report is what diagnose found in one bundle.
type Report struct {
	Source   string           `json:"source"`
	Files    []FileResult     `json:"files"`
	Findings []Finding        `json:"findings"`
	Firmware []FirmwareDevice `json:"firmware,omitempty"`
	// Host is the kernel and distribution the bundle names.
	Host Host `json:"host,omitzero"`
	// Uptime is the time since boot the counters are averaged over.
	Uptime Uptime `json:"uptime"`

	// ethtool and kernel log inputs for the daemon's collectors.
	ethIfaces []*ethIface
	kmsgLines []string
	// series are the samples diagnose exports itself (series.go).
	series bundleSeries
	// phy are the link states, FEC and module memories of the sample, for
	// the daemon's phy collector (physource.go).
	phy phyInputs
	// kernelEvidence is the first line of each kernel log event, by
	// device and event.
	kernelEvidence map[[2]string]string
	// enaStats are the ENA statistics the driver dumps to the kernel
	// log after a reset, by interface.
	enaStats map[string][]enaStat
	// uptimeFromProc is set once /proc/uptime was read.
	uptimeFromProc bool
	// pciClasses are the classes of the PCI functions lspci lists, by
	// full address, for the rules that count only NIC functions.
	pciClasses pciClasses
	// linesAnalysed counts the lines of all files given to recognition
	// and the parsers, within Limits.MaxBundleLines.
	linesAnalysed int
	// textBytesAnalysed counts their bytes, within
	// Limits.MaxBundleTextBytes.
	textBytesAnalysed int
	// rdmaFiles are the RDMA counters read, as the sysfs files of the
	// infiniband collector.
	rdmaFiles []rdmaFile
	// exporter are the exporter's own /metrics files of the sample.
	exporter []exporterFile
	// hwmon are the sample's hwmon sysfs files, for the netdev
	// collector's temperature reading.
	hwmon []hwmonInput
	// statsFiles are the applications' libvma and libxlio statistics
	// files, decoded, for the vma and xlio collectors (vma.go).
	statsFiles []statsFile
	// diagnoses are what the reporters' devlink health diagnose or dump
	// outputs printed, for the reporters' findings.
	diagnoses []diagnosisEvidence
	// manifest is collect's manifest.json, when the bundle has one.
	manifest *collectManifest
	// earlier is the report of collect's first sample (earlier_sample/),
	// and earlierAt how long before the bundle's time it was taken.
	earlier   *Report
	earlierAt time.Duration
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
	// results are the indexes of its files in Report.Files, files their
	// names.
	results []int
	files   []string
	// hasStats and hasInfo say whether an ethtool -S and an ethtool -i
	// output were read for it.
	hasStats, hasInfo bool
}

// dumpFile is an ethtool -i/-S file and the index of its result in
// Report.Files.
type dumpFile struct {
	File
	result int
}

// Analyzer recognises the files of a bundle, turns them into the series
// the daemon would export and evaluates the alerting rules over them.
type Analyzer struct {
	rules  *logrules.Engine
	alerts *ruleeval.Rules
	log    *zap.Logger
}

// NewAnalyzer returns an Analyzer using the kernel log rules and the
// alerting rules (ruleeval.Shipped for the shipped ones).
func NewAnalyzer(rules *logrules.Engine, alerts *ruleeval.Rules, log *zap.Logger) *Analyzer {
	if log == nil {
		log = zap.NewNop()
	}
	return &Analyzer{rules: rules, alerts: alerts, log: log}
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
	case isExporterMetrics(ls):
		return KindExporterMetrics
	case isUname(f.Name, ls):
		return KindUname
	case isOSRelease(ls):
		return KindOSRelease
	case has(prefix("NIC statistics:")) || has(prefix("driver:")) && has(prefix("bus-info:")):
		return KindEthtoolDump
	case has(prefix("Settings for ")) && (has(prefix("Link detected:")) || has(prefix("Speed:"))):
		return KindEthtoolLink
	case has(prefix("FEC parameters for ")) && has(prefix("Active FEC encoding:")):
		return KindEthtoolFEC
	case has(prefix("CA '")) && has(prefix("Physical state:")):
		return KindIbstat
	case has(prefix("LnkSta:")) || has(prefix("LnkCap:")):
		return KindLspci
	case has(prefix("Device #")) && has(prefix("Versions:")):
		return KindMlxfwmanager
	case len(ls) == 1 && uptimeFile.MatchString(ls[0]):
		return KindUptime
	case (has(prefix("reporter ")) || has(prefix("name "))) && has(prefix("state ")) || has(devlinkOneLine.MatchString):
		return KindDevlinkHealth
	case isDevlinkDiagnose(f.Name, ls):
		return KindDevlinkDiagnose
	case has(pciSysfsLine.MatchString):
		return KindPCISysfs
	case has(netdevSysfsCarrier.MatchString):
		return KindNetdevSysfs
	case has(hwmonSysfsLine.MatchString):
		return KindHwmonSysfs
	case has(prefix("Adapter: ")) && has(isSensorsMlx5Chip):
		return KindSensors
	case has(prefix("page addr=0x")):
		return KindModuleDump
	case has(prefix("driver ")) && has(prefix("versions:")):
		return KindDevlinkInfo
	case isRDMACounters(f.Name, ls):
		return KindRDMACounters
	case isRDMAValues(f.Name, ls):
		return KindRDMACounterValues
	case has(prefix("Image type:")) && (has(prefix("FW Version:")) || has(prefix("PSID:"))):
		return KindFlintQuery
	case toolFailure(ls) != "":
		return KindToolFailure
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

// bundleInputs are the files whose series need the whole bundle read
// first: kernel logs (after lspci, for the PCI classes), ethtool -i/-S
// files (grouped by interface) and ethtool link outputs (which name the
// default interface).
type bundleInputs struct {
	kernelLogs []File
	dumps      []dumpFile
	links      []linkAt
	rdma       []dumpFile
}

// Analyze reads every file of b and returns the findings. It analyses
// at most b.Limits' lines of each file and of the bundle, each at most
// b.Limits.MaxLineBytes long, and notes what it passed over. The steps:
// the sample at the top level is read (readSample), and collect's
// earlier sample under earlier_sample/ when the manifest says when it was
// taken (readEarlierSample); then each sample becomes series (the
// daemon's ethtool, kmsg and infiniband collectors over those inputs,
// and the series of the other tool outputs, series.go), the earlier
// sample's values the first observation of the later's series, and the
// alerting rules are evaluated over them (findings.go); last the
// findings are sorted (sortFindings).
func (a *Analyzer) Analyze(b *Bundle) *Report {
	var top, earlier []File
	for _, f := range b.Files {
		if rest, ok := strings.CutPrefix(f.Name, earlierSampleDir); ok {
			f.Name = rest
			earlier = append(earlier, f)
			continue
		}
		top = append(top, f)
	}
	r := a.readSample(b.Source, top, b.Limits, 0, 0)
	if len(earlier) > 0 {
		a.readEarlierSample(r, earlier, b.Limits)
	}
	a.evaluate(r)
	attachDiagnoses(r)
	sortFindings(r.Findings)
	return r
}

// readSample reads the files of one sample: each is recognised and
// parsed (readFile); the kernel logs are read after lspci (for the PCI
// classes); the ethtool -i/-S files are grouped by interface and the
// RDMA counters placed by the manifest; the uptime is the manifest's,
// else /proc/uptime's, else the latest kernel log timestamp past the
// default. linesUsed and bytesUsed are what other samples of the bundle
// analysed already, counted against the bundle's limits.
func (a *Analyzer) readSample(source string, files []File, limits Limits, linesUsed, bytesUsed int) *Report {
	r := &Report{Source: source, Findings: []Finding{}, pciClasses: pciClasses{},
		kernelEvidence: map[[2]string]string{}, enaStats: map[string][]enaStat{},
		linesAnalysed: linesUsed, textBytesAnalysed: bytesUsed}
	lim := limits.withDefaultWork()
	var in bundleInputs
	for _, f := range files {
		a.readFile(r, f, lim, &in)
	}
	for _, f := range in.kernelLogs {
		a.readKernelLog(r, f)
	}
	resolveStatsProcesses(r.statsFiles, r.manifest, "")
	for _, df := range in.rdma {
		dir, ok := rdmaDir(df.Name, r.manifest)
		if !ok {
			r.Files[df.result].addNote("unparsable: the file name does not say the RDMA device and port")
			continue
		}
		fs, err := parseRDMACounters(df.Name, dir, string(df.Data))
		if err != nil {
			r.Files[df.result].addNote("unparsable: " + err.Error())
			continue
		}
		r.rdmaFiles = append(r.rdmaFiles, fs...)
	}
	ifaces := groupDumps(r, in.dumps, in.links)
	for _, l := range in.links {
		if it := ifaces[l.ls.Interface]; it != nil {
			it.link = l.ls
		}
	}
	a.analyseInterfaces(r, ifaces)
	addKernelENAStats(r)
	if r.manifest != nil {
		if _, up, ok := r.manifest.sample(""); ok && up > 0 {
			r.Uptime = Uptime{Seconds: up, Source: "manifest.json, later sample"}
			r.uptimeFromProc = true
		}
	}
	if !r.uptimeFromProc && r.Uptime.Seconds < DefaultUptime.Seconds() {
		// A kernel log excerpt (dmesg | grep mlx5) often ends at boot:
		// its latest timestamp is only a lower bound.
		r.Uptime = Uptime{Seconds: DefaultUptime.Seconds(), Source: "default"}
	}
	return r
}

// readEarlierSample reads collect's first sample (the files under
// earlier_sample/, names without it) as the first observation of the
// bundle's series, taken as long before the later one as the manifest
// says; without a manifest that says when, its files are only listed.
// Its files are listed in r.Files under their full names.
func (a *Analyzer) readEarlierSample(r *Report, files []File, limits Limits) {
	var later, first time.Time
	ok := r.manifest != nil
	if ok {
		var ok1, ok2 bool
		later, _, ok1 = r.manifest.sample("")
		first, _, ok2 = r.manifest.sample(strings.TrimSuffix(earlierSampleDir, "/"))
		ok = ok1 && ok2 && first.Before(later) && later.Sub(first) < time.Duration(r.Uptime.Seconds*float64(time.Second))
	}
	if !ok {
		for _, f := range files {
			r.Files = append(r.Files, FileResult{Name: earlierSampleDir + f.Name,
				Note: "not read: no manifest.json says when the earlier sample was taken"})
		}
		return
	}
	e := a.readSample(r.Source, files, limits, r.linesAnalysed, r.textBytesAnalysed)
	r.linesAnalysed, r.textBytesAnalysed = e.linesAnalysed, e.textBytesAnalysed
	for _, f := range e.Files {
		f.Name = earlierSampleDir + f.Name
		r.Files = append(r.Files, f)
	}
	resolveStatsProcesses(e.statsFiles, r.manifest, earlierSampleDir)
	r.earlier, r.earlierAt = e, later.Sub(first)
}

// readFile recognises one file of the bundle, parses it and adds its
// series and its FileResult to r; files whose series need the whole
// bundle go to in. A JSON document is parsed whole (encoding/json, in one
// pass); text is analysed in lines, within the limits lim, counted
// against the bundle's totals in r.
func (a *Analyzer) readFile(r *Report, f File, lim Limits, in *bundleInputs) {
	kind := statsKind(f.Name)
	if kind == "" {
		kind = recogniseJSON(f.Data)
	}
	if kind == "" {
		kind = recogniseDiagnoseJSON(f.Name, f.Data)
	}
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

// parseFile parses f as a file of the given kind and adds its series
// (or its firmware inventory, or the uptime) to r, or queues it in in
// when its series need the whole bundle. Notes about the file go to res, the result that
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
		in.links = append(in.links, linkAt{dir: path.Dir(f.Name), ls: ls})
		r.series.addLink(f.Name, ls)
		r.phy.addLink(f.Name, ls)
	case KindEthtoolFEC:
		fec, err := ParseFEC(string(f.Data))
		if err != nil {
			return err
		}
		r.phy.addFEC(f.Name, fec)
	case KindDevlinkHealth:
		reps, err := ParseDevlinkHealth(string(f.Data))
		if err != nil {
			return err
		}
		placeReporters(f.Name, reps, res)
		r.series.addReporters(f.Name, reps)
	case KindDevlinkDiagnose:
		ds, err := ParseDevlinkDiagnose(f.Name, string(f.Data))
		if err != nil {
			return err
		}
		r.addDiagnoses(f.Name, ds, res)
	case KindDevlinkEvidence:
		reps, err := ParseDevlinkEvidence(string(f.Data))
		if err != nil {
			return err
		}
		r.series.addReporters(f.Name, reps)
	case KindIbstat:
		ports, err := ParseIbstat(string(f.Data))
		if err != nil {
			return err
		}
		r.series.addIB(f.Name, ports)
	case KindLspci:
		fns, err := ParseLspci(string(f.Data))
		if err != nil {
			return err
		}
		r.series.addPCI(f.Name, fns)
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
	case KindUptime:
		r.noteUptime(f.Name, f.Data)
	case KindPCISysfs:
		fns, err := ParsePCISysfs(string(f.Data))
		if err != nil {
			return err
		}
		r.series.addPCISysfs(f.Name, fns)
	case KindNetdevSysfs:
		ifs, err := ParseNetdevSysfs(string(f.Data))
		if err != nil {
			return err
		}
		r.series.addNetdevSysfs(f.Name, ifs)
	case KindHwmonSysfs, KindSensors:
		parse := ParseHwmonSysfs
		if kind == KindSensors {
			parse = ParseSensors
		}
		h, err := parse(string(f.Data))
		if err != nil {
			return err
		}
		for _, why := range h.Rejected {
			res.addNote("left out: " + why)
		}
		r.hwmon = append(r.hwmon, hwmonInput{file: f.Name, h: h})
	case KindModuleDump:
		return r.phy.addModule(f.Name, string(f.Data))
	case KindDevlinkInfo:
		devs, err := ParseDevlinkInfo(string(f.Data))
		if err != nil {
			return err
		}
		r.Firmware = append(r.Firmware, devs...)
	case KindRDMACounters:
		in.rdma = append(in.rdma, dumpFile{f, len(r.Files)}) // after the manifest
	case KindUname:
		r.Host.Kernel = parseUname(lines(f.Data))
	case KindOSRelease:
		r.Host.OS = parseOSRelease(lines(f.Data))
	case KindExporterMetrics:
		fams, err := parseExporterMetrics(f.Data)
		if err != nil {
			return err
		}
		r.exporter = append(r.exporter, exporterFile{name: f.Name, fams: fams})
	case KindVMAStats, KindXLIOStats:
		sf, err := parseStats(f.Name, kind, f.Data)
		if err != nil {
			return err
		}
		r.statsFiles = append(r.statsFiles, sf)
	case KindFlintQuery:
		devs, err := ParseFlintQuery(string(f.Data))
		if err != nil {
			return err
		}
		r.Firmware = append(r.Firmware, devs...)
		if n := flintDeviceNote(f.Name, devs); n != "" {
			res.addNote(n)
		}
	case KindToolFailure:
		res.addNote("no output to read: " + toolFailure(lines(f.Data)))
	case KindRDMACounterValues:
		v, err := parseRDMAValues(f.Name, string(f.Data))
		if err != nil {
			return err
		}
		r.rdmaFiles = append(r.rdmaFiles, v.files...)
		res.addNote(v.note)
	case KindCollectManifest:
		m, err := parseManifest(f.Data)
		if err != nil {
			return err
		}
		r.manifest = m
	}
	return nil
}

// groupDumps names each ethtool -i/-S file's interface (nameDumps),
// parses each file on its own, so one that does not parse costs only
// itself (noted in r.Files), and groups the others by interface. Each -S
// output is its own interface: a second -S output of an interface that
// is already read is noted and left out, not merged.
func groupDumps(r *Report, dumps []dumpFile, links []linkAt) map[string]*ethIface {
	named := make([]namedDump, 0, len(dumps))
	for _, df := range dumps {
		named = append(named, namedDump{dumpFile: df, text: cleanDump(df.Data)})
	}
	nameDumps(named, links)
	ifaces := map[string]*ethIface{}
	for _, d := range named {
		res := &r.Files[d.result]
		if n := d.text.skippedNote(); n != "" {
			res.addNote(n)
		}
		if err := d.parseOwn(); err != nil {
			res.addNote("unparsable: " + err.Error())
			continue
		}
		it := ifaces[d.iface]
		if it == nil {
			it = &ethIface{name: d.iface, statsAt: map[string]string{}}
			ifaces[d.iface] = it
		}
		if d.text.stats && it.hasStats || d.text.info && it.hasInfo {
			res.addNote("not read: " + it.files[0] + " already gave the ethtool output of " + d.iface)
			continue
		}
		if d.how != "named by the file name" {
			res.addNote("interface " + d.iface + ": " + d.how)
		}
		it.hasStats = it.hasStats || d.text.stats
		it.hasInfo = it.hasInfo || d.text.info
		it.files = append(it.files, d.Name)
		it.results = append(it.results, d.result)
		it.addDump(File{Name: d.Name, Data: d.text.data})
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
// name order, and keeps it for the daemon's ethtool collector;
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
	}
}

// sortFindings orders findings by severity (pages first), then alert,
// then device, keeping the order of equal ones; those only since boot
// (ViewSinceBootOnly) come after the others.
func sortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		x, y := fs[i], fs[j]
		if xo, yo := x.View == ViewSinceBootOnly, y.View == ViewSinceBootOnly; xo != yo {
			return yo
		}
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

// enaStatLine is a line of the statistics the ENA driver prints to the
// kernel log after a reset: "ena 0000:00:05.0 eth0: wd_expired: 1".
var enaStatLine = regexp.MustCompile(`^ena (\S+) (\S+): (wd_expired|tx_timeout|admin_q_pause): (\d+)$`)

// enaStat is one statistic of such a dump, with its file:line.
type enaStat struct {
	name     string
	value    uint64
	evidence string
}

// readKernelLog keeps the messages of kernel log f for the kmsg
// collector, the first line of each event a log rule matches (for the
// evidence), the ENA driver's statistics dumps and the latest timestamp
// (the uptime when the bundle has no /proc/uptime).
func (a *Analyzer) readKernelLog(r *Report, f File) {
	r.noteUptime(f.Name, f.Data)
	for i, l := range lines(f.Data) {
		msg := strings.TrimSpace(logrules.StripPrefix(l))
		if msg == "" {
			continue
		}
		r.kmsgLines = append(r.kmsgLines, msg)
		ev := fmt.Sprintf("%s:%d", f.Name, i+1)
		if m := enaStatLine.FindStringSubmatch(msg); m != nil {
			if n, err := strconv.ParseUint(m[4], 10, 64); err == nil {
				r.enaStats[m[2]] = append(r.enaStats[m[2]], enaStat{m[3], n, ev})
			}
			continue
		}
		if m, ok := a.rules.Match(msg); ok {
			k := [2]string{m.Device, m.Rule.Event}
			if _, seen := r.kernelEvidence[k]; !seen {
				r.kernelEvidence[k] = ev
			}
		}
	}
}

// addKernelENAStats gives the ethtool collector the ENA statistics the
// driver dumped to the kernel log: the counters of an interface without
// an ethtool -S dump, and for one with a dump, a value above the dump's
// (a counter since boot is never below an earlier reading of it, so the
// dump is then older than the reset, or of another boot).
func addKernelENAStats(r *Report) {
	names := make([]string, 0, len(r.enaStats))
	for n := range r.enaStats {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		var it *ethIface
		for _, x := range r.ethIfaces {
			if x.name == name {
				it = x
			}
		}
		if it == nil {
			it = &ethIface{name: name, statsAt: map[string]string{}, dump: &ethtooldump.Dump{Driver: "ena"}}
			r.ethIfaces = append(r.ethIfaces, it)
		}
		if it.dump.Driver != "" && it.dump.Driver != "ena" {
			continue
		}
		for _, st := range r.enaStats[name] {
			i := it.dump.Index(st.name)
			switch {
			case i < 0:
				it.dump.Names = append(it.dump.Names, st.name)
				it.dump.Values = append(it.dump.Values, st.value)
			case it.dump.Values[i] < st.value:
				it.dump.Values[i] = st.value
			default:
				continue
			}
			it.statsAt[st.name] = st.evidence
		}
	}
}
