package main

import (
	"strings"
	"testing"
	"time"

	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// TestFabricDemo runs the demo host with the fabric collector: the far end
// of mlx5_0 port 1 is a leaf switch port with traffic and PortXmitWait;
// while the demo's InfiniBand link is down, the local port reads Down and
// the far end is not reached.
func TestFabricDemo(t *testing.T) {
	remote := `remote_guid="0x0002c90300a1b2c3",remote_node="MF0;leaf-07:MQM9700/U1",remote_port="12"`
	e := start(t, "--demo", "--collector.fabric", "--collector.fabric.interval=100ms")
	waitMetrics(t, e,
		`nic_fabric_link_up{device="mlx5_0",port="1",`+remote+`} 1`,
		`nic_fabric_remote_port_xmit_wait_total{device="mlx5_0",port="1",`+remote+`} `,
		`nic_fabric_remote_info{device="mlx5_0",port="1",`+remote+`,remote_type="switch",remote_lid="7"} 1`)

	down := start(t, "--demo", "--demo.faults=ib_link_down@0s", "--collector.fabric", "--collector.fabric.interval=100ms")
	body := waitMetrics(t, down, `nic_fabric_local_port_state{device="mlx5_0",port="1"} 1`, `nic_fabric_remote_up{device="mlx5_0",port="1"} 0`)
	if strings.Contains(body, "nic_fabric_remote_port_") {
		t.Errorf("far-end counters exported while the link is down:\n%s", body)
	}
}

// waitMetrics scrapes /metrics until it holds every wanted line.
func waitMetrics(t *testing.T, e *exporter, want ...string) string {
	t.Helper()
	deadline := time.Now().Add(testenv.HangGuard)
	for {
		body, _ := e.get(t, "/metrics", nil)
		missing := ""
		for _, w := range want {
			if !strings.Contains(body, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics never held %s:\n%s\nexporter log:\n%s", missing, body, e.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
