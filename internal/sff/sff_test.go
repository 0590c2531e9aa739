package sff

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// sfp builds an SFF-8472 memory with internal calibration, DDM and flags
// implemented, and lets each case patch A0h and A2h.
func sfp(patchA0, patchA2 func(a0, a2 []byte)) *Memory {
	a0 := make([]byte, 256)
	a2 := make([]byte, 256)
	a0[0] = 0x03
	a0[sfpConnector] = 0x07
	copy(a0[sfpVendorName:], "ACME CORP.      ")
	a0[sfpDiagType] = 0x68
	a0[sfpEnhOptions] = 0x80
	// Thresholds HA, LA, HW, LW: temp 80/-10/70/0 C.
	binary.BigEndian.PutUint16(a2[0:], 0x5000)
	binary.BigEndian.PutUint16(a2[2:], 0xf600)
	binary.BigEndian.PutUint16(a2[4:], 0x4600)
	binary.BigEndian.PutUint16(a2[6:], 0x0000)
	// Monitors: 25.5 C, 3.3 V, 6 mA, 0.5 mW, 0 mW.
	binary.BigEndian.PutUint16(a2[96:], 0x1980)
	binary.BigEndian.PutUint16(a2[98:], 33000)
	binary.BigEndian.PutUint16(a2[100:], 3000)
	binary.BigEndian.PutUint16(a2[102:], 5000)
	binary.BigEndian.PutUint16(a2[104:], 0)
	for _, patch := range []func(a0, a2 []byte){patchA0, patchA2} {
		if patch != nil {
			patch(a0, a2)
		}
	}
	return FromSFF8472Dump(append(a0, a2...))
}

func near(t *testing.T, what string, got *float64, want float64) {
	t.Helper()
	if got == nil {
		t.Errorf("%s: nil, want %g", what, want)
		return
	}
	if math.Abs(*got-want) > 1e-9*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %g, want %g", what, *got, want)
	}
}

func TestDecodeErrors(t *testing.T) {
	lowerOnly := func(b ...byte) *Memory {
		m := NewMemory()
		_ = m.Put(AddrA0, 0, 0, 0, b)
		return m
	}
	tests := []struct {
		name string
		mem  *Memory
		want string
		is   error
	}{
		{name: "nil memory", mem: nil, want: "identifier needs bytes 0-0"},
		{name: "empty", mem: NewMemory(), want: "identifier needs bytes 0-0"},
		{name: "identifier 0", mem: lowerOnly(0x00), is: ErrNoModule},
		{name: "unknown identifier", mem: lowerOnly(0x42), want: "unsupported module type: identifier 0x42"},
		{name: "GBIC", mem: lowerOnly(0x01), want: "unsupported module type: identifier 0x01 (GBIC)"},
		{name: "short SFP A0h", mem: lowerOnly(0x03, 0, 0), want: "SFF-8472 A0h: serial ID (A0h bytes 0-93) needs bytes 0-93"},
		{name: "SFP with DDM but no A2h", mem: FromSFF8472Dump(sfpA0Only()), want: "SFF-8472 A2h: diagnostics (A2h bytes 0-117) needs bytes 0-117"},
		{name: "short QSFP lower page", mem: lowerOnly(0x11, 0), want: "SFF-8636 page 00h: lower page (bytes 0-57) needs bytes 0-57"},
		{name: "QSFP without upper page 00h", mem: lowerOnly(append([]byte{0x0d}, make([]byte, 127)...)...), want: "upper page 00h serial ID (bytes 128-220) needs bytes 128-220"},
		{name: "CMIS without page 00h", mem: lowerOnly(append([]byte{0x18}, make([]byte, 127)...)...), want: "CMIS page 00h: page 00h vendor information (bytes 128-203) needs bytes 128-203"},
		{name: "CMIS truncated page 11h", mem: cmisMem(func(p map[uint8][]byte) { p[0x11] = p[0x11][:20] }), want: "CMIS bank 0 page 11h: lane flags and monitors (bytes 139-201) needs bytes 139-201"},
		{name: "QSFP truncated page 03h", mem: qsfpMem(func(p map[uint8][]byte) { p[3] = p[3][:10] }), want: "SFF-8636 page 03h: thresholds (bytes 128-199) needs bytes 128-199"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Decode(tt.mem)
			if err == nil {
				t.Fatalf("Decode = %+v, want error", m)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v, want %v", err, tt.is)
			}
			if tt.want != "" && !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

func sfpA0Only() []byte {
	a0 := make([]byte, 256)
	a0[0], a0[sfpDiagType] = 0x03, 0x40
	return a0
}

func TestSFF8472(t *testing.T) {
	t.Run("internal calibration", func(t *testing.T) {
		m, err := Decode(sfp(nil, nil))
		if err != nil {
			t.Fatal(err)
		}
		near(t, "temperature", m.TemperatureCelsius, 25.5)
		near(t, "voltage", m.SupplyVolts, 3.3)
		near(t, "bias", m.Lanes[0].BiasAmperes, 0.006)
		near(t, "tx", m.Lanes[0].TxPowerWatts, 0.0005)
		near(t, "rx (dark receiver is 0 W, not NaN)", m.Lanes[0].RxPowerWatts, 0)
		if diff := cmp.Diff(&Thresholds{HighAlarm: 80, LowAlarm: -10, HighWarning: ptr(70), LowWarning: ptr(0)}, m.TemperatureThresholds); diff != "" {
			t.Errorf("temperature thresholds (-want +got):\n%s", diff)
		}
		if m.VoltageThresholds != nil {
			t.Errorf("all-zero voltage thresholds = %+v, want nil", m.VoltageThresholds)
		}
		if m.Identity.VendorName != "ACME CORP." || m.Identity.ConnectorName != "LC" || m.RxPowerIsOMA {
			t.Errorf("identity %+v, OMA %v", m.Identity, m.RxPowerIsOMA)
		}
	})
	t.Run("external calibration", func(t *testing.T) {
		m, err := Decode(sfp(func(a0, a2 []byte) {
			a0[sfpDiagType] = 0x58 // DDM, external, average
			// Rx_PWR(1) = 2.0, Rx_PWR(0) = 10: rx = 2*raw + 10.
			binary.BigEndian.PutUint32(a2[sfpCalRxPwr4+12:], math.Float32bits(2))
			binary.BigEndian.PutUint32(a2[sfpCalRxPwr4+16:], math.Float32bits(10))
			binary.BigEndian.PutUint16(a2[104:], 1000)
			// Tx_I slope 2.0 (0x0200), offset -100 (x2 uA).
			binary.BigEndian.PutUint16(a2[76:], 0x0200)
			binary.BigEndian.PutUint16(a2[78:], 0xff9c)
			// Tx_PWR slope 0.5, offset 0.
			binary.BigEndian.PutUint16(a2[80:], 0x0080)
			// T slope 1, offset +256 (= +1 C).
			binary.BigEndian.PutUint16(a2[84:], 0x0100)
			binary.BigEndian.PutUint16(a2[86:], 0x0100)
			// V slope 1, offset -1000 (= -0.1 V).
			binary.BigEndian.PutUint16(a2[88:], 0x0100)
			binary.BigEndian.PutUint16(a2[90:], 0xfc18)
		}, nil))
		if err != nil {
			t.Fatal(err)
		}
		near(t, "temperature", m.TemperatureCelsius, 26.5)
		near(t, "voltage", m.SupplyVolts, 3.2)
		near(t, "bias", m.Lanes[0].BiasAmperes, (2*3000-100)*2e-6)
		near(t, "tx", m.Lanes[0].TxPowerWatts, 0.5*5000*0.1e-6)
		near(t, "rx", m.Lanes[0].RxPowerWatts, (2*1000+10)*0.1e-6)
		// Thresholds go through the same calibration: 80 C + 1 C.
		if m.TemperatureThresholds == nil || m.TemperatureThresholds.HighAlarm != 81 {
			t.Errorf("calibrated temperature thresholds = %+v", m.TemperatureThresholds)
		}
	})
	t.Run("calibration producing NaN is dropped", func(t *testing.T) {
		m, err := Decode(sfp(func(a0, a2 []byte) {
			a0[sfpDiagType] = 0x58
			binary.BigEndian.PutUint32(a2[sfpCalRxPwr4+16:], math.Float32bits(float32(math.NaN())))
		}, nil))
		if err != nil {
			t.Fatal(err)
		}
		if m.Lanes[0].RxPowerWatts != nil {
			t.Errorf("rx = %v, want nil", *m.Lanes[0].RxPowerWatts)
		}
		if len(m.Warnings) == 0 {
			t.Error("no warning for NaN calibration")
		}
	})
	t.Run("flags", func(t *testing.T) {
		m, err := Decode(sfp(nil, func(_, a2 []byte) {
			a2[sfpAlarms] = 0x80 | 0x10 | 0x04 | 0x01 // temp high, Vcc low, bias low, tx low
			a2[sfpAlarms+1] = 0x40                    // rx low alarm
			a2[sfpWarnings+1] = 0xc0                  // rx high and low warning
		}))
		if err != nil {
			t.Fatal(err)
		}
		l := m.Lanes[0]
		checks := []struct {
			name string
			got  Flags
			want Flags
		}{
			{"temperature", *m.TemperatureFlags, Flags{HighAlarm: true}},
			{"voltage", *m.VoltageFlags, Flags{LowAlarm: true}},
			{"bias", *l.BiasFlags, Flags{LowAlarm: true}},
			{"tx", *l.TxPowerFlags, Flags{LowAlarm: true}},
			{"rx", *l.RxPowerFlags, Flags{LowAlarm: true, HighWarning: true, LowWarning: true}},
		}
		for _, c := range checks {
			if c.got != c.want {
				t.Errorf("%s flags = %+v, want %+v", c.name, c.got, c.want)
			}
		}
	})
	t.Run("thresholds out of order", func(t *testing.T) {
		m, err := Decode(sfp(nil, func(_, a2 []byte) {
			binary.BigEndian.PutUint16(a2[0:], 0x0000) // high alarm 0 C < low warning
		}))
		if err != nil {
			t.Fatal(err)
		}
		if m.TemperatureThresholds != nil {
			t.Errorf("thresholds = %+v, want nil", m.TemperatureThresholds)
		}
		if len(m.Warnings) != 1 || !strings.Contains(m.Warnings[0], "temperature thresholds out of order") {
			t.Errorf("warnings = %q", m.Warnings)
		}
		if m.TemperatureCelsius == nil {
			t.Error("monitors must still decode")
		}
	})
	t.Run("no diagnostics", func(t *testing.T) {
		m, err := Decode(FromSFF8472Dump(func() []byte { b := sfpA0Only(); b[sfpDiagType] = 0; return b }()))
		if err != nil {
			t.Fatal(err)
		}
		if m.Diagnostics || len(m.Lanes) != 0 || m.TemperatureCelsius != nil {
			t.Errorf("module without DDM decoded as %+v", m)
		}
	})
}

// qsfpMem builds an SFF-8636 memory with pages 00h and 03h.
func qsfpMem(patch func(p map[uint8][]byte)) *Memory {
	lower := make([]byte, 128)
	lower[0] = 0x11
	lower[qsfpTempFlags] = 0x20                          // temp high warning
	lower[qsfpRxFlags] = 0x04                            // lane 2 rx low alarm
	lower[qsfpBiasFlags+1] = 0x80                        // lane 3 bias high alarm
	binary.BigEndian.PutUint16(lower[qsfpTemp:], 0xff00) // -1 C
	binary.BigEndian.PutUint16(lower[qsfpVcc:], 32000)
	for i := 0; i < 4; i++ {
		binary.BigEndian.PutUint16(lower[qsfpRxPower+2*i:], uint16(1000*(i+1)))
		binary.BigEndian.PutUint16(lower[qsfpBias+2*i:], uint16(3000+i))
		binary.BigEndian.PutUint16(lower[qsfpTxPower+2*i:], uint16(7000+i))
	}
	p := map[uint8][]byte{0: make([]byte, 128), 3: make([]byte, 128)}
	p[0][qsfpConnector-128] = 0x0c
	p[0][qsfpDeviceTech-128] = 0x00
	copy(p[0][qsfpVendorName-128:], "QSFP VENDOR")
	p[0][qsfpDiagType-128] = 0x0c // rx average, tx supported
	thr := func(off int, v ...uint16) {
		for i, x := range v {
			binary.BigEndian.PutUint16(p[3][off-128+2*i:], x)
		}
	}
	thr(qsfpThrTemp, 0x4b00, 0xfb00, 0x4600, 0x0000)
	thr(qsfpThrVcc, 36300, 29700, 34650, 31350)
	thr(qsfpThrRx, 20000, 100, 15000, 200)
	thr(qsfpThrBias, 7500, 1000, 6500, 1500)
	thr(qsfpThrTx, 20000, 1000, 15000, 2000)
	if patch != nil {
		patch(p)
	}
	m := NewMemory()
	_ = m.Put(AddrA0, 0, 0, 0, lower)
	for page, b := range p {
		_ = m.Put(AddrA0, 0, page, 128, b)
	}
	return m
}

func TestSFF8636(t *testing.T) {
	m, err := Decode(qsfpMem(nil))
	if err != nil {
		t.Fatal(err)
	}
	near(t, "temperature", m.TemperatureCelsius, -1)
	near(t, "voltage", m.SupplyVolts, 3.2)
	if len(m.Lanes) != 4 {
		t.Fatalf("%d lanes", len(m.Lanes))
	}
	near(t, "lane 4 rx", m.Lanes[3].RxPowerWatts, 4000*0.1e-6)
	near(t, "lane 2 bias", m.Lanes[1].BiasAmperes, 3001*2e-6)
	near(t, "lane 1 tx", m.Lanes[0].TxPowerWatts, 7000*0.1e-6)
	if !m.TemperatureFlags.HighWarning || !m.Lanes[1].RxPowerFlags.LowAlarm || m.Lanes[0].RxPowerFlags.LowAlarm || !m.Lanes[2].BiasFlags.HighAlarm {
		t.Errorf("flags: temp %+v lane2 rx %+v lane3 bias %+v", m.TemperatureFlags, m.Lanes[1].RxPowerFlags, m.Lanes[2].BiasFlags)
	}
	if diff := cmp.Diff(&Thresholds{HighAlarm: 75, LowAlarm: -5, HighWarning: ptr(70), LowWarning: ptr(0)}, m.TemperatureThresholds); diff != "" {
		t.Errorf("temperature thresholds (-want +got):\n%s", diff)
	}
	near(t, "rx low alarm", &m.RxPowerThresholds.LowAlarm, 100*0.1e-6)
	near(t, "bias high alarm", &m.BiasThresholds.HighAlarm, 7500*2e-6)
	near(t, "tx high warning", m.TxPowerThresholds.HighWarning, 15000*0.1e-6)
	near(t, "vcc low warning", m.VoltageThresholds.LowWarning, 3.135)
	if m.Identity.ConnectorName != "MPO 1x12" || m.Identity.VendorName != "QSFP VENDOR" {
		t.Errorf("identity %+v", m.Identity)
	}

	t.Run("page 03h missing", func(t *testing.T) {
		m, err := Decode(qsfpMem(func(p map[uint8][]byte) { delete(p, 3) }))
		if err != nil {
			t.Fatal(err)
		}
		if m.TemperatureThresholds != nil || len(m.Warnings) != 1 {
			t.Errorf("thresholds %+v warnings %q", m.TemperatureThresholds, m.Warnings)
		}
	})
	t.Run("no tx power monitor", func(t *testing.T) {
		m, err := Decode(qsfpMem(func(p map[uint8][]byte) { p[0][qsfpDiagType-128] = 0x08 }))
		if err != nil {
			t.Fatal(err)
		}
		if m.Lanes[0].TxPowerWatts != nil || m.TxPowerThresholds != nil {
			t.Error("tx power reported although not supported")
		}
	})
}

// cmisMem builds a paged CMIS memory with pages 00h, 01h, 02h and 11h.
func cmisMem(patch func(p map[uint8][]byte)) *Memory {
	lower := make([]byte, 128)
	lower[0] = 0x18
	lower[cmisModFlags] = 0x01 | 0x80 // temp high alarm, Vcc low warning
	binary.BigEndian.PutUint16(lower[cmisTemp:], 0x2fb8)
	binary.BigEndian.PutUint16(lower[cmisVcc:], 0x811f)
	lower[cmisMediaType] = 0x02
	p := map[uint8][]byte{0: make([]byte, 128), 1: make([]byte, 128), 2: make([]byte, 128), 0x11: make([]byte, 128)}
	p[0][cmisConnector-128] = 0x07
	copy(p[0][cmisVendorName-128:], "CMIS VENDOR")
	p[1][cmisRxPwrType-128] = 0x10
	p[1][cmisModMon-128] = 0x03
	p[1][cmisLaneMon-128] = 0x07 | 0x08 // bias, tx, rx; bias x2
	thr := func(off int, v ...uint16) {
		for i, x := range v {
			binary.BigEndian.PutUint16(p[2][off-128+2*i:], x)
		}
	}
	thr(cmisThrTemp, 0x4b00, 0xfb00, 0x4600, 0x0000)
	thr(cmisThrBias, 10000, 1000, 9000, 2000)
	for i := 0; i < 8; i++ {
		binary.BigEndian.PutUint16(p[0x11][cmisTxPower-128+2*i:], uint16(20000+i))
		binary.BigEndian.PutUint16(p[0x11][cmisBias-128+2*i:], uint16(30000+i))
		binary.BigEndian.PutUint16(p[0x11][cmisRxPower-128+2*i:], uint16(i))
	}
	p[0x11][cmisTxPwrFlags-128] = 0x80   // lane 8 tx high alarm
	p[0x11][cmisBiasFlags+3-128] = 0x01  // lane 1 bias low warning
	p[0x11][cmisRxPwrFlags+1-128] = 0x01 // lane 1 rx low alarm
	if patch != nil {
		patch(p)
	}
	m := NewMemory()
	_ = m.Put(AddrA0, 0, 0, 0, lower)
	for page, b := range p {
		_ = m.Put(AddrA0, 0, page, 128, b)
	}
	return m
}

func TestCMIS(t *testing.T) {
	m, err := Decode(cmisMem(nil))
	if err != nil {
		t.Fatal(err)
	}
	near(t, "temperature", m.TemperatureCelsius, float64(0x2fb8)/256)
	near(t, "voltage", m.SupplyVolts, 0x811f*100e-6)
	if len(m.Lanes) != 8 {
		t.Fatalf("%d lanes", len(m.Lanes))
	}
	near(t, "lane 3 tx", m.Lanes[2].TxPowerWatts, 20002*0.1e-6)
	near(t, "lane 1 bias (x2 scaling)", m.Lanes[0].BiasAmperes, 30000*2e-6*2)
	near(t, "lane 1 rx (0 W)", m.Lanes[0].RxPowerWatts, 0)
	near(t, "bias high alarm (x2 scaling)", &m.BiasThresholds.HighAlarm, 10000*2e-6*2)
	if !m.Lanes[7].TxPowerFlags.HighAlarm || m.Lanes[6].TxPowerFlags.HighAlarm || !m.Lanes[0].BiasFlags.LowWarning || !m.Lanes[0].RxPowerFlags.LowAlarm {
		t.Errorf("lane flags wrong: %+v %+v %+v", m.Lanes[7].TxPowerFlags, m.Lanes[0].BiasFlags, m.Lanes[0].RxPowerFlags)
	}
	if *m.TemperatureFlags != (Flags{HighAlarm: true}) || *m.VoltageFlags != (Flags{LowWarning: true}) {
		t.Errorf("module flags %+v %+v", m.TemperatureFlags, m.VoltageFlags)
	}
	if m.RxPowerIsOMA || m.Identity.Media != "optical single mode" || m.Identity.VendorName != "CMIS VENDOR" {
		t.Errorf("identity %+v OMA %v", m.Identity, m.RxPowerIsOMA)
	}
	if m.TxPowerThresholds != nil {
		t.Error("all-zero tx thresholds must be nil")
	}

	t.Run("flat memory", func(t *testing.T) {
		mem := cmisMem(nil)
		mem.Lower[AddrA0][cmisMemModel] = 0x80
		m, err := Decode(mem)
		if err != nil {
			t.Fatal(err)
		}
		if m.Diagnostics || m.Lanes != nil || m.Identity.VendorName != "CMIS VENDOR" {
			t.Errorf("flat module %+v", m)
		}
	})
	t.Run("optional pages missing", func(t *testing.T) {
		m, err := Decode(cmisMem(func(p map[uint8][]byte) { delete(p, 2); delete(p, 0x11) }))
		if err != nil {
			t.Fatal(err)
		}
		if m.Lanes != nil || m.BiasThresholds != nil || len(m.Warnings) != 2 {
			t.Errorf("lanes %v thresholds %v warnings %q", m.Lanes, m.BiasThresholds, m.Warnings)
		}
	})
	t.Run("second bank", func(t *testing.T) {
		mem := cmisMem(nil)
		_ = mem.Put(AddrA0, 1, 0x11, 128, mem.Upper[PageKey{Addr: AddrA0, Page: 0x11}])
		m, err := Decode(mem)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Lanes) != 16 || m.Lanes[15].Index != 16 {
			t.Errorf("%d lanes", len(m.Lanes))
		}
	})
}

func TestMemoryPut(t *testing.T) {
	m := NewMemory()
	if err := m.Put(AddrA0, 0, 3, 120, make([]byte, 16)); err != nil {
		t.Fatal(err)
	}
	if len(m.Lower[AddrA0]) != 128 || len(m.Upper[PageKey{Addr: AddrA0, Page: 3}]) != 8 {
		t.Errorf("split at 128 wrong: lower %d upper %d", len(m.Lower[AddrA0]), len(m.Upper[PageKey{Addr: AddrA0, Page: 3}]))
	}
	if err := m.Put(AddrA0, 0, 0, 250, make([]byte, 10)); err == nil {
		t.Error("Put past byte 255 succeeded")
	}
	flat := make([]byte, 640)
	flat[512+5] = 0xab // page 03h byte 133
	pm := FromPagedDump(flat)
	if got := pm.Upper[PageKey{Addr: AddrA0, Page: 3}][5]; got != 0xab {
		t.Errorf("FromPagedDump page 03h byte 133 = %#x", got)
	}
}

// TestThresholdsZeroWarnings checks the rule for warning thresholds left
// at 0: each one beside a non-zero alarm is absent, except a low warning
// of 0 below a negative low alarm, a real temperature threshold.
func TestThresholdsZeroWarnings(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   limits
		want *Thresholds
	}{
		{"all zero: not advertised", limits{}, nil},
		{"all set", limits{80, -10, 70, 0}, &Thresholds{HighAlarm: 80, LowAlarm: -10, HighWarning: ptr(70), LowWarning: ptr(0)}},
		{"temperature alarms only", limits{75, -5, 0, 0}, &Thresholds{HighAlarm: 75, LowAlarm: -5, LowWarning: ptr(0)}},
		{"voltage alarms only", limits{3.6, 3.0, 0, 0}, &Thresholds{HighAlarm: 3.6, LowAlarm: 3.0}},
		{"power high warning only zero", limits{2e-3, 1e-4, 0, 2e-4}, &Thresholds{HighAlarm: 2e-3, LowAlarm: 1e-4, LowWarning: ptr(2e-4)}},
		{"power low alarm zero", limits{2e-3, 0, 1.5e-3, 0}, &Thresholds{HighAlarm: 2e-3, LowAlarm: 0, HighWarning: ptr(1.5e-3), LowWarning: ptr(0)}},
		{"out of order", limits{3.6, 3.0, 3.7, 3.1}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := (&Module{}).thresholds(tc.in, "test")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("thresholds(%+v) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}
