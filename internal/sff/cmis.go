package sff

import "fmt"

// CMIS 5.2 offsets (unchanged since CMIS 4.0 for the fields used here).
// Lower memory: Table 8-4 (identifier, revision, memory model), Table 8-9
// (module flags), Table 8-10 (module monitors), Table 8-12 (media type).
// Page 00h: Table 8-29 (vendor information). Page 01h: Table 8-43
// (RxPowerMeasurementType) and Table 8-47 (implemented monitors). Page
// 02h: Table 8-66 (thresholds). Page 11h: Table 8-91 (lane flags) and
// Table 8-94 (lane monitors). Banks hold 8 lanes each (Section 8.2.1).
const (
	cmisMemModel   = 2 // bit 7: flat memory (page 00h only)
	cmisModFlags   = 9 // bits 0-3 temp HA, LA, HW, LW; bits 4-7 Vcc
	cmisTemp       = 14
	cmisVcc        = 16
	cmisMediaType  = 85
	cmisLowerEnd   = 86
	cmisVendorName = 129
	cmisVendorOUI  = 145
	cmisVendorPN   = 148
	cmisVendorRev  = 164
	cmisVendorSN   = 166
	cmisDateCode   = 182
	cmisConnector  = 203
	cmisPage0End   = 204
	cmisRxPwrType  = 151 // page 01h bit 4: 1 average, 0 OMA
	cmisModMon     = 159 // page 01h bit 0 temperature, bit 1 Vcc monitor
	cmisLaneMon    = 160 // page 01h bit 0 bias, bit 1 tx power, bit 2 rx power, bits 4-3 bias scale
	cmisPage1End   = 161
	cmisThrTemp    = 128 // page 02h; each set is HA, LA, HW, LW
	cmisThrVcc     = 136
	cmisThrTx      = 176
	cmisThrBias    = 184
	cmisThrRx      = 192
	cmisPage2End   = 200
	cmisTxPwrFlags = 139 // page 11h, one bit per lane: HA, LA, HW, LW at 139-142
	cmisBiasFlags  = 143 // 143-146
	cmisRxPwrFlags = 149 // 149-152
	cmisTxPower    = 154 // 8 lanes, 2 bytes each
	cmisBias       = 170
	cmisRxPower    = 186
	cmisPage11End  = 202
	cmisLanesBank  = 8
	cmisMaxBanks   = 4
)

func decodeCMIS(m *Memory) (*Module, error) {
	p0 := m.view("CMIS page 00h", AddrA0, 0, 0)
	if err := p0.need(0, cmisLowerEnd, "lower memory (bytes 0-85)"); err != nil {
		return nil, err
	}
	if err := p0.need(PageSize, cmisPage0End-PageSize, "page 00h vendor information (bytes 128-203)"); err != nil {
		return nil, err
	}
	mod := &Module{Standard: CMIS}
	mod.Identity = Identity{
		Identifier:     p0.b(0),
		IdentifierName: IdentifierName(p0.b(0)),
		Connector:      p0.b(cmisConnector),
		ConnectorName:  ConnectorName(p0.b(cmisConnector)),
		Media:          cmisMediaName(p0.b(cmisMediaType)),
		VendorName:     ascii(p0.bytes(cmisVendorName, 16)),
		VendorOUI:      oui(p0.bytes(cmisVendorOUI, 3)),
		PartNumber:     ascii(p0.bytes(cmisVendorPN, 16)),
		Revision:       ascii(p0.bytes(cmisVendorRev, 2)),
		SerialNumber:   ascii(p0.bytes(cmisVendorSN, 16)),
		DateCode:       ascii(p0.bytes(cmisDateCode, 8)),
	}
	if p0.b(cmisMemModel)&0x80 != 0 {
		return mod, nil // flat memory: no advertising, thresholds or lane pages
	}
	if !m.hasUpper(AddrA0, 0, 1) {
		mod.Warnings = append(mod.Warnings, "CMIS page 01h not supplied: implemented monitors unknown")
		return mod, nil
	}
	p1 := m.view("CMIS page 01h", AddrA0, 0, 1)
	if err := p1.need(cmisRxPwrType, cmisPage1End-cmisRxPwrType, "advertising (bytes 151-160)"); err != nil {
		return nil, err
	}
	modMon, laneMon := p1.b(cmisModMon), p1.b(cmisLaneMon)
	hasTemp, hasVcc := modMon&0x01 != 0, modMon&0x02 != 0
	hasBias, hasTx, hasRx := laneMon&0x01 != 0, laneMon&0x02 != 0, laneMon&0x04 != 0
	// TxBiasCurrentScalingFactor: 00b x1, 01b x2, 10b x4 (Table 8-47).
	biasScale := float64(int(1) << ((laneMon >> 3) & 0x03))
	if (laneMon>>3)&0x03 == 3 {
		mod.Warnings = append(mod.Warnings, "CMIS bias scaling factor 11b is reserved; bias not reported")
		hasBias = false
	}
	mod.RxPowerIsOMA = p1.b(cmisRxPwrType)&0x10 == 0
	mod.Diagnostics = hasTemp || hasVcc || hasBias || hasTx || hasRx

	temp := func(v view, off int) float64 { return float64(v.s16(off)) * tempLSB }
	volt := func(v view, off int) float64 { return float64(v.u16(off)) * voltLSB }
	bias := func(v view, off int) float64 { return float64(v.u16(off)) * biasLSB * biasScale }
	pow := func(v view, off int) float64 { return float64(v.u16(off)) * powerLSB }

	flags := p0.b(cmisModFlags)
	if hasTemp {
		mod.TemperatureCelsius = ptr(temp(p0, cmisTemp))
		mod.TemperatureFlags = flagsFromBits(flags, 0x01, 0x02, 0x04, 0x08)
	}
	if hasVcc {
		mod.SupplyVolts = ptr(volt(p0, cmisVcc))
		mod.VoltageFlags = flagsFromBits(flags, 0x10, 0x20, 0x40, 0x80)
	}

	if !m.hasUpper(AddrA0, 0, 2) {
		mod.Warnings = append(mod.Warnings, "CMIS page 02h not supplied: thresholds unknown")
	} else {
		p2 := m.view("CMIS page 02h", AddrA0, 0, 2)
		if err := p2.need(cmisThrTemp, cmisPage2End-cmisThrTemp, "thresholds (bytes 128-199)"); err != nil {
			return nil, err
		}
		four := func(f func(view, int) float64, off int) limits {
			return limits{highAlarm: f(p2, off), lowAlarm: f(p2, off+2), highWarning: f(p2, off+4), lowWarning: f(p2, off+6)}
		}
		if hasTemp {
			mod.TemperatureThresholds = mod.thresholds(four(temp, cmisThrTemp), "temperature")
		}
		if hasVcc {
			mod.VoltageThresholds = mod.thresholds(four(volt, cmisThrVcc), "voltage")
		}
		if hasBias {
			mod.BiasThresholds = mod.thresholds(four(bias, cmisThrBias), "bias")
		}
		if hasTx {
			mod.TxPowerThresholds = mod.thresholds(four(pow, cmisThrTx), "tx power")
		}
		if hasRx {
			mod.RxPowerThresholds = mod.thresholds(four(pow, cmisThrRx), "rx power")
		}
	}

	if !hasBias && !hasTx && !hasRx {
		return mod, nil
	}
	for bank := 0; bank < cmisMaxBanks; bank++ {
		if !m.hasUpper(AddrA0, uint8(bank), 0x11) {
			if bank == 0 {
				mod.Warnings = append(mod.Warnings, "CMIS page 11h not supplied: lane monitors unknown")
			}
			break
		}
		p11 := m.view(fmt.Sprintf("CMIS bank %d page 11h", bank), AddrA0, uint8(bank), 0x11)
		if err := p11.need(cmisTxPwrFlags, cmisPage11End-cmisTxPwrFlags, "lane flags and monitors (bytes 139-201)"); err != nil {
			return nil, err
		}
		laneFlags := func(base, lane int) *Flags {
			bit := byte(1) << lane
			return &Flags{
				HighAlarm: p11.b(base)&bit != 0, LowAlarm: p11.b(base+1)&bit != 0,
				HighWarning: p11.b(base+2)&bit != 0, LowWarning: p11.b(base+3)&bit != 0,
			}
		}
		for i := 0; i < cmisLanesBank; i++ {
			l := Lane{Index: bank*cmisLanesBank + i + 1}
			if hasBias {
				l.BiasAmperes = ptr(bias(p11, cmisBias+2*i))
				l.BiasFlags = laneFlags(cmisBiasFlags, i)
			}
			if hasTx {
				l.TxPowerWatts = ptr(pow(p11, cmisTxPower+2*i))
				l.TxPowerFlags = laneFlags(cmisTxPwrFlags, i)
			}
			if hasRx {
				l.RxPowerWatts = ptr(pow(p11, cmisRxPower+2*i))
				l.RxPowerFlags = laneFlags(cmisRxPwrFlags, i)
			}
			mod.Lanes = append(mod.Lanes, l)
		}
	}
	return mod, nil
}

// cmisMediaName returns the SFF-8024 Table 4-5 module media type name.
func cmisMediaName(t byte) string {
	switch t {
	case 0x01:
		return "optical multimode"
	case 0x02:
		return "optical single mode"
	case 0x03:
		return "passive copper"
	case 0x04:
		return "active cable"
	case 0x05:
		return "BASE-T"
	default:
		return "undefined"
	}
}
