package demo

import (
	"fmt"
	"strings"

	"github.com/nic-exporter/nic_exporter/internal/ethtooldump"
)

// The traffic of an interface is defined once, by its netdev rates
// (netdevTraffic in netdev.go); the driver statistics `ethtool -S` shows
// for the same port are scaled from the recorded dumps to those rates, so
// both sources describe the same traffic as they do on a real host:
//   - mlx5: the software counters rx_bytes, rx_packets, tx_bytes and
//     tx_packets are what the netdev statistics are made of
//     (mlx5e_get_stats), so they equal them; the vport and per-channel
//     counters keep their recorded proportions to them; the port's phy
//     byte counters (rx_bytes_phy, rx_prio0_bytes, ...) count whole frames
//     on the wire, so they add wireOverhead bytes a frame.
//   - ENA: the per-queue queue_N_rx_bytes, queue_N_rx_cnt and their tx
//     counterparts add up to the netdev statistics (ena_get_stats64 sums
//     the rings).
// Every other counter that grows with traffic follows the packets of its
// direction (rx when the name has none, like ch_events).

// wireOverhead is what a frame on the wire has that the software byte
// counters do not: the 4-byte FCS and the 4-byte 802.1Q tag mlx5 strips on
// receive and inserts on transmit (rx_removed_vlan_packets and
// tx_added_vlan_packets of the dump cover nearly every packet).
const wireOverhead = 8

// trafficClass is the kind of traffic a statistic counts.
type trafficClass struct {
	tx    bool // transmit direction (else receive)
	bytes bool // bytes (else packets or events)
	phy   bool // counted at the physical port, frames as on the wire
}

// classify returns the traffic class of a statistic from its name: the
// first rx/tx token ("rx", "tx0", "queue_3_tx_bytes") gives the
// direction; "bytes" not preceded by a number (a size bucket such as
// rx_65_to_127_bytes_phy counts packets) means bytes; a "phy" or "prioN"
// token the physical port.
func classify(name string) trafficClass {
	var c trafficClass
	dir := false
	toks := strings.Split(name, "_")
	for i, tok := range toks {
		switch {
		case !dir && (tok == "rx" || tok == "tx" || numbered(tok, "rx") || numbered(tok, "tx")):
			c.tx, dir = strings.HasPrefix(tok, "tx"), true
		case tok == "bytes" && (i == 0 || !numbered(toks[i-1], "")):
			c.bytes = true
		case tok == "phy" || numbered(tok, "prio"):
			c.phy = true
		}
	}
	return c
}

// numbered reports whether tok is prefix followed by one or more digits.
func numbered(tok, prefix string) bool {
	rest, ok := strings.CutPrefix(tok, prefix)
	if !ok || rest == "" {
		return false
	}
	for _, r := range rest {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// reference names the statistics whose total over the dump stands for a
// traffic class: an exact name, or a suffix starting with "_" that every
// queue's statistic ends in.
type reference map[trafficClass]string

var (
	mlx5References = reference{
		{}:                                 "rx_packets",
		{bytes: true}:                      "rx_bytes",
		{tx: true}:                         "tx_packets",
		{tx: true, bytes: true}:            "tx_bytes",
		{bytes: true, phy: true}:           "rx_bytes_phy",
		{tx: true, bytes: true, phy: true}: "tx_bytes_phy",
	}
	enaReferences = reference{
		{}:                      "_rx_cnt",
		{bytes: true}:           "_rx_bytes",
		{tx: true}:              "_tx_cnt",
		{tx: true, bytes: true}: "_tx_bytes",
	}
)

// rate returns the per-second rate of a traffic class of an interface in
// the netdev traffic model.
func (tr traffic) rate(c trafficClass) float64 {
	pkts, bytes := tr.rxPkts, tr.rxBytes
	if c.tx {
		pkts, bytes = tr.txPkts, tr.txBytes
	}
	switch {
	case c.bytes && c.phy:
		return bytes + wireOverhead*pkts
	case c.bytes:
		return bytes
	}
	return pkts
}

// trafficOf returns the netdev traffic model of an interface.
func trafficOf(ifname string) (traffic, bool) {
	for _, tr := range netdevTraffic {
		if strings.HasSuffix(tr.dir, "/"+ifname) {
			return tr, true
		}
	}
	return traffic{}, false
}

// trafficScales returns, for every traffic class, the multiplier that
// makes the dump's statistics of that class advance at the rates the
// netdev traffic model gives the interface. A class without a reference
// of its own (phy packets, or any phy class of a driver without port
// counters) takes the scale of the same class without phy.
func trafficScales(d *ethtooldump.Dump, ifname string, refs reference) (map[trafficClass]float64, error) {
	tr, ok := trafficOf(ifname)
	if !ok {
		return nil, fmt.Errorf("demo ethtool: no netdev traffic for %s", ifname)
	}
	out := make(map[trafficClass]float64)
	for _, tx := range []bool{false, true} {
		for _, bytes := range []bool{false, true} {
			for _, phy := range []bool{false, true} {
				c := trafficClass{tx: tx, bytes: bytes, phy: phy}
				ref, ok := refs[c]
				if !ok {
					c.phy = false
					if ref, ok = refs[c]; !ok {
						return nil, fmt.Errorf("demo ethtool: %s has no reference statistic for %+v", ifname, c)
					}
				}
				out[trafficClass{tx: tx, bytes: bytes, phy: phy}] = rateScale(d, ref, tr.rate(c))
			}
		}
	}
	return out, nil
}

// rateScale returns the multiplier that makes the statistics named ref
// (or, for a ref starting with "_", every statistic ending in it) advance
// at rate per second in total.
func rateScale(d *ethtooldump.Dump, ref string, rate float64) float64 {
	var total float64
	for i, n := range d.Names {
		if n == ref || (strings.HasPrefix(ref, "_") && strings.HasSuffix(n, ref)) {
			total += float64(d.Values[i])
		}
	}
	if total == 0 {
		return 1
	}
	return rate * day.Seconds() / total
}
