package sff

// SFF-8636 Rev 2.10a offsets (also valid for SFF-8436 QSFP+). Lower page:
// Table 6-4 (flags), Table 6-7/6-8 (module and channel monitors). Upper
// page 00h: Table 6-14 (serial ID). Upper page 03h: Table 6-26/6-27
// (module and channel thresholds).
const (
	qsfpStatus     = 2  // bit 2 Flat_mem: upper page 00h only
	qsfpTempFlags  = 6  // bits 7-4: high alarm, low alarm, high warning, low warning
	qsfpVccFlags   = 7  // same bits
	qsfpRxFlags    = 9  // bytes 9-10: two lanes per byte, lane 1 in bits 7-4
	qsfpBiasFlags  = 11 // bytes 11-12
	qsfpTxFlags    = 13 // bytes 13-14
	qsfpTemp       = 22
	qsfpVcc        = 26
	qsfpRxPower    = 34 // 4 lanes, 2 bytes each
	qsfpBias       = 42
	qsfpTxPower    = 50
	qsfpLowerEnd   = 58
	qsfpConnector  = 130
	qsfpDeviceTech = 147 // bits 7-4 transmitter technology (Table 6-19)
	qsfpVendorName = 148
	qsfpVendorOUI  = 165
	qsfpVendorPN   = 168
	qsfpVendorRev  = 184
	qsfpVendorSN   = 196
	qsfpDateCode   = 212
	qsfpDiagType   = 220 // bit 3 rx power average (else OMA), bit 2 tx power supported
	qsfpUpper0End  = 221
	qsfpThrTemp    = 128 // page 03h; each set is HA, LA, HW, LW, 2 bytes each
	qsfpThrVcc     = 144
	qsfpThrRx      = 176
	qsfpThrBias    = 184
	qsfpThrTx      = 192
	qsfpPage3End   = 200
	qsfpLanes      = 4
)

func decodeSFF8636(m *Memory) (*Module, error) {
	p0 := m.view("SFF-8636 page 00h", AddrA0, 0, 0)
	if err := p0.need(0, qsfpLowerEnd, "lower page (bytes 0-57)"); err != nil {
		return nil, err
	}
	if err := p0.need(PageSize, qsfpUpper0End-PageSize, "upper page 00h serial ID (bytes 128-220)"); err != nil {
		return nil, err
	}
	mod := &Module{Standard: SFF8636}
	tech := p0.b(qsfpDeviceTech) >> 4
	mod.Identity = Identity{
		Identifier:     p0.b(0),
		IdentifierName: IdentifierName(p0.b(0)),
		Connector:      p0.b(qsfpConnector),
		ConnectorName:  ConnectorName(p0.b(qsfpConnector)),
		Media:          "optical",
		VendorName:     ascii(p0.bytes(qsfpVendorName, 16)),
		VendorOUI:      oui(p0.bytes(qsfpVendorOUI, 3)),
		PartNumber:     ascii(p0.bytes(qsfpVendorPN, 16)),
		Revision:       ascii(p0.bytes(qsfpVendorRev, 2)),
		SerialNumber:   ascii(p0.bytes(qsfpVendorSN, 16)),
		DateCode:       ascii(p0.bytes(qsfpDateCode, 8)),
	}
	// Transmitter technology 1010b and up are copper cables (Table
	// 6-19). The monitors are decoded for them too, as ethtool does:
	// many cable assemblies implement the temperature and Vcc monitors,
	// and the others report zeros.
	if tech >= 0x0a {
		mod.Identity.Media = "copper"
	}
	mod.Diagnostics = true
	diag := p0.b(qsfpDiagType)
	mod.RxPowerIsOMA = diag&0x08 == 0
	txSupported := diag&0x04 != 0

	temp := func(v view, off int) float64 { return float64(v.s16(off)) * tempLSB }
	volt := func(v view, off int) float64 { return float64(v.u16(off)) * voltLSB }
	bias := func(v view, off int) float64 { return float64(v.u16(off)) * biasLSB }
	pow := func(v view, off int) float64 { return float64(v.u16(off)) * powerLSB }

	mod.TemperatureCelsius = ptr(temp(p0, qsfpTemp))
	mod.SupplyVolts = ptr(volt(p0, qsfpVcc))
	mod.TemperatureFlags = flagsFromBits(p0.b(qsfpTempFlags), 0x80, 0x40, 0x20, 0x10)
	mod.VoltageFlags = flagsFromBits(p0.b(qsfpVccFlags), 0x80, 0x40, 0x20, 0x10)
	laneFlags := func(base, lane int) *Flags {
		b := p0.b(base + lane/2)
		if lane%2 == 0 {
			b >>= 4
		}
		return flagsFromBits(b, 0x08, 0x04, 0x02, 0x01)
	}
	for i := 0; i < qsfpLanes; i++ {
		l := Lane{
			Index:        i + 1,
			BiasAmperes:  ptr(bias(p0, qsfpBias+2*i)),
			RxPowerWatts: ptr(pow(p0, qsfpRxPower+2*i)),
			BiasFlags:    laneFlags(qsfpBiasFlags, i),
			RxPowerFlags: laneFlags(qsfpRxFlags, i),
		}
		if txSupported {
			l.TxPowerWatts = ptr(pow(p0, qsfpTxPower+2*i))
			l.TxPowerFlags = laneFlags(qsfpTxFlags, i)
		}
		mod.Lanes = append(mod.Lanes, l)
	}

	if p0.b(qsfpStatus)&0x04 != 0 {
		return mod, nil // flat memory: no page 03h thresholds
	}
	if !m.hasUpper(AddrA0, 0, 3) {
		mod.Warnings = append(mod.Warnings, "SFF-8636 page 03h not supplied: thresholds unknown")
		return mod, nil
	}
	p3 := m.view("SFF-8636 page 03h", AddrA0, 0, 3)
	if err := p3.need(qsfpThrTemp, qsfpPage3End-qsfpThrTemp, "thresholds (bytes 128-199)"); err != nil {
		return nil, err
	}
	four := func(f func(view, int) float64, off int) limits {
		return limits{highAlarm: f(p3, off), lowAlarm: f(p3, off+2), highWarning: f(p3, off+4), lowWarning: f(p3, off+6)}
	}
	mod.TemperatureThresholds = mod.thresholds(four(temp, qsfpThrTemp), "temperature")
	mod.VoltageThresholds = mod.thresholds(four(volt, qsfpThrVcc), "voltage")
	mod.BiasThresholds = mod.thresholds(four(bias, qsfpThrBias), "bias")
	mod.RxPowerThresholds = mod.thresholds(four(pow, qsfpThrRx), "rx power")
	if txSupported {
		mod.TxPowerThresholds = mod.thresholds(four(pow, qsfpThrTx), "tx power")
	}
	return mod, nil
}
