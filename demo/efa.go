package demo

import (
	_ "embed"
	"time"
)

//go:embed efa.txtar
var efaTree string

const (
	efaDev  = "sys/devices/pci0000:00/0000:00:06.0/infiniband/rdmap0s6"
	efaPort = efaDev + "/ports/1"
)

var efaPart = part{
	faults: map[string]string{
		"efa_srd_degraded": "the SRD paths of the EFA device rdmap0s6 degrade (a bad fabric link, a failing peer): " +
			"retrans_pkts grows by 12,000/s (9,600 per million packets sent), rx_drops by 1,600/s, retrans_timeout_events by 0.2/s; " +
			"unresponsive_remote_events counts one at the start and one a minute, impaired_remote_conn_events one at the start and one every 30 s, " +
			"and RDMA write and read work requests fail (rdma_write_wr_err, rdma_read_wr_err one at the start, then 0.1/s and 0.05/s)",
	},
	update: (*Host).updateEFA,
	tree:   efaTree,
}

// efaPacket is the demo EFA's bytes per packet: close to the 8 KiB SRD
// MTU, as the large transfers of a training job send.
const efaPacket = 8800

// efaEvents counts events of a fault that come one at its start and then
// one every period, over each span of the fault.
func efaEvents(spans []time.Duration, period time.Duration) float64 {
	n := 0.0
	for _, d := range spans {
		n += 1 + float64(d/period)
	}
	return n
}

func (h *Host) updateEFA() error {
	t := h.Elapsed() + 24*time.Hour
	bad := h.ActiveFor("efa_srd_degraded")
	spans := h.Spans("efa_srd_degraded")
	// One EFA of a GPU node moving a training job's collectives, about
	// 90 Gb/s each way, mostly RDMA write; the SRD transport retransmits
	// a few packets per million on a healthy fabric.
	port := []struct {
		r     ibRate
		t     time.Duration
		extra float64 // events of the fault on top
	}{
		{ibRate{file: "tx_bytes", rate: 1.1e10}, t, 0},
		{ibRate{file: "tx_pkts", rate: 1.1e10 / efaPacket}, t, 0},
		{ibRate{file: "rx_bytes", rate: 1.05e10}, t, 0},
		{ibRate{file: "rx_pkts", rate: 1.05e10 / efaPacket}, t, 0},
		{ibRate{file: "rx_drops", base: 2, rate: 0.05}, t, 1600 * bad.Seconds()},
		{ibRate{file: "send_bytes", rate: 5e7}, t, 0},
		{ibRate{file: "send_wrs", rate: 4e4}, t, 0},
		{ibRate{file: "recv_bytes", rate: 5e7}, t, 0},
		{ibRate{file: "recv_wrs", rate: 4e4}, t, 0},
		{ibRate{file: "rdma_write_bytes", rate: 9e9}, t, 0},
		{ibRate{file: "rdma_write_wrs", rate: 1.1e4}, t, 0},
		{ibRate{file: "rdma_write_recv_bytes", rate: 8.8e9}, t, 0},
		{ibRate{file: "rdma_write_wr_err"}, t, efaEvents(spans, 10*time.Second)},
		{ibRate{file: "rdma_read_bytes", rate: 1e9}, t, 0},
		{ibRate{file: "rdma_read_wrs", rate: 2000}, t, 0},
		{ibRate{file: "rdma_read_resp_bytes", rate: 1.1e9}, t, 0},
		{ibRate{file: "rdma_read_wr_err"}, t, efaEvents(spans, 20*time.Second)},
		{ibRate{file: "retrans_pkts", rate: 20}, t, 12000 * bad.Seconds()},
		{ibRate{file: "retrans_bytes", rate: 20 * efaPacket}, t, 12000 * efaPacket * bad.Seconds()},
		{ibRate{file: "retrans_timeout_events", base: 4, rate: 0.001}, t, 0.2 * bad.Seconds()},
		{ibRate{file: "unresponsive_remote_events", base: 3}, t, efaEvents(spans, time.Minute)},
		{ibRate{file: "impaired_remote_conn_events", base: 1}, t, efaEvents(spans, 30*time.Second)},
	}
	for _, c := range port {
		r := c.r
		r.base += c.extra
		if err := h.write(efaPort+"/hw_counters/"+r.file, r.at(c.t)); err != nil {
			return err
		}
	}
	// The driver's admin queue: the device's keep-alive every second and
	// a few commands (queue pairs, memory registrations) as jobs start.
	dev := []ibRate{
		{file: "keep_alive_rcvd", rate: 1},
		{file: "submitted_cmds", base: 1204, rate: 0.02},
		{file: "completed_cmds", base: 1204, rate: 0.02},
	}
	for _, r := range dev {
		if err := h.write(efaDev+"/hw_counters/"+r.file, r.at(t)); err != nil {
			return err
		}
	}
	return nil
}
