package demo

import (
	_ "embed"
	"fmt"
	"strings"
	"time"

	"github.com/nic-exporter/nic_exporter/internal/ethtooldump"
	"github.com/nic-exporter/nic_exporter/internal/ethtoolioctl"
)

// The recorded `ethtool -i` and `ethtool -S` output of the reference
// host's ConnectX-7 Ethernet port (16 channels) and ENA interface (8
// queues); each file names its public sources in its header.
var (
	//go:embed ethtool_mlx5.txt
	ethtoolMlx5 string
	//go:embed ethtool_ena.txt
	ethtoolENA string
)

var ethtoolPart = part{
	faults: map[string]string{
		"wd_expired":       "the ENA interface ens5 misses keep-alives: wd_expired and total_resets count one reset at the start and one more per minute",
		"bw_in_allowance":  "ens5 exceeds the instance's inbound bandwidth allowance: bw_in_allowance_exceeded grows by 2,500 packets/s",
		"rx_out_of_buffer": "the ConnectX-7 Ethernet port's receive rings run dry: rx_out_of_buffer grows by 15,000 packets/s",
	},
	update: (*Host).updateEthtool,
}

// demoEthtool is the demo host's ethtool source and what it is built from.
type demoEthtool struct {
	src  *ethtooldump.Source
	devs []*ethtoolDev
}

// ethtoolDev is one recorded device and how its counters advance.
type ethtoolDev struct {
	name  string
	base  *ethtooldump.Dump
	scale map[trafficClass]float64 // traffic multipliers from the netdev part's rates
}

// day is the traffic the recorded values stand for: counters at demo time
// t are the recorded value times (day+t)/day, times the scale of their
// traffic class.
const day = 24 * time.Hour

// growsWithTraffic says whether a recorded counter advances with
// traffic. Small counters (errors, resets, events) stay where the dump
// left them unless a fault drives them; levels never scale.
func growsWithTraffic(name string, v uint64) bool {
	for _, s := range []string{"allowance", "err", "drop", "discard", "out_of_buffer", "reset", "timeout", "fail", "ena_srd_"} {
		if strings.Contains(name, s) {
			return false
		}
	}
	return v >= 1_000_000
}

func newDemoEthtool() (*demoEthtool, error) {
	mlx, err := ethtooldump.Parse(strings.NewReader(ethtoolMlx5))
	if err != nil {
		return nil, fmt.Errorf("embedded mlx5 ethtool dump: %w", err)
	}
	mlx.FirmwareVersion = cx7.ethtoolFirmware()
	ena, err := ethtooldump.Parse(strings.NewReader(ethtoolENA))
	if err != nil {
		return nil, fmt.Errorf("embedded ENA ethtool dump: %w", err)
	}
	mlxScale, err := trafficScales(mlx, "enp8s0f1np1", mlx5References)
	if err != nil {
		return nil, err
	}
	enaScale, err := trafficScales(ena, "ens5", enaReferences)
	if err != nil {
		return nil, err
	}
	d := &demoEthtool{devs: []*ethtoolDev{
		{name: "enp8s0f1np1", base: mlx, scale: mlxScale},
		{name: "ens5", base: ena, scale: enaScale},
	}}
	copyDump := func(b *ethtooldump.Dump) *ethtooldump.Dump {
		c := *b
		c.Values = append([]uint64(nil), b.Values...)
		return &c
	}
	d.src = ethtooldump.NewSource(
		&ethtooldump.Device{Name: "lo", Index: 1},
		&ethtooldump.Device{Name: "ens5", Index: 2, Dump: copyDump(ena),
			Link: ethtoolioctl.Link{HasSettings: true, SpeedMbps: 100000, Duplex: 1, HasDetected: true, Detected: true}},
		&ethtooldump.Device{Name: "enp8s0f1np1", Index: 4, Dump: copyDump(mlx),
			Link: ethtoolioctl.Link{HasSettings: true, SpeedMbps: 400000, Duplex: 1, Autoneg: 1, HasDetected: true, Detected: true}},
	)
	return d, nil
}

// EthtoolSource returns the demo host's ethtool source, which serves the
// recorded ConnectX-7 and ENA devices through the interface the real
// ioctl source implements.
func (h *Host) EthtoolSource() *ethtooldump.Source { return h.ethtool.src }

func (h *Host) updateEthtool() error {
	if h.ethtool == nil {
		d, err := newDemoEthtool()
		if err != nil {
			return err
		}
		h.ethtool = d
	}
	t := h.Elapsed()
	grow := float64(day+t) / float64(day)
	faults := map[string]map[string]uint64{
		"ens5":        {},
		"enp8s0f1np1": {},
	}
	if h.Active("wd_expired") || h.ActiveFor("wd_expired") > 0 {
		n := 1 + uint64(h.ActiveFor("wd_expired")/time.Minute)
		for _, s := range []string{"wd_expired", "total_resets", "interface_down", "interface_up"} {
			faults["ens5"][s] = n
		}
	}
	faults["ens5"]["bw_in_allowance_exceeded"] = uint64(2500 * h.ActiveFor("bw_in_allowance").Seconds())
	faults["enp8s0f1np1"]["rx_out_of_buffer"] = uint64(15000 * h.ActiveFor("rx_out_of_buffer").Seconds())
	// roce_congestion (infiniband.go): the port pauses its switch port on
	// priority 3 for 40% of the time, 5,000 pause frames a second; storm
	// detection warns at the start and every 20 s, and storm prevention
	// stops the pauses 10 s in and every minute after.
	if c := h.ActiveFor("roce_congestion"); c > 0 {
		mlx := faults["enp8s0f1np1"]
		mlx["tx_prio3_pause"] = uint64(5000 * c.Seconds())
		mlx["tx_prio3_pause_duration"] = uint64(400_000 * c.Seconds()) // microseconds
		mlx["tx_pause_storm_warning_events"] = 1 + uint64(c/(20*time.Second))
		mlx["tx_pause_storm_error_events"] = uint64((c + 50*time.Second) / time.Minute)
	}
	if err := h.addPhyEthtool(faults["enp8s0f1np1"]); err != nil { // phy.go
		return err
	}

	h.ethtool.src.Update(func(devices map[string]*ethtooldump.Device) {
		for _, d := range h.ethtool.devs {
			dev := devices[d.name]
			if dev == nil {
				continue
			}
			for i, name := range d.base.Names {
				v := d.base.Values[i]
				if growsWithTraffic(name, v) {
					v = uint64(float64(v) * d.scale[classify(name)] * grow)
				}
				dev.Dump.Values[i] = v + faults[d.name][name]
			}
		}
	})
	return nil
}
