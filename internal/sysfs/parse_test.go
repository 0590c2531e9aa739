package sysfs

import "testing"

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
