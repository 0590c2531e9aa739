package diagnose

import (
	"encoding/json"

	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/nic-exporter/nic_exporter/collector/phy"
	"github.com/nic-exporter/nic_exporter/internal/ethtoolnl"
)

// Line is a parsed value with the 1-based line it came from.
type Line int

// LinkSettings is the output of `ethtool DEV`.
type LinkSettings struct {
	Interface string
	// SpeedMbps is 0 when ethtool prints "Unknown!".
	SpeedMbps uint32
	// Duplex is "Full", "Half" or "Unknown!" as printed; empty if absent.
	Duplex string
	// Autoneg is true for "Auto-negotiation: on".
	Autoneg bool
	// HasSettings is true when speed or duplex was printed (ENA prints
	// neither when its device does not report the link configuration).
	HasSettings bool
	HasDetected bool
	Detected    bool
	// DetectedLine is where "Link detected:" was printed.
	DetectedLine Line
	// DownReason and DownSubstate are the driver's reason the link is
	// down (ethtool 5.8 and later print it in parentheses after "Link
	// detected: no"), named as the phy collector names them; empty when
	// none is printed.
	DownReason, DownSubstate string
	// DownEvents is "Link Down Events:" (ethtool 6.x, drivers that count
	// them), nil when not printed; DownEventsLine is its line.
	DownEvents     *uint64
	DownEventsLine Line
}

// ParseLinkSettings parses `ethtool DEV` output; it needs the "Settings
// for DEV:" header.
func ParseLinkSettings(text string) (*LinkSettings, error) {
	var ls *LinkSettings
	for i, raw := range strings.Split(text, "\n") {
		l := strings.TrimSpace(raw)
		if name, ok := strings.CutPrefix(l, "Settings for "); ok && strings.HasSuffix(name, ":") {
			if ls != nil {
				break // a second interface: one per file
			}
			ls = &LinkSettings{Interface: strings.TrimSuffix(name, ":")}
			continue
		}
		if ls == nil {
			continue
		}
		key, val, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		val = strings.TrimSpace(val)
		switch key {
		case "Speed":
			if v, ok := strings.CutSuffix(val, "Mb/s"); ok {
				n, err := strconv.ParseUint(v, 10, 32)
				if err != nil {
					return nil, fmt.Errorf("line %d: speed %q: %w", i+1, val, err)
				}
				ls.SpeedMbps = uint32(n)
			}
			ls.HasSettings = true
		case "Duplex":
			ls.Duplex, ls.HasSettings = val, true
		case "Auto-negotiation":
			ls.Autoneg = val == "on"
		case "Link detected":
			word, why, _ := strings.Cut(val, " ")
			ls.HasDetected, ls.Detected, ls.DetectedLine = true, word == "yes", Line(i+1)
			if why = strings.TrimSpace(why); strings.HasPrefix(why, "(") && strings.HasSuffix(why, ")") {
				ls.DownReason, ls.DownSubstate = linkExtState(strings.TrimSuffix(strings.TrimPrefix(why, "("), ")"))
			}
		case "Link Down Events":
			n, err := strconv.ParseUint(val, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: link down events %q: %w", i+1, val, err)
			}
			ls.DownEvents, ls.DownEventsLine = &n, Line(i+1)
		}
	}
	if ls == nil {
		return nil, fmt.Errorf("no \"Settings for DEV:\" header")
	}
	return ls, nil
}

// Reporter is one devlink health reporter.
type Reporter struct {
	// Device is the devlink handle, such as pci/0000:08:00.0 or a port
	// handle pci/0000:08:00.0/32768.
	Device  string
	Name    string
	State   string
	Errors  uint64
	Recover uint64
	// GracePeriodMs is nil when not printed.
	GracePeriodMs *uint64
	// AutoRecover is nil when not printed.
	AutoRecover *bool
	Line        Line
}

// ParseDevlinkHealth parses `devlink health show` text (any kernel
// generation: "name" or "reporter" keys, device or port handles) or its
// -j JSON. A reporter of an excerpt without its device line has an empty
// Device.
func ParseDevlinkHealth(text string) ([]Reporter, error) {
	if t := strings.TrimSpace(text); strings.HasPrefix(t, "{") {
		return parseDevlinkHealthJSON(t)
	}
	var out []Reporter
	dev := ""
	var cur *Reporter
	for i, raw := range strings.Split(text, "\n") {
		l := strings.TrimSpace(raw)
		if l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "$") {
			continue
		}
		if raw[0] != ' ' && raw[0] != '\t' && strings.HasSuffix(l, ":") && strings.Contains(l, "/") {
			dev, cur = strings.TrimSuffix(l, ":"), nil
			continue
		}
		f := strings.Fields(l)
		if (f[0] == "reporter" || f[0] == "name") && len(f) >= 2 {
			out = append(out, Reporter{Device: dev, Name: f[1], Line: Line(i + 1)})
			cur = &out[len(out)-1]
			f = f[2:] // old iproute2 printed the state on the same line
			if len(f) == 0 {
				continue
			}
		}
		if cur == nil || f[0] != "state" {
			continue
		}
		for j := 0; j+1 < len(f); j += 2 {
			k, v := f[j], f[j+1]
			switch k {
			case "state":
				cur.State = v
			case "error", "recover", "grace_period":
				n, err := strconv.ParseUint(v, 10, 64)
				if err != nil {
					return nil, fmt.Errorf("line %d: %s %q: %w", i+1, k, v, err)
				}
				switch k {
				case "error":
					cur.Errors = n
				case "recover":
					cur.Recover = n
				default:
					cur.GracePeriodMs = &n
				}
			case "auto_recover":
				b := v == "true"
				cur.AutoRecover = &b
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no health reporters")
	}
	return out, nil
}

func parseDevlinkHealthJSON(text string) ([]Reporter, error) {
	var doc struct {
		Health map[string][]struct {
			Reporter    string  `json:"reporter"`
			Name        string  `json:"name"`
			State       string  `json:"state"`
			Error       uint64  `json:"error"`
			Recover     uint64  `json:"recover"`
			GracePeriod *uint64 `json:"grace_period"`
			AutoRecover *bool   `json:"auto_recover"`
		} `json:"health"`
	}
	if err := json.Unmarshal([]byte(text), &doc); err != nil {
		return nil, fmt.Errorf("devlink health JSON: %w", err)
	}
	var out []Reporter
	devs := make([]string, 0, len(doc.Health))
	for d := range doc.Health {
		devs = append(devs, d)
	}
	sort.Strings(devs)
	for _, d := range devs {
		for _, r := range doc.Health[d] {
			name := r.Reporter
			if name == "" {
				name = r.Name
			}
			out = append(out, Reporter{Device: d, Name: name, State: r.State, Errors: r.Error,
				Recover: r.Recover, GracePeriodMs: r.GracePeriod, AutoRecover: r.AutoRecover})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no health reporters")
	}
	return out, nil
}

// ParseDevlinkEvidence parses one evidence file the exporter's devlink
// capture (--collector.devlink.capture-dir) writes: the JSON encoding of
// devlinkhealth.Evidence. Only the reporter attributes are read.
func ParseDevlinkEvidence(text string) ([]Reporter, error) {
	var ev struct {
		Device     string  `json:"device"`
		Port       *uint32 `json:"port"`
		Reporter   string  `json:"reporter"`
		Attributes struct {
			State        string   `json:"state"`
			ErrorCount   *uint64  `json:"error_count"`
			RecoverCount *uint64  `json:"recover_count"`
			GracePeriod  *float64 `json:"graceful_period_seconds"`
			AutoRecover  *bool    `json:"auto_recover"`
		} `json:"attributes"`
	}
	if err := json.Unmarshal([]byte(text), &ev); err != nil {
		return nil, fmt.Errorf("devlink evidence JSON: %w", err)
	}
	if ev.Device == "" || ev.Reporter == "" {
		return nil, fmt.Errorf("devlink evidence without device or reporter")
	}
	r := Reporter{Device: ev.Device, Name: ev.Reporter, State: ev.Attributes.State, AutoRecover: ev.Attributes.AutoRecover}
	if ev.Port != nil {
		r.Device += "/" + strconv.FormatUint(uint64(*ev.Port), 10)
	}
	if ev.Attributes.ErrorCount != nil {
		r.Errors = *ev.Attributes.ErrorCount
	}
	if ev.Attributes.RecoverCount != nil {
		r.Recover = *ev.Attributes.RecoverCount
	}
	if g := ev.Attributes.GracePeriod; g != nil && *g >= 0 {
		ms := uint64(*g * 1000)
		r.GracePeriodMs = &ms
	}
	return []Reporter{r}, nil
}

// IBPort is one port of `ibstat`.
type IBPort struct {
	CA            string
	CAType        string
	Firmware      string
	Port          int
	State         string
	PhysicalState string
	// Rate is in Gb/s as printed ("2.5", "200").
	Rate      string
	LinkLayer string
	Line      Line
}

// ParseIbstat parses `ibstat` output.
func ParseIbstat(text string) ([]IBPort, error) {
	var out []IBPort
	var ca, caType, fw string
	var cur *IBPort
	for i, raw := range strings.Split(text, "\n") {
		l := strings.TrimSpace(raw)
		if name, ok := strings.CutPrefix(l, "CA '"); ok {
			ca, caType, fw, cur = strings.TrimSuffix(name, "'"), "", "", nil
			continue
		}
		if ca == "" {
			continue
		}
		if p, ok := strings.CutPrefix(l, "Port "); ok && strings.HasSuffix(p, ":") {
			n, err := strconv.Atoi(strings.TrimSuffix(p, ":"))
			if err != nil {
				return nil, fmt.Errorf("line %d: port %q: %w", i+1, p, err)
			}
			out = append(out, IBPort{CA: ca, CAType: caType, Firmware: fw, Port: n, Line: Line(i + 1)})
			cur = &out[len(out)-1]
			continue
		}
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if cur == nil {
			switch k {
			case "CA type":
				caType = v
			case "Firmware version":
				fw = v
			}
			continue
		}
		switch k {
		case "State":
			cur.State = v
		case "Physical state":
			cur.PhysicalState = v
		case "Rate":
			cur.Rate = v
		case "Link layer":
			cur.LinkLayer = v
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no ports")
	}
	return out, nil
}

// PCIFunction is one device of `lspci -vvv`.
type PCIFunction struct {
	// Address is the slot as lspci prints it ("b3:00.0"); empty when
	// the excerpt starts below the device line.
	Address     string
	Description string
	CapSpeedGTs float64
	CapWidth    int
	StaSpeedGTs float64
	StaWidth    int
	// Downgraded is true when lspci marked speed or width "(downgraded)".
	Downgraded bool
	// LnkStaLine is where LnkSta was printed.
	LnkStaLine Line
	// DevStaErrors are the DevSta error bits that are set (CorrErr,
	// NonFatalErr or UncorrErr, FatalErr, UnsupReq or UnsuppReq).
	DevStaErrors []string
	DevStaLine   Line
	// Rejected says which LnkCap or LnkSta values could not be read or
	// were out of range, with their line; such a line is not compared.
	Rejected []string
}

// NetworkClass reports whether the function is a network or InfiniBand
// controller, or unknown (an excerpt without the device line).
func (f *PCIFunction) NetworkClass() bool {
	if f.Description == "" {
		return true
	}
	d := strings.ToLower(f.Description)
	return strings.HasPrefix(d, "ethernet controller") || strings.HasPrefix(d, "infiniband controller") ||
		strings.HasPrefix(d, "network controller")
}

// LinkDegraded reports whether the link trained below the capability.
func (f *PCIFunction) LinkDegraded() bool {
	if f.LnkStaLine == 0 {
		return false
	}
	if f.Downgraded {
		return true
	}
	return (f.CapSpeedGTs > 0 && f.StaSpeedGTs > 0 && f.StaSpeedGTs < f.CapSpeedGTs) ||
		(f.CapWidth > 0 && f.StaWidth > 0 && f.StaWidth < f.CapWidth)
}

// ParseLspci parses `lspci -vvv` output (or a grep -A excerpt of it).
func ParseLspci(text string) ([]PCIFunction, error) {
	var out []PCIFunction
	cur := func() *PCIFunction {
		if len(out) == 0 {
			out = append(out, PCIFunction{})
		}
		return &out[len(out)-1]
	}
	for i, raw := range strings.Split(text, "\n") {
		l := strings.TrimSpace(raw)
		if l == "" || l == "--" || strings.HasPrefix(l, "#") {
			continue
		}
		if raw[0] != ' ' && raw[0] != '\t' {
			addr, desc, ok := strings.Cut(l, " ")
			if ok && isSlot(addr) {
				out = append(out, PCIFunction{Address: addr, Description: strings.TrimSpace(desc)})
			}
			continue
		}
		key, val, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		val = strings.TrimSpace(val)
		switch key {
		case "LnkCap":
			f := cur()
			speed, width, _, err := speedWidth(val)
			if err != nil {
				f.Rejected = append(f.Rejected, fmt.Sprintf("line %d: LnkCap %v", i+1, err))
				f.CapSpeedGTs, f.CapWidth = 0, 0
				continue
			}
			f.CapSpeedGTs, f.CapWidth = speed, width
		case "LnkSta":
			f := cur()
			speed, width, down, err := speedWidth(val)
			if err != nil {
				f.Rejected = append(f.Rejected, fmt.Sprintf("line %d: LnkSta %v", i+1, err))
				f.StaSpeedGTs, f.StaWidth, f.Downgraded, f.LnkStaLine = 0, 0, false, 0
				continue
			}
			f.StaSpeedGTs, f.StaWidth, f.Downgraded = speed, width, down
			f.LnkStaLine = Line(i + 1)
		case "DevSta":
			f := cur()
			f.DevStaLine = Line(i + 1)
			for _, bit := range strings.Fields(val) {
				if name, set := strings.CutSuffix(bit, "+"); set {
					switch name {
					case "CorrErr", "NonFatalErr", "UncorrErr", "FatalErr", "UnsupReq", "UnsuppReq":
						f.DevStaErrors = append(f.DevStaErrors, name)
					}
				}
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no PCI functions")
	}
	return out, nil
}

// PCIe bounds: the widest link is x32 (x0 is printed for a link that is
// down) and the fastest signalling rate, of PCIe 7.0, 128 GT/s; twice
// that leaves room for the next generation.
const (
	maxPCIeWidth    = 32
	maxPCIeSpeedGTs = 256
)

// speedWidth reads "Speed 8GT/s (downgraded), Width x8 (ok), ...". A
// speed or width that does not parse, is not finite or is out of the
// PCIe range is an error: comparing it would name a link degraded that
// no device reported.
func speedWidth(s string) (speed float64, width int, downgraded bool, err error) {
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if strings.HasSuffix(part, "(downgraded)") {
			downgraded = true
		}
		f := strings.Fields(part)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "Speed":
			if v, ok := strings.CutSuffix(f[1], "GT/s"); ok {
				speed, err = strconv.ParseFloat(v, 64)
				if err != nil || math.IsNaN(speed) || speed < 0 || speed > maxPCIeSpeedGTs {
					return 0, 0, false, fmt.Errorf("speed %q out of range (0 to %d GT/s)", f[1], maxPCIeSpeedGTs)
				}
			}
		case "Width":
			if v, ok := strings.CutPrefix(f[1], "x"); ok {
				width, err = strconv.Atoi(v)
				if err != nil || width < 0 || width > maxPCIeWidth {
					return 0, 0, false, fmt.Errorf("width %q out of range (x0 to x%d)", f[1], maxPCIeWidth)
				}
			}
		}
	}
	return speed, width, downgraded, nil
}

// isSlot reports whether s is an lspci slot such as "b3:00.0" or
// "0000:b3:00.0".
func isSlot(s string) bool {
	dot := strings.LastIndexByte(s, '.')
	colon := strings.IndexByte(s, ':')
	if dot < 0 || colon < 0 || colon > dot {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c == ':' || c == '.') {
			return false
		}
	}
	return true
}

// FirmwareDevice is one device of `mlxfwmanager --query` (or `mlxup`,
// which prints the same block).
type FirmwareDevice struct {
	DeviceType string `json:"device_type"`
	PartNumber string `json:"part_number"`
	PSID       string `json:"psid"`
	PCIName    string `json:"pci_device_name"`
	// Versions maps an image (FW, PXE, UEFI) to its current and
	// available version.
	Versions map[string][2]string `json:"versions"`
	Status   string               `json:"status"`
}

// ParseMlxfwmanager parses `mlxfwmanager --query` output.
func ParseMlxfwmanager(text string) ([]FirmwareDevice, error) {
	var out []FirmwareDevice
	var cur *FirmwareDevice
	inVersions := false
	for _, raw := range strings.Split(text, "\n") {
		l := strings.TrimSpace(raw)
		if strings.HasPrefix(l, "Device #") && strings.HasSuffix(l, ":") {
			out = append(out, FirmwareDevice{Versions: map[string][2]string{}})
			cur, inVersions = &out[len(out)-1], false
			continue
		}
		if cur == nil || l == "" || strings.HasPrefix(l, "---") {
			continue
		}
		k, v, ok := strings.Cut(l, ":")
		if ok {
			v = strings.TrimSpace(v)
			inVersions = false
			switch k {
			case "Device Type":
				cur.DeviceType = v
			case "Part Number":
				cur.PartNumber = v
			case "PSID":
				cur.PSID = v
			case "PCI Device Name":
				cur.PCIName = v
			case "Status":
				cur.Status = v
			case "Versions":
				inVersions = true
			}
			continue
		}
		if inVersions {
			f := strings.Fields(l)
			if len(f) >= 3 {
				cur.Versions[f[0]] = [2]string{f[1], f[2]}
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no devices")
	}
	return out, nil
}

// linkExtState names the extended link state ethtool prints after "Link
// detected: no", "(State)" or "(State, Substate)", as the phy collector
// names the netlink values: ethtool prints the strings of netlink/settings.c
// (names_link_ext_state and the names_*_link_ext_substate tables), which
// are the snake-case names with spaces, except "Logical mismatch"
// (link_logical_mismatch) and the CMIS substate (cmis_not_ready). A
// number, which ethtool prints for a value it has no string for, is
// "unknown" as in the collector; a string this build does not know is
// kept in snake case.
func linkExtState(text string) (reason, substate string) {
	st, sub, _ := strings.Cut(text, ",")
	st, sub = strings.TrimSpace(st), strings.TrimSpace(sub)
	state, known := ethtoolnl.ExtState(0), false
	for s := ethtoolnl.ExtState(0); s.String() != "unknown"; s++ {
		if snakeCase(st) == s.String() || st == "Logical mismatch" && s.String() == "link_logical_mismatch" {
			state, known = s, true
			break
		}
	}
	switch {
	case known:
		reason = state.String()
	case isNumber(st):
		reason = "unknown"
	default:
		reason = snakeCase(st)
	}
	if sub == "" {
		return reason, ""
	}
	if isNumber(sub) {
		return reason, "unknown"
	}
	if known {
		for n := uint8(1); n < 16; n++ {
			name := phy.SubstateName(state, n)
			if name == snakeCase(sub) || name == "cmis_not_ready" && strings.HasPrefix(sub, "CMIS") {
				return reason, name
			}
		}
	}
	return reason, snakeCase(sub)
}

// snakeCase lowers s and joins its words with underscores.
func snakeCase(s string) string {
	return strings.Join(strings.Fields(strings.ToLower(s)), "_")
}

// isNumber reports whether s is a decimal number.
func isNumber(s string) bool {
	_, err := strconv.ParseUint(s, 10, 8)
	return err == nil
}
