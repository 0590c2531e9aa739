package sysfs

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/nic-exporter/nic_exporter/internal/errclass"
)

func TestParsePCIeSpeed(t *testing.T) {
	tests := []struct {
		in      string
		want    float64
		ok      bool
		wantErr bool
	}{
		{"32.0 GT/s PCIe", 32, true, false},
		{"16 GT/s", 16, true, false},
		{"2.5 GT/s PCIe", 2.5, true, false},
		{"Unknown", 0, false, false},
		{"Unknown speed", 0, false, false},
		{"", 0, false, false},
		{"fast", 0, false, true},
		{"-1 GT/s", 0, false, true},
	}
	for _, tt := range tests {
		got, ok, err := ParsePCIeSpeed(tt.in)
		if got != tt.want || ok != tt.ok || (err != nil) != tt.wantErr {
			t.Errorf("ParsePCIeSpeed(%q) = %v, %v, %v; want %v, %v, err %v", tt.in, got, ok, err, tt.want, tt.ok, tt.wantErr)
		}
	}
}

func FuzzParsePCIeSpeed(f *testing.F) {
	for _, s := range []string{"32.0 GT/s PCIe", "Unknown", "8 GT/s", "", "1e400 GT/s", "NaN GT/s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, ok, err := ParsePCIeSpeed(s)
		if ok && (err != nil || v < 0 || v != v) {
			t.Fatalf("ParsePCIeSpeed(%q) = %v, %v, %v", s, v, ok, err)
		}
	})
}

func TestParseCounter(t *testing.T) {
	tests := []struct {
		in      string
		want    uint64
		wantErr bool
	}{
		{"0", 0, false},
		{"123456789", 123456789, false},
		{"18446744073709551615", 18446744073709551615, false},
		{"18446744073709551616", 0, true},
		{"NaN", 0, true},
		{"+Inf", 0, true},
		{"Inf", 0, true},
		{"1e+26", 0, true},
		{"-5", 0, true},
		{"+5", 0, true},
		{"12.5", 0, true},
		{"0x10", 0, true},
		{"1_000", 0, true},
		{"", 0, true},
		{"garbage", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseCounter(tt.in)
		if got != tt.want || (err != nil) != tt.wantErr || (err != nil && !errors.Is(err, errclass.ErrParse)) {
			t.Errorf("ParseCounter(%q) = %v, %v; want %v, error %v wrapping errclass.ErrParse", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func FuzzParseCounter(f *testing.F) {
	for _, s := range []string{"0", "18446744073709551615", "NaN", "-1", "1e3", "0x1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseCounter(s)
		if err != nil {
			return
		}
		if strconv.FormatUint(v, 10) != strings.TrimLeft(s, "0") && !(v == 0 && strings.Trim(s, "0") == "") {
			t.Fatalf("ParseCounter(%q) = %d", s, v)
		}
	})
}
