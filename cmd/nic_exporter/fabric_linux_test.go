package main

import (
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/nic-exporter/nic_exporter/daemon"
	"github.com/nic-exporter/nic_exporter/internal/ibsimtest"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// fabricArgs enables the fabric collector over ibsim and disables the
// others, which read this host.
func fabricArgs() []string {
	args := []string{"--collector.fabric", "--collector.fabric.transport=ibsim", "--collector.fabric.interval=100ms",
		"--collector.fabric.timeout=1s", "--collector.fabric.mad-timeout=200ms"}
	for _, name := range daemon.CollectorNames() {
		if name != "fabric" {
			args = append(args, "--no-collector."+name)
		}
	}
	return args
}

// TestFabricIbsim runs the built exporter with the fabric collector
// attached to a simulated fabric as hca3 (IBSIM_SOCKNAME and SIM_HOST, as
// ibsim's own client library reads them): it exports the far end's
// counters set from the ibsim console; while ibsim is stopped and answers
// nothing, /metrics is still served and the failures are counted; and
// the exporter detaches from ibsim when it stops.
func TestFabricIbsim(t *testing.T) {
	f := ibsimtest.Start(t, ibsimtest.Small)
	f.Console(t, `PerformanceSet "leaf1"[3] PortCounters.SymbolErrorCounter=42`)
	t.Setenv("IBSIM_SOCKNAME", f.SockName)
	t.Setenv("SIM_HOST", "hca3")
	e := start(t, fabricArgs()...)
	labels := `{device="hca3",port="1",remote_guid="0x0000000000200000",remote_node="leaf1",remote_port="3"}`
	waitMetrics(t, e, `nic_fabric_remote_port_symbol_error_total`+labels+` 42`, `nic_fabric_remote_up{device="hca3",port="1"} 1`)

	// A fabric that answers nothing: each MAD waits out its timeout.
	f.Signal(t, syscall.SIGSTOP)
	stopped := true
	defer func() {
		if stopped {
			f.Signal(t, syscall.SIGCONT)
		}
	}()
	body := waitMetrics(t, e, `nic_fabric_remote_up{device="hca3",port="1"} 0`)
	if !strings.Contains(body, `nic_exporter_collector_source_errors_total{collector="fabric",reason="busy"}`) {
		t.Errorf("MAD timeouts are not counted as source errors:\n%s", body)
	}
	// Scrapes go on while polls wait for the fabric.
	for i := 0; i < 5; i++ {
		resp, err := http.Get("http://" + e.addr + "/metrics")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("scrape while the fabric hangs: %v %v", err, resp)
		}
		resp.Body.Close()
	}
	f.Signal(t, syscall.SIGCONT)
	stopped = false
	waitMetrics(t, e, `nic_fabric_remote_up{device="hca3",port="1"} 1`)

	if err := e.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, e, testenv.HangGuard); code != 0 {
		t.Errorf("exit status %d, want 0", code)
	}
	if out := f.Console(t, "Attached"); strings.Contains(out, "hca3") {
		t.Errorf("the exporter is still attached to ibsim after it stopped:\n%s", out)
	}
}
