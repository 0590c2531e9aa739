package demo

import (
	"fmt"
	"time"
)

const (
	ibDev  = "sys/devices/pci0000:00/0000:00:01.1/0000:08:00.0"
	ethDev = "sys/devices/pci0000:00/0000:00:01.1/0000:08:00.1"
	enaDev = "sys/devices/pci0000:00/0000:00:05.0"
	loDev  = "sys/devices/virtual/net/lo"
)

var netdevPart = part{
	faults: map[string]string{
		"pcie_degraded": "the ConnectX-7 Ethernet port's PCIe link retrains at x8 instead of x16",
		"link_down":     "the ConnectX-7 Ethernet port loses its carrier while administratively up",
		"link_flap":     "the ConnectX-7 Ethernet port flaps: two carrier changes every 10 s",
		"pcie_aer_corrected": "the ConnectX-7 Ethernet function 0000:08:00.1 sends bursts of 30 correctable PCIe errors (receiver errors) every 10 s; " +
			"its aer_dev_correctable counters rise and the kernel logs one report per burst",
	},
	update: (*Host).updateNetdev,
}

// traffic is the steady load of one interface, per second.
type traffic struct {
	dir                  string
	rxPkts, txPkts       float64
	rxBytes, txBytes     float64
	multicast, rxDropped float64
}

var netdevTraffic = []traffic{
	// NDR InfiniBand carrying IPoIB control traffic; RDMA bypasses netdev.
	{dir: ibDev + "/net/ibp8s0f0", rxPkts: 1200, txPkts: 1100, rxBytes: 1.8e6, txBytes: 1.5e6, multicast: 3},
	// 400G Ethernet storage traffic.
	{dir: ethDev + "/net/enp8s0f1np1", rxPkts: 2.1e6, txPkts: 1.9e6, rxBytes: 1.9e10, txBytes: 1.6e10, multicast: 12, rxDropped: 0.02},
	// ENA front-end traffic.
	{dir: enaDev + "/net/ens5", rxPkts: 85000, txPkts: 79000, rxBytes: 1.1e8, txBytes: 6.4e7, multicast: 0},
	{dir: loDev, rxPkts: 300, txPkts: 300, rxBytes: 45000, txBytes: 45000},
}

func counter(rate float64, t time.Duration) string {
	return fmt.Sprintf("%d", uint64(rate*t.Seconds()))
}

func (h *Host) updateNetdev() error {
	t := h.Elapsed()
	// The base offset makes counters look like a host that has been up
	// for a day rather than a fresh boot.
	base := t + 24*time.Hour
	for _, tr := range netdevTraffic {
		for file, rate := range map[string]float64{
			"rx_packets": tr.rxPkts, "tx_packets": tr.txPkts,
			"rx_bytes": tr.rxBytes, "tx_bytes": tr.txBytes,
			"multicast": tr.multicast, "rx_dropped": tr.rxDropped,
		} {
			if err := h.write(tr.dir+"/statistics/"+file, counter(rate, base)); err != nil {
				return err
			}
		}
	}

	if err := h.updateAER(); err != nil {
		return err
	}

	eth := ethDev + "/net/enp8s0f1np1"
	width := "16"
	if h.Active("pcie_degraded") {
		width = "8"
	}
	if err := h.write(ethDev+"/current_link_width", width); err != nil {
		return err
	}
	// Each 10 s of flapping adds a down and an up transition.
	changes := 2 + 2*int(h.ActiveFor("link_flap")/(10*time.Second))
	// Each link_down adds a down transition when it starts and an up
	// transition when it ends: carrier_changes never goes back.
	carrier, oper := "1", "up"
	changes += 2 * h.Started("link_down")
	if h.Active("link_down") {
		carrier, oper = "0", "down"
		changes--
	}
	// The optic_degrading fault's flaps (phy.go), which LINKSTATE counts.
	opticDowns, opticDown := h.opticLink()
	changes += 2 * opticDowns
	if opticDown {
		carrier, oper = "0", "down"
		changes--
	}
	for file, v := range map[string]string{
		"carrier": carrier, "operstate": oper, "carrier_changes": fmt.Sprint(changes),
	} {
		if err := h.write(eth+"/"+file, v); err != nil {
			return err
		}
	}
	return nil
}
