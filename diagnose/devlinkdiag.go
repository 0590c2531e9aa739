package diagnose

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"regexp"
	"strings"
)

// KindDevlinkDiagnose is `devlink health diagnose` or `devlink health
// dump show` output of one reporter, text or -j JSON (collect's
// devlink_health_diagnose_DEV_REPORTER.json).
const KindDevlinkDiagnose = "devlink health diagnose/dump"

// DiagnosePair is one "key: value" of a reporter's diagnose or dump
// output, with its line.
type DiagnosePair struct {
	Key, Value string
	Line       Line
}

// ReporterDiagnosis is what one `devlink health diagnose` or `dump show`
// of a reporter printed. The daemon exports no series from it (the
// devlink collector writes it to its capture directory as evidence), so
// diagnose shows it with the reporter's findings.
type ReporterDiagnosis struct {
	// Device is the devlink handle (pci/0000:08:00.0, or a port handle
	// pci/0000:08:00.0/65535); empty when neither the file nor its name
	// says it.
	Device   string
	Reporter string
	// Command is "diagnose" or "dump show".
	Command string
	Pairs   []DiagnosePair
}

// diagnoseCommand is a command line of such output: "$ devlink -j
// health diagnose pci/0000:82:00.0 reporter fw".
var diagnoseCommand = regexp.MustCompile(`devlink(?:\s+-\S+)*\s+health\s+(diagnose|dump\s+show)\s+(\S+)\s+reporter\s+(\S+)`)

// diagnoseFileName is the name collect gives a reporter's diagnose
// output, the device's handle with / and : replaced by _ (collect's
// fileSafe): devlink_health_diagnose_pci_0000_08_00.1_vnic.json, or with
// the port after the function, pci_0000_08_00.1_65535_tx.
var diagnoseFileName = regexp.MustCompile(`^devlink_health_(diagnose|dump)_pci_([0-9a-fA-F]{4})_([0-9a-fA-F]{2})_([0-9a-fA-F]{2})\.([0-7])(?:_([0-9]+))?_([A-Za-z0-9_.-]+?)\.(?:json|txt)$`)

// sosDiagnoseName is the name sosreport's devlink_health plugin gives
// the output of `devlink health diagnose DEV reporter R` or `devlink
// health dump show DEV reporter R` (sos_commands/devlink_health/): the
// command with each run of characters other than letters, digits, _, -,
// . and / replaced by _, then / by . (sos's _mangle_command):
// devlink_health_diagnose_pci.0000_08_00.0_reporter_fw, with a port
// handle pci.0000_08_00.0.65535.
var sosDiagnoseName = regexp.MustCompile(`^devlink_health_(diagnose|dump_show)_(?:pci\.([0-9a-fA-F]{4})_([0-9a-fA-F]{2})_([0-9a-fA-F]{2})\.([0-7])(?:\.([0-9]+))?|.+)_reporter_([A-Za-z0-9_.-]+)$`)

// diagnoseAnyName is any name collect gives a reporter's diagnose
// output; a handle other than a PCI one (auxiliary/mlx5_core.eth.0)
// cannot be told from the reporter's name in it.
var diagnoseAnyName = regexp.MustCompile(`^devlink_health_(?:diagnose|dump)_.+\.(?:json|txt)$`)

// isDevlinkDiagnose reports whether a text file is diagnose or dump
// output: a devlink health diagnose/dump show command line, or the name
// collect gives such output.
func isDevlinkDiagnose(name string, ls []string) bool {
	if diagnoseAnyName.MatchString(path.Base(name)) || sosDiagnoseName.MatchString(path.Base(name)) {
		return true
	}
	for _, l := range ls {
		if diagnoseCommand.MatchString(l) {
			return true
		}
	}
	return false
}

// recogniseDiagnoseJSON returns KindDevlinkDiagnose for a JSON document
// named as collect names a reporter's diagnose output.
func recogniseDiagnoseJSON(name string, data []byte) string {
	if diagnoseAnyName.MatchString(path.Base(name)) && bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
		return KindDevlinkDiagnose
	}
	return ""
}

// ParseDevlinkDiagnose parses `devlink health diagnose` or `dump show`
// output: text (any number of commands, each starting at its "$ devlink
// ..." line, output before the first going to the file's reporter) or
// -j JSON, flattened to key/value pairs in the order printed. The
// device and reporter come from the command line, else from the file
// name as collect or sosreport writes it, else are unknown (empty). There is no
// library for devlink's formatted messages: iproute2 prints nested
// objects as indented "key: value" runs, several to a line.
func ParseDevlinkDiagnose(file, text string) ([]ReporterDiagnosis, error) {
	def := ReporterDiagnosis{Command: "diagnose"}
	handle := func(dom, bus, slot, fn, port string) string {
		if dom == "" {
			return "" // not a PCI handle: the mangled name does not say it
		}
		h := fmt.Sprintf("pci/%s:%s:%s.%s", strings.ToLower(dom), strings.ToLower(bus), strings.ToLower(slot), fn)
		if port != "" {
			h += "/" + port
		}
		return h
	}
	if m := diagnoseFileName.FindStringSubmatch(path.Base(file)); m != nil {
		def.Device, def.Reporter = handle(m[2], m[3], m[4], m[5], m[6]), m[7]
		if m[1] == "dump" {
			def.Command = "dump show"
		}
	} else if m := sosDiagnoseName.FindStringSubmatch(path.Base(file)); m != nil {
		def.Device, def.Reporter = handle(m[2], m[3], m[4], m[5], m[6]), m[7]
		if m[1] == "dump_show" {
			def.Command = "dump show"
		}
	}
	var out []ReporterDiagnosis
	cur := def
	started := false
	flush := func() {
		if started && len(cur.Pairs) > 0 {
			out = append(out, cur)
		}
	}
	ls := strings.Split(text, "\n")
	for i := 0; i < len(ls); i++ {
		l := strings.TrimSpace(ls[i])
		switch {
		case l == "" || strings.HasPrefix(l, "#"):
			continue
		case strings.HasPrefix(l, "$"):
			m := diagnoseCommand.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			flush()
			cur = ReporterDiagnosis{Device: m[2], Reporter: m[3], Command: strings.Join(strings.Fields(m[1]), " ")}
			started = true
			continue
		case strings.HasPrefix(l, "{"):
			end, pairs, err := jsonPairs(ls, i)
			if err != nil {
				return nil, err
			}
			started = true
			cur.Pairs = append(cur.Pairs, pairs...)
			i = end
			continue
		}
		started = true
		for _, p := range textPairs(l) {
			p.Line = Line(i + 1)
			cur.Pairs = append(cur.Pairs, p)
		}
	}
	flush()
	if len(out) == 0 {
		return nil, fmt.Errorf("no diagnose or dump output")
	}
	return out, nil
}

// textPairs splits one line of devlink's text output into its pairs:
// "channel ix: 0 tc: 0 sqn: 4307" (several, each value one word),
// "Description: Module is not present." (one, the value the rest of the
// line), "synd 0x8: unrecoverable hardware error" (mlx5's health buffer:
// key, then the code and its text) or "assert_var[0] 0xfc3fc043" (key
// and value without a colon). A section header ("SQs:") and a row of a
// binary dump ("00 00 00 80 ...") have none.
func textPairs(l string) []DiagnosePair {
	f := strings.Fields(l)
	colons := 0
	for _, w := range f {
		if strings.HasSuffix(w, ":") {
			colons++
		}
	}
	switch {
	case len(f) == 0 || isHexRow(f):
		return nil
	case colons == 0:
		if len(f) < 2 {
			return nil
		}
		return []DiagnosePair{{Key: f[0], Value: strings.Join(f[1:], " ")}}
	case colons == 1:
		k, v, _ := strings.Cut(l, ":")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if v == "" {
			return nil // a section header
		}
		if kf := strings.Fields(k); len(kf) == 2 && isCode(kf[1]) {
			return []DiagnosePair{{Key: kf[0], Value: kf[1] + ": " + v}}
		}
		return []DiagnosePair{{Key: k, Value: v}}
	}
	var out []DiagnosePair
	var key []string
	for i := 0; i < len(f); i++ {
		if k, ok := strings.CutSuffix(f[i], ":"); ok {
			key = append(key, k)
			if i+1 < len(f) {
				out = append(out, DiagnosePair{Key: strings.Join(key, " "), Value: f[i+1]})
				i++
			}
			key = nil
			continue
		}
		key = append(key, f[i])
	}
	return out
}

// isHexRow reports whether a line is a row of a binary dump, bytes as
// two hex digits: "00 00 00 80 00 01 ad de".
func isHexRow(f []string) bool {
	if len(f) < 4 {
		return false
	}
	for _, w := range f {
		if len(w) != 2 || !isCode(w) {
			return false
		}
	}
	return true
}

// isCode reports whether s is a number such as 0x8 or 262.
func isCode(s string) bool {
	s = strings.TrimPrefix(strings.ToLower(s), "0x")
	return s != "" && strings.Trim(s, "0123456789abcdef") == ""
}

// jsonPairs reads the JSON document starting at line start (devlink -j
// or -jp output) and returns the line it ends on and its leaves as
// pairs, keyed by their innermost object key, in the order printed.
func jsonPairs(ls []string, start int) (int, []DiagnosePair, error) {
	rest := strings.Join(ls[start:], "\n")
	dec := json.NewDecoder(strings.NewReader(rest))
	dec.UseNumber()
	var out []DiagnosePair
	// stack holds, per open container, whether it is an object and
	// whether the next token is a key.
	type frame struct{ object, wantKey bool }
	var stack []frame
	key := ""
	lineAt := func() Line {
		return Line(start + 1 + strings.Count(rest[:dec.InputOffset()], "\n"))
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return 0, nil, fmt.Errorf("line %d: JSON ends early", start+1)
		}
		if err != nil {
			return 0, nil, fmt.Errorf("line %d: JSON: %w", start+1, err)
		}
		top := len(stack) - 1
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				if top >= 0 && stack[top].object {
					stack[top].wantKey = true
				}
				stack = append(stack, frame{object: d == '{', wantKey: d == '{'})
			default:
				stack = stack[:top]
				if len(stack) == 0 {
					return start + strings.Count(rest[:dec.InputOffset()], "\n"), out, nil
				}
			}
			continue
		}
		if top >= 0 && stack[top].object && stack[top].wantKey {
			key, _ = tok.(string)
			stack[top].wantKey = false
			continue
		}
		if top >= 0 && stack[top].object {
			stack[top].wantKey = true
		}
		out = append(out, DiagnosePair{Key: key, Value: fmt.Sprint(tok), Line: lineAt()})
	}
}

// maxDiagnoseSummary is the most pairs a diagnosis summary names.
const maxDiagnoseSummary = 6

// Summary returns the pairs of a diagnosis that say what is wrong: the
// syndromes (mlx5 fw "Syndrome" and the health buffer's synd and
// ext_synd, ice "Syndrome"), descriptions and suggested solutions,
// counts of errors, overruns, failures, timeouts and drops that are not
// zero, and stopped or recovering queues; each with its line.
func (d *ReporterDiagnosis) Summary() []DiagnosePair {
	var out []DiagnosePair
	for _, p := range d.Pairs {
		k := strings.ToLower(p.Key)
		v := strings.ToLower(p.Value)
		zero := v == "0" || v == "false" || v == "0x0" || v == "0x00" || v == "0x0000"
		switch {
		case strings.Contains(k, "synd"), k == "description", k == "possible solution":
		case k == "stopped" && v == "true", k == "recovering" && !zero:
		case !zero && (strings.Contains(k, "error") || strings.Contains(k, "overrun") || strings.Contains(k, "fail") ||
			strings.Contains(k, "timeout") || strings.Contains(k, "drop")):
		default:
			continue
		}
		out = append(out, p)
	}
	return out
}

// summaryText prints a diagnosis summary: "synd: 0x8: unrecoverable
// hardware error, ext_synd: 0x003d", at most maxDiagnoseSummary pairs;
// "nothing wrong printed" when it has none.
func summaryText(ps []DiagnosePair) string {
	if len(ps) == 0 {
		return "nothing wrong printed"
	}
	var parts []string
	for i, p := range ps {
		if i == maxDiagnoseSummary {
			parts = append(parts, fmt.Sprintf("and %d more", len(ps)-i))
			break
		}
		parts = append(parts, p.Key+": "+p.Value)
	}
	return strings.Join(parts, ", ")
}

// diagnosisEvidence is a reporter's diagnosis as evidence for its
// findings: the reporter's device and port labels, and what it printed
// with the file and line.
type diagnosisEvidence struct {
	device, port, reporter string
	text                   string
}

// addDiagnoses keeps the diagnoses of a file for the findings of their
// reporters and says in the file's note what each printed; a diagnosis
// whose device is unknown is only noted.
func (r *Report) addDiagnoses(file string, ds []ReporterDiagnosis, res *FileResult) {
	for _, d := range ds {
		sum := d.Summary()
		at := file
		if len(sum) > 0 {
			at = fmt.Sprintf("%s:%d", file, sum[0].Line)
		} else if len(d.Pairs) > 0 {
			at = fmt.Sprintf("%s:%d", file, d.Pairs[0].Line)
		}
		what := fmt.Sprintf("devlink health %s of reporter %s", d.Command, orUnknown(d.Reporter))
		if d.Device == "" || d.Reporter == "" {
			res.addNote(fmt.Sprintf("%s, device unknown (neither the file nor its name says it), not attached to findings: %s", what, summaryText(sum)))
			continue
		}
		res.addNote(fmt.Sprintf("%s of %s: %s", what, d.Device, summaryText(sum)))
		dev, port := reporterHandle(d.Device)
		r.diagnoses = append(r.diagnoses, diagnosisEvidence{device: dev, port: port, reporter: d.Reporter,
			text: fmt.Sprintf("%s: %s: %s", at, what, summaryText(sum))})
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// attachDiagnoses adds to each finding of a devlink health reporter
// what that reporter's diagnose or dump output printed.
func attachDiagnoses(r *Report) {
	for i := range r.Findings {
		f := &r.Findings[i]
		rep := f.Labels["reporter"]
		if rep == "" {
			continue
		}
		for _, d := range r.diagnoses {
			if d.reporter != rep || d.device != f.Labels["device"] || d.port != f.Labels["port"] {
				continue
			}
			if f.Evidence != "" {
				f.Evidence += "; "
			}
			f.Evidence += d.text
		}
	}
}

// devlinkOneLine is a reporter of `devlink health show` printed on one
// line, as iproute2 before 2019 did and as excerpts quote it: "name fw
// state error error 1 recover 0".
var devlinkOneLine = regexp.MustCompile(`^(?:name|reporter) \S+ state \S+`)

// pciInName is a PCI address in a file name, with : or _ between its
// parts: devlink_health_0000_08_00.0.txt.
var pciInName = regexp.MustCompile(`([0-9a-fA-F]{4})[:_]([0-9a-fA-F]{2})[:_]([0-9a-fA-F]{2})\.([0-7])`)

// placeReporters gives the reporters of a devlink health show excerpt
// without its device line the device the file name says (a PCI
// address in it), else "unknown", and says so in the file's note.
func placeReporters(file string, reps []Reporter, res *FileResult) {
	dev, how := "unknown", "labelled device \"unknown\""
	if m := pciInName.FindStringSubmatch(path.Base(file)); m != nil {
		dev = strings.ToLower(fmt.Sprintf("pci/%s:%s:%s.%s", m[1], m[2], m[3], m[4]))
		how = fmt.Sprintf("labelled %s from the file name", dev)
	}
	n := 0
	for i := range reps {
		if reps[i].Device == "" {
			reps[i].Device = dev
			n++
		}
	}
	if n > 0 {
		res.addNote(fmt.Sprintf("device unknown: %d reporters without a pci/... device line, %s", n, how))
	}
}
