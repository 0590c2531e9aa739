package sff

import (
	"encoding/binary"
	"math"
)

// SFF-8472 Rev 12.4 offsets. A0h: Table 4-1 (serial ID) and Table 8-5
// (byte 92, diagnostic monitoring type); A2h: Table 9-5 (thresholds),
// Table 9-6 (external calibration constants), Table 9-11 (A/D values) and
// Table 9-12 (alarm and warning flags).
const (
	sfpConnector  = 2
	sfpCableTech  = 8 // bit 2 passive, bit 3 active copper cable
	sfpVendorName = 20
	sfpVendorOUI  = 37
	sfpVendorPN   = 40
	sfpVendorRev  = 56
	sfpVendorSN   = 68
	sfpDateCode   = 84
	sfpDiagType   = 92 // bit 6 DDM implemented, bit 5 internal, bit 4 external calibration, bit 3 rx average
	sfpEnhOptions = 93 // bit 7 alarm/warning flags implemented
	sfpA0End      = 94

	sfpThresholds = 0  // A2h 0-39: temp, Vcc, bias, tx power, rx power; each HA, LA, HW, LW
	sfpCalRxPwr4  = 56 // A2h 56-75: Rx_PWR(4)..Rx_PWR(0), IEEE-754 single
	sfpCalTxI     = 76 // A2h 76-91: slope/offset pairs for Tx_I, Tx_PWR, T, V
	sfpMonitors   = 96 // A2h 96-105: temp, Vcc, bias, tx power, rx power
	sfpAlarms     = 112
	sfpWarnings   = 116
	sfpA2End      = 118
)

// sfpCal is one linear calibration (SFF-8472 Section 9.3 item 1-4): slope
// is unsigned fixed point 8.8, offset a signed integer in the unit of the
// measured value.
type sfpCal struct {
	slope  float64
	offset float64
}

func (c sfpCal) apply(x float64) float64 { return c.slope*x + c.offset }

func decodeSFF8472(m *Memory) (*Module, error) {
	a0 := m.view("SFF-8472 A0h", AddrA0, 0, 0)
	if err := a0.need(0, sfpA0End, "serial ID (A0h bytes 0-93)"); err != nil {
		return nil, err
	}
	mod := &Module{Standard: SFF8472}
	mod.Identity = Identity{
		Identifier:     a0.b(0),
		IdentifierName: IdentifierName(a0.b(0)),
		Connector:      a0.b(sfpConnector),
		ConnectorName:  ConnectorName(a0.b(sfpConnector)),
		Media:          "optical",
		VendorName:     ascii(a0.bytes(sfpVendorName, 16)),
		VendorOUI:      oui(a0.bytes(sfpVendorOUI, 3)),
		PartNumber:     ascii(a0.bytes(sfpVendorPN, 16)),
		Revision:       ascii(a0.bytes(sfpVendorRev, 4)),
		SerialNumber:   ascii(a0.bytes(sfpVendorSN, 16)),
		DateCode:       ascii(a0.bytes(sfpDateCode, 8)),
	}
	if a0.b(sfpCableTech)&0x0c != 0 {
		mod.Identity.Media = "copper"
	}
	diag := a0.b(sfpDiagType)
	if diag&0x40 == 0 {
		return mod, nil
	}
	a2 := m.view("SFF-8472 A2h", AddrA2, 0, 0)
	if err := a2.need(0, sfpA2End, "diagnostics (A2h bytes 0-117)"); err != nil {
		return nil, err
	}
	mod.Diagnostics = true
	mod.RxPowerIsOMA = diag&0x08 == 0
	external := diag&0x10 != 0

	// Internal calibration (Section 9.2): values are already in units of
	// 1/256 C, 100 uV, 2 uA and 0.1 uW. External calibration (Section
	// 9.3): apply slope/offset, and the rx power polynomial.
	ident := sfpCal{slope: 1}
	calI, calTx, calT, calV := ident, ident, ident, ident
	var rxPoly [5]float64 // Rx_PWR(0)..Rx_PWR(4)
	rxPoly[1] = 1
	if external {
		cal := func(off int) sfpCal {
			return sfpCal{slope: float64(a2.u16(off)) / 256, offset: float64(a2.s16(off + 2))}
		}
		calI, calTx, calT, calV = cal(sfpCalTxI), cal(sfpCalTxI+4), cal(sfpCalTxI+8), cal(sfpCalTxI+12)
		for i := 0; i < 5; i++ {
			bits := binary.BigEndian.Uint32(a2.bytes(sfpCalRxPwr4+4*i, 4))
			rxPoly[4-i] = float64(math.Float32frombits(bits))
		}
	}
	temp := func(off int) float64 { return calT.apply(float64(a2.s16(off))) * tempLSB }
	volt := func(off int) float64 { return calV.apply(float64(a2.u16(off))) * voltLSB }
	bias := func(off int) float64 { return math.Max(0, calI.apply(float64(a2.u16(off)))) * biasLSB }
	txp := func(off int) float64 { return math.Max(0, calTx.apply(float64(a2.u16(off)))) * powerLSB }
	rxp := func(off int) float64 {
		x := float64(a2.u16(off))
		p := rxPoly[0] + rxPoly[1]*x + rxPoly[2]*x*x + rxPoly[3]*x*x*x + rxPoly[4]*x*x*x*x
		return math.Max(0, p) * powerLSB
	}
	four := func(f func(int) float64, off int) limits {
		return limits{highAlarm: f(off), lowAlarm: f(off + 2), highWarning: f(off + 4), lowWarning: f(off + 6)}
	}
	mod.TemperatureCelsius = mod.finite(temp(sfpMonitors), "temperature")
	mod.SupplyVolts = mod.finite(volt(sfpMonitors+2), "supply voltage")
	lane := Lane{
		Index:        1,
		BiasAmperes:  mod.finite(bias(sfpMonitors+4), "bias"),
		TxPowerWatts: mod.finite(txp(sfpMonitors+6), "tx power"),
		RxPowerWatts: mod.finite(rxp(sfpMonitors+8), "rx power"),
	}
	mod.TemperatureThresholds = mod.thresholds(four(temp, sfpThresholds), "temperature")
	mod.VoltageThresholds = mod.thresholds(four(volt, sfpThresholds+8), "voltage")
	mod.BiasThresholds = mod.thresholds(four(bias, sfpThresholds+16), "bias")
	mod.TxPowerThresholds = mod.thresholds(four(txp, sfpThresholds+24), "tx power")
	mod.RxPowerThresholds = mod.thresholds(four(rxp, sfpThresholds+32), "rx power")

	if a0.b(sfpEnhOptions)&0x80 != 0 {
		// Table 9-12: bytes 112/116 bit 7/6 temp high/low, 5/4 Vcc,
		// 3/2 bias, 1/0 tx power; bytes 113/117 bit 7/6 rx power.
		al, wa := a2.b(sfpAlarms), a2.b(sfpWarnings)
		al2, wa2 := a2.b(sfpAlarms+1), a2.b(sfpWarnings+1)
		pair := func(a, w byte, hi, lo byte) *Flags {
			return &Flags{HighAlarm: a&hi != 0, LowAlarm: a&lo != 0, HighWarning: w&hi != 0, LowWarning: w&lo != 0}
		}
		mod.TemperatureFlags = pair(al, wa, 0x80, 0x40)
		mod.VoltageFlags = pair(al, wa, 0x20, 0x10)
		lane.BiasFlags = pair(al, wa, 0x08, 0x04)
		lane.TxPowerFlags = pair(al, wa, 0x02, 0x01)
		lane.RxPowerFlags = pair(al2, wa2, 0x80, 0x40)
	}
	mod.Lanes = []Lane{lane}
	return mod, nil
}
