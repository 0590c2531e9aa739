package demo

import (
	_ "embed"
	"fmt"
	"math"
	"time"
)

//go:embed infiniband.txtar
var infinibandTree string

const (
	ibPort0   = "sys/devices/pci0000:00/0000:00:01.1/0000:08:00.0/infiniband/mlx5_0/ports/1"
	rocePort1 = "sys/devices/pci0000:00/0000:00:01.1/0000:08:00.1/infiniband/mlx5_1/ports/1"
	ipoibDev  = ibDev + "/net/ibp8s0f0"
)

var infinibandPart = part{
	faults: map[string]string{
		"ib_link_down":     "the InfiniBand port mlx5_0 loses its link: phys_state Polling for 2 min, then LinkErrorRecovery for 15 s, then LinkUp (INIT for 5 s until the subnet manager re-activates it); link_downed and link_error_recovery count it",
		"ib_symbol_errors": "the InfiniBand port mlx5_0 sees a bad cable: symbol_error, port_rcv_errors and local_link_integrity_errors rise; local_link_integrity_errors saturates at its 4-bit maximum after 15 s, symbol_error at its 16-bit one after 27 min",
		"rnr_retry":        "an application's receiver on mlx5_0 stops posting receive buffers: rnr_nak_retry_err climbs, QPs fail with IBV_WC_RNR_RETRY_EXC_ERR (req_rnr_retries_exceeded, req_cqe_error) and their remaining work requests are flushed (req_cqe_flush_error)",
		"roce_congestion":  "many senders converge on the RoCE port mlx5_1 (incast) on priority 3: the switch ECN-marks 10,000 of its received packets a second and its notification point answers with 2,000 CNPs a second, the port pauses its switch port on priority 3 until storm prevention stops the pauses (tx_pause_storm_* of enp8s0f1np1), and packets lost meanwhile arrive out of sequence (100 a second)",
	},
	update: (*Host).updateInfiniBand,
	tree:   infinibandTree,
}

// ibRate is one counter file that grows at a steady rate from a base
// value and, like the IBA PortCounters, saturates at max instead of
// wrapping (max 0: 64-bit).
type ibRate struct {
	file string
	base float64
	rate float64 // per second
	max  float64
}

func (r ibRate) at(t time.Duration) string {
	v := r.base + r.rate*t.Seconds()
	if r.max > 0 && v > r.max {
		v = r.max
	}
	return fmt.Sprintf("%d", uint64(math.Floor(v)))
}

// ib_link_down phases, measured from the start of the fault. The port is
// out of LinkUp for 2 min 15 s, long enough for NICInfiniBandPortNotLinkUp
// (for: 1m) to fire with a minute to spare for scrape and evaluation
// intervals; an outage shorter than its "for:" would never show the alert.
const (
	ibPollingFor  = 2 * time.Minute
	ibRecoveryEnd = ibPollingFor + 15*time.Second
	ibInitEnd     = ibRecoveryEnd + 5*time.Second
)

func (h *Host) updateInfiniBand() error {
	t := h.Elapsed() + 24*time.Hour

	// The identity of both functions' RDMA devices comes from the card.
	for _, dev := range []string{ibDev + "/infiniband/mlx5_0", ethDev + "/infiniband/mlx5_1"} {
		if err := h.write(dev+"/fw_ver", cx7.firmware); err != nil {
			return err
		}
		if err := h.write(dev+"/board_id", cx7.psid); err != nil {
			return err
		}
	}

	// Link state of the InfiniBand port, from the phase of the outage in
	// effect. Every outage stops the traffic until the port is ACTIVE
	// again, counts in link_downed and, once it reached
	// LinkErrorRecovery, in link_error_recovery; every one adds a down
	// and, once over, an up carrier change of the IPoIB interface.
	state, phys := "4: ACTIVE", "5: LinkUp"
	if cur, ok := h.Current("ib_link_down"); ok {
		switch {
		case cur < ibPollingFor:
			state, phys = "1: DOWN", "2: Polling"
		case cur < ibRecoveryEnd:
			state, phys = "1: DOWN", "6: LinkErrorRecovery"
		case cur < ibInitEnd:
			state = "2: INIT"
		}
	}
	var outage time.Duration
	linkDowns, recoveries := 0.0, 0.0
	for _, d := range h.Spans("ib_link_down") {
		outage += min(d, ibInitEnd)
		linkDowns++
		if d >= ibPollingFor {
			recoveries++
		}
	}
	busy := t - outage
	carrier, oper, changes := "1", "up", 2+2*int(linkDowns)
	if state != "4: ACTIVE" {
		carrier, oper = "0", "down"
		changes--
	}
	for file, v := range map[string]string{
		ibPort0 + "/state": state, ibPort0 + "/phys_state": phys,
		ipoibDev + "/carrier": carrier, ipoibDev + "/operstate": oper,
		ipoibDev + "/carrier_changes": fmt.Sprint(changes),
	} {
		if err := h.write(file, v); err != nil {
			return err
		}
	}

	symbol := h.ActiveFor("ib_symbol_errors")
	rnr := h.ActiveFor("rnr_retry")
	// NDR port of a GPU node: ~12 GB/s each way; the data counters count
	// 4-byte words. 16- and 8-bit error counters saturate.
	ib := []struct {
		r ibRate
		t time.Duration
	}{
		{ibRate{file: "counters/port_xmit_data", rate: 3.0e9}, busy},
		{ibRate{file: "counters/port_rcv_data", rate: 2.8e9}, busy},
		{ibRate{file: "counters/port_xmit_packets", rate: 2.9e6}, busy},
		{ibRate{file: "counters/port_rcv_packets", rate: 2.7e6}, busy},
		{ibRate{file: "counters/unicast_xmit_packets", rate: 2.9e6}, busy},
		{ibRate{file: "counters/unicast_rcv_packets", rate: 2.7e6}, busy},
		{ibRate{file: "counters/multicast_xmit_packets", rate: 2}, busy},
		{ibRate{file: "counters/multicast_rcv_packets", rate: 3}, busy},
		{ibRate{file: "counters/port_xmit_wait", base: 1e8, rate: 2e4, max: math.MaxUint32}, busy},
		{ibRate{file: "counters/port_xmit_discards", base: 12, max: math.MaxUint16}, 0},
		{ibRate{file: "counters/link_downed", base: 2 + linkDowns, max: math.MaxUint8}, 0},
		{ibRate{file: "counters/link_error_recovery", base: recoveries, max: math.MaxUint8}, 0},
		{ibRate{file: "counters/symbol_error", rate: 40, max: math.MaxUint16}, symbol},
		{ibRate{file: "counters/port_rcv_errors", rate: 3, max: math.MaxUint16}, symbol},
		// 4-bit: a bad cable runs it into its maximum within 15 s, so
		// the fault shows a saturated counter (NICInfiniBandCounterSaturated).
		{ibRate{file: "counters/local_link_integrity_errors", rate: 1, max: 15}, symbol},
		{ibRate{file: "hw_counters/rx_write_requests", rate: 2e5}, busy},
		{ibRate{file: "hw_counters/rx_read_requests", rate: 5e4}, busy},
		{ibRate{file: "hw_counters/rx_atomic_requests", rate: 100}, busy},
		{ibRate{file: "hw_counters/duplicate_request", rate: 0.01}, busy},
		{ibRate{file: "hw_counters/out_of_sequence", rate: 0.02}, busy},
		{ibRate{file: "hw_counters/packet_seq_err", rate: 0.01}, busy},
		{ibRate{file: "hw_counters/local_ack_timeout_err", rate: 0.005}, busy},
		{ibRate{file: "hw_counters/rnr_nak_retry_err", base: 3, rate: 250}, rnr},
		{ibRate{file: "hw_counters/req_rnr_retries_exceeded", rate: 0.5}, rnr},
		{ibRate{file: "hw_counters/req_cqe_error", base: 5, rate: 0.5}, rnr},
		{ibRate{file: "hw_counters/req_cqe_flush_error", rate: 20}, rnr},
	}
	for _, c := range ib {
		if err := h.write(ibPort0+"/"+c.r.file, c.r.at(c.t)); err != nil {
			return err
		}
	}

	// RoCE side: 400G Ethernet storage traffic with DCQCN congestion
	// control at work: about 17 ECN-marked packets per million received.
	// roce_congestion adds, per second of the fault, the extra of each
	// counter: 10,000 marked packets (4,800 per million, over
	// NICRoCECongestion's 1,000), the CNPs that answer them, and 100
	// out-of-sequence packets (48 per million, over
	// NICRDMARetransmissions' 10) lost while storm prevention stopped the
	// port's pauses (ethtool.go counts the pauses and storms).
	congested := h.ActiveFor("roce_congestion").Seconds()
	roce := []struct {
		r     ibRate
		extra float64 // per second of roce_congestion
	}{
		{r: ibRate{file: "counters/port_xmit_data", rate: 4.0e9}},
		{r: ibRate{file: "counters/port_rcv_data", rate: 4.75e9}},
		{r: ibRate{file: "counters/port_xmit_packets", rate: 1.9e6}},
		{r: ibRate{file: "counters/port_rcv_packets", rate: 2.1e6}},
		{r: ibRate{file: "counters/unicast_xmit_packets", rate: 1.9e6}},
		{r: ibRate{file: "counters/unicast_rcv_packets", rate: 2.1e6}},
		{r: ibRate{file: "hw_counters/rx_write_requests", rate: 8e4}},
		{r: ibRate{file: "hw_counters/rx_read_requests", rate: 2e4}},
		{r: ibRate{file: "hw_counters/np_cnp_sent", rate: 30}, extra: 2000},
		{r: ibRate{file: "hw_counters/np_ecn_marked_roce_packets", rate: 35}, extra: 10000},
		{r: ibRate{file: "hw_counters/rp_cnp_handled", base: 43304, rate: 28}},
		{r: ibRate{file: "hw_counters/out_of_sequence", rate: 0.5}, extra: 100},
		{r: ibRate{file: "hw_counters/out_of_buffer", base: 4, rate: 0.01}},
		{r: ibRate{file: "hw_counters/roce_adp_retrans", rate: 0.05}},
		{r: ibRate{file: "hw_counters/roce_adp_retrans_to", rate: 0.01}},
		{r: ibRate{file: "hw_counters/roce_slow_restart", rate: 0.002}},
	}
	for _, c := range roce {
		r := c.r
		r.base += c.extra * congested
		if err := h.write(rocePort1+"/"+r.file, r.at(t)); err != nil {
			return err
		}
	}
	return nil
}
