package phy_test

import (
	"math"
	"testing"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/phy"
)

// TestZeroWarningThresholds polls a module that fills in only its alarm
// thresholds and leaves every warning threshold at 0 (a real SFP28's
// memory with the warning bytes zeroed, internal/sff/testdata/derived).
// A warning threshold of 0 beside a non-zero alarm is absent: exported as
// 0, the high warning made NICTransceiverTemperatureHigh fire for any
// module above 0 °C, and a low warning of 0 below a positive low alarm
// (Vcc) dropped the whole set, alarms included, as out of order. The
// alarms stay. A low warning of 0 below a negative low alarm is a real
// temperature threshold (this module's own, and the Arista SFP-10GLR's)
// and stays too.
func TestZeroWarningThresholds(t *testing.T) {
	src := newFake(&fakeDev{iface: phy.Interface{Name: "p0", Index: 2}, module: loadDump(t, "derived/sff8472-fs-sfp28-25gsr-alarms-only.dump")})
	errs := collector.NewSourceErrors(zap.NewNop(), 0)
	snap := pollOnce(t, newCollector(t, src, newClock(), zap.NewNop()), errs)
	all := series(t, snap.String()+snap.Detail().String())
	type level struct {
		present bool
		value   float64
	}
	abs := level{}
	at := func(v float64) level { return level{true, v} }
	for _, tc := range []struct {
		family string
		// high alarm, high warning, low warning, low alarm
		want [4]level
	}{
		{"temperature_threshold_celsius", [4]level{at(80), abs, at(0), at(-10)}},
		{"supply_voltage_threshold_volts", [4]level{at(3.6), abs, abs, at(3.0)}},
		{"laser_bias_current_threshold_amperes", [4]level{at(0.011), abs, abs, at(0.002)}},
		{"tx_power_threshold_watts", [4]level{at(2.2387e-3), abs, abs, at(0.1258e-3)}},
		{"rx_power_threshold_watts", [4]level{at(2.2387e-3), abs, abs, at(0.0630e-3)}},
	} {
		for i, name := range []string{"high_alarm", "high_warning", "low_warning", "low_alarm"} {
			key := `nic_transceiver_` + tc.family + `{device="p0",level="` + name + `"}`
			v, ok := all[key]
			w := tc.want[i]
			if ok != w.present {
				t.Errorf("%s present %v, want %v (value %v)", key, ok, w.present, v)
				continue
			}
			if ok && math.Abs(v-w.value) > 1e-9+math.Abs(w.value)*1e-6 {
				t.Errorf("%s = %v, want %v", key, v, w.value)
			}
		}
	}
}
