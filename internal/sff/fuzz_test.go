package sff

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

// checkFinite fails when a decoded module carries NaN or Inf anywhere a
// metric would be built from.
func checkFinite(t *testing.T, m *Module) {
	t.Helper()
	vals := []*float64{m.TemperatureCelsius, m.SupplyVolts}
	for _, l := range m.Lanes {
		vals = append(vals, l.BiasAmperes, l.TxPowerWatts, l.RxPowerWatts)
	}
	for _, th := range []*Thresholds{m.TemperatureThresholds, m.VoltageThresholds, m.BiasThresholds, m.TxPowerThresholds, m.RxPowerThresholds} {
		if th != nil {
			vals = append(vals, &th.HighAlarm, &th.LowAlarm, th.HighWarning, th.LowWarning)
			if !th.ordered() {
				t.Errorf("unordered thresholds %+v kept", *th)
			}
		}
	}
	for _, v := range vals {
		if v != nil && (math.IsNaN(*v) || math.IsInf(*v, 0)) {
			t.Fatalf("non-finite value %v in %+v", *v, m)
		}
	}
}

// seedDumps adds the real dumps of one standard as flat seeds.
func seedDumps(f *testing.F, glob string, flat func(*Memory) []byte) {
	files, _ := filepath.Glob(filepath.Join("testdata", glob))
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		d, err := parseDump(data)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(flat(d.mem))
	}
}

func window(m *Memory, addr, bank, page uint8) []byte {
	out := make([]byte, 256)
	copy(out, m.Lower[addr])
	copy(out[128:], m.Upper[PageKey{Addr: addr, Bank: bank, Page: page}])
	return out
}

// FuzzSFF8472 feeds arbitrary A0h+A2h dumps (legacy ioctl layout).
func FuzzSFF8472(f *testing.F) {
	seedDumps(f, "sff8472-*.dump", func(m *Memory) []byte {
		return append(window(m, AddrA0, 0, 0), window(m, AddrA2, 0, 0)...)
	})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 0 {
			data[0] = 0x03
		}
		m, err := Decode(FromSFF8472Dump(data))
		if err == nil {
			checkFinite(t, m)
		}
	})
}

// FuzzSFF8636 feeds arbitrary lower+upper 00h..03h dumps.
func FuzzSFF8636(f *testing.F) {
	seedDumps(f, "sff8636-*.dump", func(m *Memory) []byte {
		out := window(m, AddrA0, 0, 0)
		for p := uint8(1); p <= 3; p++ {
			out = append(out, window(m, AddrA0, 0, p)[128:]...)
		}
		return out
	})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 0 {
			data[0] = 0x11
		}
		m, err := Decode(FromPagedDump(data))
		if err == nil {
			checkFinite(t, m)
		}
	})
}

// FuzzCMIS feeds arbitrary lower memory plus upper pages 00h-02h and 11h
// of banks 0 and 1; the first byte selects which optional pages exist.
func FuzzCMIS(f *testing.F) {
	seedDumps(f, "cmis-*.dump", func(m *Memory) []byte {
		out := []byte{0xff}
		out = append(out, window(m, AddrA0, 0, 0)...)
		for _, p := range []uint8{1, 2, 0x11} {
			out = append(out, window(m, AddrA0, 0, p)[128:]...)
		}
		return out
	})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 {
			return
		}
		sel, data := data[0], data[1:]
		data[0] = 0x18
		m := NewMemory()
		_ = m.Put(AddrA0, 0, 0, 0, data[:min(len(data), 256)])
		data = data[min(len(data), 256):]
		for i, k := range []PageKey{{Page: 1}, {Page: 2}, {Page: 0x11}, {Bank: 1, Page: 0x11}} {
			if len(data) == 0 {
				break
			}
			n := min(len(data), PageSize)
			if sel&(1<<i) != 0 {
				_ = m.Put(AddrA0, k.Bank, k.Page, PageSize, data[:n])
			}
			data = data[n:]
		}
		mod, err := Decode(m)
		if err == nil {
			checkFinite(t, mod)
		}
	})
}
