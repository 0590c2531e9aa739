package demo

import (
	_ "embed"
	"fmt"
	"math"
	"time"
)

//go:embed hwmon.txtar
var hwmonTree string

// The demo ConnectX-7's hwmon devices, one per PCI function as mlx5's
// hwmon.c registers them (kernel 6.6+): name "mlx5", a channel for the
// ASIC's sensor 0 and one for the port's module (MTMP sensor index 64 +
// module number), labelled "sensor<index>" as the driver does for sensors
// the firmware leaves unnamed; crit is the sensor's high threshold.
var hwmonPart = part{
	faults: map[string]string{
		"nic_overheating": "the ConnectX-7's ASIC overheats (a failed fan): sensor0 of both functions climbs from 58 °C to 96 °C in 30 s, then to 106 °C, past its 105 °C critical threshold, at 60 s",
	},
	update: (*Host).updateHwmon,
	tree:   hwmonTree,
}

// hwmonDevice is one function's hwmon directory (its name, labels and
// thresholds are in hwmon.txtar) and its module's steady temperature.
type hwmonDevice struct {
	dir        string
	moduleTemp float64
}

var hwmonDevices = []hwmonDevice{
	{dir: ibDev + "/hwmon/hwmon2", moduleTemp: 44.5},
	{dir: ethDev + "/hwmon/hwmon3", moduleTemp: 47.25},
}

// asicTemp is the ASIC's healthy temperature in degrees Celsius; its
// critical threshold is 105 (hwmon.txtar).
const asicTemp = 58

// asicTemperature is sensor 0's temperature d after the start of
// nic_overheating (negative: no fault): a small wave when healthy, the
// fault's ramp otherwise. Values are multiples of the firmware's
// 0.125 °C.
func asicTemperature(t, d time.Duration, faulty bool) float64 {
	v := asicTemp + 1.5*math.Sin(2*math.Pi*t.Seconds()/600)
	if faulty {
		switch {
		case d < 30*time.Second:
			v += (96 - v) * d.Seconds() / 30
		case d < 60*time.Second:
			v = 96
		default:
			v = 106
		}
	}
	return math.Round(v*8) / 8
}

func millis(v float64) string { return fmt.Sprintf("%d", int64(math.Round(v*1000))) }

func (h *Host) updateHwmon() error {
	t := h.Elapsed()
	d, faulty := h.Current("nic_overheating")
	asic := asicTemperature(t, d, faulty)
	// The highest value the firmware tracked: the healthy wave's top, or
	// the fault's peak once it has started.
	highest := math.Round((asicTemp+1.5)*8) / 8
	if spans := h.Spans("nic_overheating"); len(spans) > 0 {
		highest = max(highest, asicTemperature(t, spans[len(spans)-1], true))
	}
	for _, dev := range hwmonDevices {
		for file, v := range map[string]string{
			"temp1_input":   millis(asic),
			"temp1_highest": millis(highest),
			"temp2_input":   millis(dev.moduleTemp),
			"temp2_highest": millis(dev.moduleTemp + 1),
		} {
			if err := h.write(dev.dir+"/"+file, v); err != nil {
				return err
			}
		}
	}
	return nil
}
