package sff

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// dumpFile is a parsed testdata/*.dump: real module memory plus the values
// another tool printed for it (see each file's header for its source).
type dumpFile struct {
	mem    *Memory
	expect [][2]string // key, value in file order
}

// parseDump reads the testdata format: "# comment", "expect key = value",
// "page addr=0x50 bank=0 page=0x03" and "XX: 16 hex bytes" rows whose
// offset is within the 256-byte window (rows below 0x80 are lower memory).
func parseDump(data []byte) (*dumpFile, error) {
	d := &dumpFile{mem: NewMemory()}
	var addr, bank, page uint64
	inPage := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "expect "):
			k, v, ok := strings.Cut(strings.TrimPrefix(line, "expect "), "=")
			if !ok {
				return nil, fmt.Errorf("line %d: expect without '='", n)
			}
			d.expect = append(d.expect, [2]string{strings.TrimSpace(k), strings.TrimSpace(v)})
		case strings.HasPrefix(line, "page "):
			if _, err := fmt.Sscanf(line, "page addr=0x%x bank=%d page=0x%x", &addr, &bank, &page); err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			inPage = true
		default:
			off, rest, ok := strings.Cut(line, ":")
			if !ok || !inPage {
				return nil, fmt.Errorf("line %d: unexpected %q", n, line)
			}
			o, err := strconv.ParseUint(off, 16, 8)
			if err != nil {
				return nil, fmt.Errorf("line %d: offset: %w", n, err)
			}
			var row []byte
			for _, f := range strings.Fields(rest) {
				b, err := strconv.ParseUint(f, 16, 8)
				if err != nil {
					return nil, fmt.Errorf("line %d: byte %q: %w", n, f, err)
				}
				row = append(row, byte(b))
			}
			if err := d.mem.Put(uint8(addr), uint8(bank), uint8(page), int(o), row); err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
		}
	}
	return d, sc.Err()
}

// dbm converts milliwatts to dBm the way ethtool and sfppi print it: 0 mW
// and anything at or below 0.0001 mW shows as the -40 dBm floor.
func dbm(mw float64) float64 {
	if mw <= 0.0001 {
		return -40
	}
	return 10 * math.Log10(mw)
}

// actual returns the decoded value named by an expect key as a string
// (identity) or a number (diagnostics).
func actual(m *Module, key string) (string, float64, bool) {
	id := m.Identity
	str := map[string]string{
		"standard":    string(m.Standard),
		"identifier":  fmt.Sprintf("0x%02x", id.Identifier),
		"connector":   id.ConnectorName,
		"media":       id.Media,
		"vendor_name": id.VendorName,
		"vendor_oui":  id.VendorOUI,
		"part_number": id.PartNumber,
		"revision":    id.Revision,
		"serial":      id.SerialNumber,
		"date_code":   id.DateCode,
		"diagnostics": strconv.FormatBool(m.Diagnostics),
		"lanes":       strconv.Itoa(len(m.Lanes)),
	}
	if s, ok := str[key]; ok {
		return s, 0, true
	}
	deref := func(p *float64) (string, float64, bool) {
		if p == nil {
			return "", 0, false
		}
		return "", *p, true
	}
	switch key {
	case "temperature_c":
		return deref(m.TemperatureCelsius)
	case "voltage_v":
		return deref(m.SupplyVolts)
	}
	if t := m.TemperatureThresholds; t != nil {
		switch key {
		case "temp_high_alarm_c":
			return "", t.HighAlarm, true
		case "temp_low_alarm_c":
			return "", t.LowAlarm, true
		case "temp_high_warning_c":
			return deref(t.HighWarning)
		case "temp_low_warning_c":
			return deref(t.LowWarning)
		}
	}
	var lane int
	var field string
	if _, err := fmt.Sscanf(key, "lane%d_%s", &lane, &field); err != nil || lane < 1 || lane > len(m.Lanes) {
		return "", 0, false
	}
	l := m.Lanes[lane-1]
	mw := func(p *float64) (string, float64, bool) {
		if p == nil {
			return "", 0, false
		}
		return "", *p * 1000, true
	}
	switch field {
	case "bias_ma":
		return mw(l.BiasAmperes)
	case "tx_mw":
		return mw(l.TxPowerWatts)
	case "rx_mw":
		return mw(l.RxPowerWatts)
	case "tx_dbm", "rx_dbm":
		p := l.TxPowerWatts
		if field == "rx_dbm" {
			p = l.RxPowerWatts
		}
		if p == nil {
			return "", 0, false
		}
		return "", dbm(*p * 1000), true
	}
	return "", 0, false
}

// TestGoldenRealDumps decodes every real module dump in testdata and
// compares with the values the source's tool printed for it.
func TestGoldenRealDumps(t *testing.T) {
	files, err := filepath.Glob("testdata/*.dump")
	if err != nil {
		t.Fatal(err)
	}
	perStandard := map[string]int{}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			d, err := parseDump(data)
			if err != nil {
				t.Fatalf("parse %s: %v", f, err)
			}
			pair, err := parseEthtoolPair(data)
			if err != nil {
				t.Fatalf("parse %s: %v", f, err)
			}
			if len(d.expect) == 0 && len(pair.lines) == 0 {
				t.Fatalf("%s has no expectations and no ethtool output", f)
			}
			m, err := Decode(d.mem)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			for _, e := range d.expect {
				key, want := e[0], e[1]
				gotS, gotF, ok := actual(m, key)
				if !ok {
					t.Errorf("%s: not decoded (want %s)", key, want)
					continue
				}
				val, tol, isNum := strings.Cut(want, "~")
				if !isNum {
					if gotS != want {
						t.Errorf("%s = %q, want %q", key, gotS, want)
					}
					continue
				}
				w, err1 := strconv.ParseFloat(strings.TrimSpace(val), 64)
				tl, err2 := strconv.ParseFloat(strings.TrimSpace(tol), 64)
				if err1 != nil || err2 != nil {
					t.Fatalf("%s: bad number %q", key, want)
				}
				if math.Abs(gotF-w) > tl {
					t.Errorf("%s = %.6f, want %v ±%v", key, gotF, w, tl)
				}
			}
			if key := "standard"; true {
				s, _, _ := actual(m, key)
				perStandard[s]++
			}
		})
	}
	for _, s := range []Standard{SFF8472, SFF8636, CMIS} {
		if perStandard[string(s)] < 3 {
			t.Errorf("%d real dumps for %s, want at least 3", perStandard[string(s)], s)
		}
	}
}
