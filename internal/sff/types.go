package sff

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Standard names the management interface a module implements.
type Standard string

// The standards Decode understands.
const (
	SFF8472 Standard = "SFF-8472"
	SFF8636 Standard = "SFF-8636"
	CMIS    Standard = "CMIS"
)

// ErrNoModule is returned when the identifier byte is 0x00: the cage is
// empty, the module is half inserted, or its memory is not readable yet.
var ErrNoModule = errors.New("sff: identifier 0x00: no module, or module not fully inserted")

// UnsupportedError is returned for an SFF-8024 identifier whose memory map
// this package does not decode.
type UnsupportedError struct {
	Identifier byte
}

// Error implements error.
func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("sff: unsupported module type: identifier 0x%02x (%s)", e.Identifier, IdentifierName(e.Identifier))
}

// ShortError is returned when a byte range a decoder needs is missing
// from the Memory the caller supplied.
type ShortError struct {
	Region string
	Offset int
	Length int
	Field  string
}

// Error implements error.
func (e *ShortError) Error() string {
	return fmt.Sprintf("sff: %s: %s needs bytes %d-%d, which were not supplied", e.Region, e.Field, e.Offset, e.Offset+e.Length-1)
}

// Identity is the module's self-description (SFF-8024 codes and vendor
// ASCII fields, trailing spaces removed).
type Identity struct {
	Identifier     byte
	IdentifierName string
	Connector      byte
	ConnectorName  string
	// Media is "optical", "copper" or, for CMIS, the module media type.
	Media      string
	VendorName string
	// VendorOUI is the IEEE company ID as "xx:xx:xx".
	VendorOUI    string
	PartNumber   string
	Revision     string
	SerialNumber string
	// DateCode is the raw YYMMDD plus optional two-character lot code.
	DateCode string
}

// Flags are the latched alarm and warning flags of one monitor.
type Flags struct {
	HighAlarm   bool
	LowAlarm    bool
	HighWarning bool
	LowWarning  bool
}

// Thresholds are the module-advertised limits of one monitor, in the same
// unit as the monitor. A warning threshold is nil when the module leaves
// it at 0 beside a non-zero alarm (see Module.thresholds).
type Thresholds struct {
	HighAlarm   float64
	LowAlarm    float64
	HighWarning *float64
	LowWarning  *float64
}

// ordered reports whether low alarm <= low warning <= high warning <= high
// alarm, the only order that makes sense; absent warnings are left out.
func (t Thresholds) ordered() bool {
	lo, hi := t.LowAlarm, t.HighAlarm
	if t.LowWarning != nil {
		if *t.LowWarning < lo {
			return false
		}
		lo = *t.LowWarning
	}
	if t.HighWarning != nil {
		if *t.HighWarning > hi {
			return false
		}
		hi = *t.HighWarning
	}
	return lo <= hi
}

// limits are the four thresholds of one monitor as the memory holds them.
type limits struct {
	highAlarm, lowAlarm, highWarning, lowWarning float64
}

// Lane holds the per-lane monitors and flags. A nil value means the
// module does not implement that monitor.
type Lane struct {
	// Index is the 1-based lane (channel) number.
	Index int
	// BiasAmperes is the laser bias current.
	BiasAmperes *float64
	// TxPowerWatts is the transmitted optical power.
	TxPowerWatts *float64
	// RxPowerWatts is the received optical power (average or OMA, see
	// Module.RxPowerIsOMA).
	RxPowerWatts *float64
	// Flags are nil when the module does not implement flags.
	BiasFlags    *Flags
	TxPowerFlags *Flags
	RxPowerFlags *Flags
}

// Module is a decoded module memory.
type Module struct {
	Standard Standard
	Identity Identity
	// Diagnostics is false when the module implements no monitors (copper
	// cables, flat-memory modules); the fields below are then empty.
	Diagnostics bool
	// TemperatureCelsius and SupplyVolts are nil when not implemented.
	TemperatureCelsius *float64
	SupplyVolts        *float64
	TemperatureFlags   *Flags
	VoltageFlags       *Flags
	// RxPowerIsOMA is true when received power is measured as OMA rather
	// than average power.
	RxPowerIsOMA bool
	Lanes        []Lane
	// Thresholds are nil when not advertised, all zero, or out of order;
	// a warning threshold of 0 beside a non-zero alarm is nil on its own.
	TemperatureThresholds *Thresholds
	VoltageThresholds     *Thresholds
	BiasThresholds        *Thresholds
	TxPowerThresholds     *Thresholds
	RxPowerThresholds     *Thresholds
	// Warnings lists data that was present but not usable, e.g. threshold
	// sets in an impossible order; the rest of the module still decodes.
	Warnings []string
}

// Decode decodes the module in m, choosing the memory map from the
// identifier byte (SFF-8024 Table 4-1) at lower-memory offset 0 of I2C
// address 0x50.
func Decode(m *Memory) (*Module, error) {
	v := m.view("lower memory 0x50", AddrA0, 0, 0)
	if err := v.need(0, 1, "identifier"); err != nil {
		return nil, err
	}
	id := v.b(0)
	switch id {
	case 0x00:
		return nil, ErrNoModule
	case 0x03:
		return decodeSFF8472(m)
	case 0x0c, 0x0d, 0x11:
		return decodeSFF8636(m)
	case 0x18, 0x19, 0x1e:
		return decodeCMIS(m)
	default:
		return nil, &UnsupportedError{Identifier: id}
	}
}

// IdentifierName returns the SFF-8024 Table 4-1 name of an identifier.
func IdentifierName(id byte) string {
	switch id {
	case 0x00:
		return "unknown or unspecified"
	case 0x01:
		return "GBIC"
	case 0x02:
		return "soldered module"
	case 0x03:
		return "SFP/SFP+/SFP28"
	case 0x0c:
		return "QSFP"
	case 0x0d:
		return "QSFP+"
	case 0x11:
		return "QSFP28"
	case 0x18:
		return "QSFP-DD"
	case 0x19:
		return "OSFP"
	case 0x1a:
		return "SFP-DD"
	case 0x1e:
		return "QSFP+ or later with CMIS"
	default:
		return "other"
	}
}

// ConnectorName returns the SFF-8024 Table 4-3 name of a connector code.
func ConnectorName(c byte) string {
	names := map[byte]string{
		0x00: "unknown", 0x01: "SC", 0x07: "LC", 0x0b: "optical pigtail",
		0x0c: "MPO 1x12", 0x0d: "MPO 2x16", 0x21: "copper pigtail",
		0x22: "RJ45", 0x23: "no separable connector", 0x24: "MXC 2x16",
		0x25: "CS", 0x26: "SN", 0x27: "MPO 2x12", 0x28: "MPO 1x16",
	}
	if n, ok := names[c]; ok {
		return n
	}
	return "other"
}

// ascii trims an SFF ASCII field (space padded, sometimes NUL padded) and
// replaces non-printable bytes so label values stay valid UTF-8.
func ascii(b []byte) string {
	var sb strings.Builder
	for _, c := range b {
		if c >= 0x20 && c < 0x7f {
			sb.WriteByte(c)
		} else {
			sb.WriteByte(' ')
		}
	}
	return strings.TrimSpace(sb.String())
}

func oui(b []byte) string { return fmt.Sprintf("%02x:%02x:%02x", b[0], b[1], b[2]) }

// Scaling of the common fixed-point encodings (SFF-8472 Rev 12.4 Table
// 9-11, SFF-8636 Rev 2.10a Section 6.2.4, CMIS 5.2 Table 8-10/8-94).
const (
	tempLSB  = 1.0 / 256 // degrees C, signed
	voltLSB  = 100e-6    // volts
	biasLSB  = 2e-6      // amperes
	powerLSB = 0.1e-6    // watts
)

func ptr(f float64) *float64 { return &f }

// finite returns f, or nil with a warning when a calibration produced NaN
// or Inf.
func (mod *Module) finite(f float64, what string) *float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		mod.Warnings = append(mod.Warnings, what+": not a finite number, dropped")
		return nil
	}
	return &f
}

// thresholds returns the thresholds of l when they are not all zero,
// finite and ordered. A warning threshold that is 0 while its alarm is not
// is absent: modules that fill in only the alarm thresholds leave the
// warnings at 0, and a high warning of 0 would be crossed by any
// temperature above 0 °C and any voltage, bias or power at all. The one
// exception is a low warning of 0 below a negative low alarm: 0 °C is a
// real low temperature warning (many commercial-range modules advertise
// -5 or -10 °C and 0 °C), and it is ordered like one.
func (mod *Module) thresholds(l limits, what string) *Thresholds {
	if l == (limits{}) {
		return nil
	}
	for _, f := range []float64{l.highAlarm, l.lowAlarm, l.highWarning, l.lowWarning} {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			mod.Warnings = append(mod.Warnings, what+" thresholds: not finite, dropped")
			return nil
		}
	}
	t := Thresholds{HighAlarm: l.highAlarm, LowAlarm: l.lowAlarm}
	if l.highWarning != 0 || l.highAlarm == 0 {
		t.HighWarning = ptr(l.highWarning)
	}
	if l.lowWarning != 0 || l.lowAlarm <= 0 {
		t.LowWarning = ptr(l.lowWarning)
	}
	if !t.ordered() {
		mod.Warnings = append(mod.Warnings, fmt.Sprintf("%s thresholds out of order (low alarm %g, low warning %g, high warning %g, high alarm %g), dropped", what, l.lowAlarm, l.lowWarning, l.highWarning, l.highAlarm))
		return nil
	}
	return &t
}

// flagsFromBits builds Flags from a byte whose high-alarm, low-alarm,
// high-warning and low-warning bits are given as masks.
func flagsFromBits(b, ha, la, hw, lw byte) *Flags {
	return &Flags{HighAlarm: b&ha != 0, LowAlarm: b&la != 0, HighWarning: b&hw != 0, LowWarning: b&lw != 0}
}
