package demo

import (
	"testing"
	"time"
)

// TestASICTemperature checks the demo ASIC's temperature: a wave around
// 58 °C when healthy; with nic_overheating a ramp to 96 °C over 30 s
// (within 10 °C of the 105 °C threshold: NICTemperatureHigh), then 106 °C
// from 60 s (NICTemperatureCritical); always a multiple of 0.125 °C as the
// firmware reports.
func TestASICTemperature(t *testing.T) {
	for _, tt := range []struct {
		t, d     time.Duration
		faulty   bool
		min, max float64
	}{
		{t: 0, min: 56.5, max: 59.5},
		{t: 150 * time.Second, min: 56.5, max: 59.5},
		{t: 10 * time.Minute, d: 0, faulty: true, min: 56.5, max: 59.5},
		{t: 10 * time.Minute, d: 15 * time.Second, faulty: true, min: 76, max: 78},
		{t: 10 * time.Minute, d: 45 * time.Second, faulty: true, min: 96, max: 96},
		{t: 10 * time.Minute, d: 5 * time.Minute, faulty: true, min: 106, max: 106},
	} {
		v := asicTemperature(tt.t, tt.d, tt.faulty)
		if v < tt.min || v > tt.max || v*8 != float64(int(v*8)) {
			t.Errorf("asicTemperature(%v, %v, %v) = %v, want a multiple of 0.125 in [%v, %v]", tt.t, tt.d, tt.faulty, v, tt.min, tt.max)
		}
	}
}
