package infiniband

import (
	"errors"
	"math"
	"strings"
	"syscall"
	"testing"

	"github.com/nic-exporter/nic_exporter/internal/errclass"
)

func TestParseIBState(t *testing.T) {
	for _, tc := range []struct {
		in   string
		num  uint64
		name string
		ok   bool
	}{
		{"4: ACTIVE", 4, "ACTIVE", true},
		{"5: LinkUp", 5, "LinkUp", true},
		{"2: Polling", 2, "Polling", true},
		{"4: PortConfigurationTraining", 4, "PortConfigurationTraining", true},
		{"6: LinkErrorRecovery\n", 6, "LinkErrorRecovery", true},
		{"1:DOWN", 1, "DOWN", true},
		{"ACTIVE", 0, "", false},
		{": ACTIVE", 0, "", false},
		{"-1: DOWN", 0, "", false},
		{"300: X", 0, "", false},
		{"", 0, "", false},
	} {
		num, name, err := parseIBState(tc.in)
		if (err == nil) != tc.ok || num != tc.num || name != tc.name {
			t.Errorf("parseIBState(%q) = %d, %q, %v; want %d, %q, ok=%v", tc.in, num, name, err, tc.num, tc.name, tc.ok)
		}
		if err != nil && errclass.Reason(err) != "parse" {
			t.Errorf("parseIBState(%q) error reason %q, want parse", tc.in, errclass.Reason(err))
		}
	}
}

func TestParseIBRate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"400 Gb/sec (4X NDR)", 5e10, true},
		{"200 Gb/sec (4X HDR)", 2.5e10, true},
		{"56 Gb/sec (4X FDR)", 7e9, true},
		{"10 Gb/sec (1X FDR10)", 1.25e9, true},
		{"2.5 Gb/sec (1X SDR)", 3.125e8, true},
		{"800 Gb/sec (4X XDR)\n", 1e11, true},
		{"400 Mb/sec", 0, false},
		{"fast", 0, false},
		{"NaN Gb/sec", 0, false},
		{"-1 Gb/sec", 0, false},
		{"", 0, false},
	} {
		got, err := parseIBRate(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseIBRate(%q) = %v, %v; want %v, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestParseIBCounter(t *testing.T) {
	for _, tc := range []struct {
		in          string
		want        uint64
		unsupported bool
		ok          bool
	}{
		{"205143497464492", 205143497464492, false, true},
		{"4294967295\n", 4294967295, false, true},
		{"18446744073709551615", math.MaxUint64, false, true},
		{"0", 0, false, true},
		{"N/A (no PMA)", 0, true, false},
		{"N/A (no PMA)\n", 0, true, false},
		{"N/A", 0, true, false},
		{"18446744073709551616", 0, false, false},
		{"-1", 0, false, false},
		{"0x10", 0, false, false},
		{"", 0, false, false},
	} {
		got, err := parseIBCounter(tc.in)
		if (err == nil) != tc.ok || got != tc.want || errclass.IsUnsupportedAttr(err) != tc.unsupported {
			t.Errorf("parseIBCounter(%q) = %d, %v; want %d, ok=%v, unsupported=%v", tc.in, got, err, tc.want, tc.ok, tc.unsupported)
		}
	}
	if _, err := parseIBCounter("N/A (no PMA)"); !errors.Is(err, syscall.EOPNOTSUPP) || errclass.Reason(err) != "eopnotsupp" {
		t.Errorf("no PMA error %v has reason %q, want eopnotsupp", err, errclass.Reason(err))
	}
}

func TestParseIBLID(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0x1a", 26, true},
		{"0x0", 0, true},
		{"0xffff", 65535, true},
		{"0x1\n", 1, true},
		{"26", 0, false},
		{"0x", 0, false},
		{"0xfffffffff", 0, false},
	} {
		got, err := parseIBLID(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseIBLID(%q) = %d, %v; want %d, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestIBPortCounterNames(t *testing.T) {
	for _, tc := range []struct {
		file  string
		scale float64
		want  string
	}{
		{"port_xmit_data", 4, "nic_infiniband_port_xmit_data_bytes_total"},
		{"VL15_dropped", 1, "nic_infiniband_port_vl15_dropped_total"},
		{"symbol_error", 1, "nic_infiniband_port_symbol_error_total"},
		{"unicast_rcv_packets", 1, "nic_infiniband_port_unicast_rcv_packets_total"},
	} {
		if got := ibPortCounterName(tc.file, tc.scale); got != tc.want {
			t.Errorf("ibPortCounterName(%q) = %q, want %q", tc.file, got, tc.want)
		}
	}
	if ibHWCounters["lifespan"] != nil {
		t.Error("lifespan is a setting and must not be exported as a counter")
	}
}

// The fuzz targets check that the parsers of kernel-written text never
// panic and only return values their callers can export.

func FuzzParseIBState(f *testing.F) {
	for _, s := range []string{"4: ACTIVE", "5: LinkUp", "3: Disabled", "1:DOWN", ":", "", "99999999999999999999: x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		num, name, err := parseIBState(s)
		if err != nil {
			if num != 0 || name != "" {
				t.Errorf("parseIBState(%q) returned %d, %q with error %v", s, num, name, err)
			}
			return
		}
		if num > math.MaxUint8 || name != strings.TrimSpace(name) {
			t.Errorf("parseIBState(%q) = %d, %q", s, num, name)
		}
	})
}

func FuzzParseIBRate(f *testing.F) {
	for _, s := range []string{"400 Gb/sec (4X NDR)", "2.5 Gb/sec (1X SDR)", "10 Gb/sec (1X FDR10)", "1e308 Gb/sec", "Inf Gb/sec", "0x10 Gb/sec", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseIBRate(s)
		if err == nil && (math.IsNaN(v) || math.IsInf(v, 0) || v < 0) {
			t.Errorf("parseIBRate(%q) = %v", s, v)
		}
	})
}

func FuzzParseIBCounter(f *testing.F) {
	for _, s := range []string{"205143497464492", "4294967295\n", "N/A (no PMA)", "N/A", "-0", "+1", "18446744073709551616", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseIBCounter(s)
		if err != nil {
			if v != 0 {
				t.Errorf("parseIBCounter(%q) = %d with error %v", s, v, err)
			}
			if r := errclass.Reason(err); r != "parse" && r != "eopnotsupp" {
				t.Errorf("parseIBCounter(%q) error reason %q", s, r)
			}
		}
	})
}

func FuzzParseIBLID(f *testing.F) {
	for _, s := range []string{"0x1a", "0x0", "0xffff", "0x", "0x-1", "26"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseIBLID(s)
		if err == nil && v > math.MaxUint32 {
			t.Errorf("parseIBLID(%q) = %d", s, v)
		}
	})
}
