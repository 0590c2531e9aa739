package logrules

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nic-exporter/nic_exporter/internal/safefile"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// kernelLines are kernel log messages as the drivers print them (the
// message part of a /dev/kmsg record). Lines quoted from public reports
// name the report; the others are the driver's format string filled in.
var kernelLines = []struct {
	line, event, device string
}{
	// lkml report of an mlx5 vdpa device in bad firmware state (2023).
	{"mlx5_core 0000:0d:00.0: poll_health:801:(pid 0): device's health compromised - reached miss count", "mlx5_health_compromised", "0000:0d:00.0"},
	{"mlx5_core 0000:0d:00.0: print_health_info:431:(pid 0): synd 0x1: firmware internal error", "mlx5_fw_syndrome", "0000:0d:00.0"},
	{"mlx5_core 0000:08:00.0: print_health_info:442:(pid 0): synd 0x8: unrecoverable hardware error", "mlx5_fw_syndrome", "0000:08:00.0"},
	{"mlx5_core 0000:08:00.0: poll_health:780:(pid 0): Fatal error 1 detected", "mlx5_fw_fatal_error", "0000:08:00.0"},
	{"mlx5_core 0000:08:00.0: print_health_info:410:(pid 0): PCI slot is unavailable", "mlx5_pci_slot_unavailable", "0000:08:00.0"},
	{"mlx5_core 0000:08:00.0: mlx5_health_try_recover:336:(pid 1234): health recovery failed", "mlx5_health_recovery_failed", "0000:08:00.0"},
	{"mlx5_core 0000:08:00.0: mlx5_health_try_recover:330:(pid 1234): health recovery flow aborted, PCI reads still not working", "mlx5_health_recovery_failed", "0000:08:00.0"},
	// linux-rdma report: ACCESS_REG timeout from devlink param set.
	{"mlx5_core 0000:56:00.0: wait_func_handle_exec_timeout:1159:(pid 72061): cmd[0]: ACCESS_REG(0x805) No done completion", "mlx5_cmd_no_completion", "0000:56:00.0"},
	{"mlx5_core 0000:56:00.0: wait_func:1189:(pid 72061): ACCESS_REG(0x805) timeout. Will cause a leak of a command resource", "mlx5_cmd_timeout", "0000:56:00.0"},
	// Commit message of "net/mlx5: Fix command timeout with sem" (2024).
	{"mlx5_core 0000:06:00.0: wait_func_handle_exec_timeout:1128:(pid 185911): cmd[-22]: CREATE_UCTX(0xa04) No done completion", "mlx5_cmd_no_completion", "0000:06:00.0"},
	{"mlx5_core 0000:08:00.0: mlx5_cmd_out_err:838:(pid 4242): MODIFY_QP(0x50d) op_mod(0x0) failed, status bad resource state(0x9), syndrome (0x5b8f32), err(-22)", "mlx5_cmd_bad_resource_state", "0000:08:00.0"},
	{"mlx5_core 0000:08:00.0: command failed, status bad resource state(0x9), syndrome 0x5b8f32", "mlx5_cmd_bad_resource_state", "0000:08:00.0"},
	// Older mlx5 printed this one with pr_warn, without a device.
	{"command failed, status bad resource state(0x9), syndrome 0x5b8f32", "mlx5_cmd_bad_resource_state", ""},
	{"mlx5_core 0000:08:00.0: mlx5_cmd_out_err:838:(pid 4242): CREATE_MKEY(0x200) op_mod(0x0) failed, status no resources(0xf), syndrome (0x1f0ba4), err(-11)", "mlx5_cmd_out_of_resources", "0000:08:00.0"},
	{"mlx5_core 0000:08:00.0: mlx5_cmd_out_err:838:(pid 4242): CREATE_QP(0x500) op_mod(0x0) failed, status limits exceeded(0x8), syndrome (0x3ae1e0), err(-12)", "mlx5_cmd_out_of_resources", "0000:08:00.0"},
	// NVSentinel test fixture of a real ACCESS_REG failure.
	{"mlx5_core 0000:d2:00.0: mlx5_cmd_out_err:838:(pid 1441871): ACCESS_REG(0x805) op_mod(0x1) failed, status bad operation(0x2), syndrome (0x305684), err(-22)", "mlx5_access_reg_restricted", "0000:d2:00.0"},
	// Other commands and statuses stay command failures.
	{"mlx5_core 0000:d2:00.0: mlx5_cmd_out_err:838:(pid 1441871): ACCESS_REG(0x805) op_mod(0x0) failed, status bad operation(0x2), syndrome (0x305684), err(-22)", "mlx5_cmd_failed", "0000:d2:00.0"},
	{"mlx5_core 0000:d2:00.0: mlx5_cmd_out_err:838:(pid 1441871): QUERY_HCA_CAP(0x100) op_mod(0x1) failed, status bad parameter(0x3), syndrome (0x305684), err(-22)", "mlx5_cmd_failed", "0000:d2:00.0"},
	// The format strings of the command interface, filled in.
	{"mlx5_core 0000:01:00.0: cmd_work_handler:877:(pid 3880418): failed to allocate command entry", "mlx5_cmd_alloc_entry_failed", "0000:01:00.0"},
	{"mlx5_core 0000:00:02.0: wait_func_handle_exec_timeout:1113:(pid 3122): cmd[0]: CREATE_CQ(0x400) recovered after timeout", "mlx5_cmd_recovered_after_timeout", "0000:00:02.0"},
	{"mlx5_core 0000:00:02.0: mlx5_cmd_eq_recover:247:(pid 3122): Recovered 1 EQEs on cmd_eq", "mlx5_cmd_eq_recovered", "0000:00:02.0"},
	{"mlx5_core 0000:a1:00.0: mlx5_irq_alloc:321:(pid 6781): Failed to request irq. err = -22", "mlx5_irq_request_failed", "0000:a1:00.0"},
	{"mlx5_core.eth: probe of mlx5_core.eth.1 failed with error -22", "mlx5_probe_failed", "mlx5_core.eth.1"},
	{"mlx5_core 000a:00:00.0: mlx5_crdump_collect:51:(pid 1415): crdump: failed to lock vsc gw err -13", "mlx5_crdump_failed", "000a:00:00.0"},
	// The ConnectX-7 manual's "exec cmd failed" inside an mlx5_core prefix;
	// no upstream source read prints it, so the rest of this line is made up.
	{"mlx5_core 0000:08:00.0: mlx5_cmd_exec failed: exec cmd failed, err -5", "mlx5_exec_cmd_failed", "0000:08:00.0"},
	{"mlx5_core 0000:5c:00.0: mlx5_port_module_event:1131:(pid 0): Port module event[error]: module 0, Cable error, High Temperature", "mlx5_port_module_error", "0000:5c:00.0"},
	{"mlx5_core 0000:08:00.1: Port module event: module 1, Cable error", "mlx5_port_module_error", "0000:08:00.1"},
	// Commit message of "net/mlx5e: Fix CQ overrun in PTP" (2023).
	{"mlx5_core 0000:08:00.0: cq_err_event_notifier:517:(pid 0): CQ error on CQN 0x487, syndrome 0x1", "mlx5_cq_overrun", "0000:08:00.0"},
	{"mlx5_core 0000:08:00.0: mlx5_eq_int:392:(pid 0): CQ error on CQN 0x43e, syndrom 0x1", "mlx5_cq_overrun", "0000:08:00.0"},
	{"mlx5_core 0000:08:00.0: cq_err_event_notifier:517:(pid 0): CQ error on CQN 0x487, syndrome 0x2", "mlx5_cq_error", "0000:08:00.0"},
	// NVSentinel test fixture.
	{"mlx5_core 0000:01:00.0: mlx5_pcie_event:326:(pid 165): Detected insufficient power on the PCIe slot (27W).", "mlx5_insufficient_power", "0000:01:00.0"},
	{"mlx5_core 0000:08:00.0: temp_warn:160:(pid 0): High temperature on sensors with bit set 0 1", "mlx5_high_temperature", "0000:08:00.0"},
	{"mlx5_core 0000:08:00.1 enp8s0f1np1: TX timeout on queue: 5, SQ: 0x10a, CQ: 0x40f, SQ Cons: 0x12 SQ Prod: 0x3f, usecs since last trans: 5360000", "mlx5e_tx_timeout", "enp8s0f1np1"},
	{"mlx5_core 0000:08:00.1 enp8s0f1np1: NETDEV WATCHDOG: CPU: 3: transmit queue 5 timed out 5336 ms", "netdev_watchdog", "enp8s0f1np1"},
	{"NETDEV WATCHDOG: eth0 (mlx5_core): transmit queue 3 timed out", "netdev_watchdog", "eth0"},
	{"NETDEV WATCHDOG: eno1 (ixgbe): transmit queue 6 timed out 8232 ms", "netdev_watchdog", "eno1"},
	{"mlx5_core 0000:08:00.1 enp8s0f1np1: Link down", "mlx5e_link_down", "enp8s0f1np1"},
	{"infiniband mlx5_0: mlx5_ib_cq_event:57:(pid 0): Unexpected event type 5 on CQ 000489", "mlx5_ib_cq_unexpected_event", "mlx5_0"},
	// Older mlx5_ib_warn: pr_warn("%s:%s:%d:(pid %d): ", ib device name, ...).
	{"mlx5_1:mlx5_ib_cq_event:57:(pid 0): Unexpected event type 5 on CQ 000489", "mlx5_ib_cq_unexpected_event", "mlx5_1"},
	// linux-rdma report of IO page faults with nvme-rdma (2022).
	{"infiniband mlx5_0: mlx5_handle_error_cqe:332:(pid 0): WC error: 4, Message: local protection error", "mlx5_ib_wc_error", "mlx5_0"},
	// Renamed RDMA devices and the lower-case variant.
	{"infiniband rocep8s0f0: dump_cqe:277:(pid 0): WC error: 6, Message: memory bind operation error", "mlx5_ib_wc_error", "rocep8s0f0"},
	{"infiniband mlx5_bond_0: mlx5_handle_error_cqe:333:(pid 0): WC error: 10, message: remote access error", "mlx5_ib_wc_error", "mlx5_bond_0"},
	{"infiniband ibp59s0: mlx5_handle_error_cqe:333:(pid 0): WC error: 5, message: work request flushed error", "mlx5_ib_wc_error", "ibp59s0"},
	{"infiniband rocep7s0f1: Fatal error (1) on MAD QP (1)", "ib_mad_qp_fatal_error", "rocep7s0f1"},
	{"ice 0000:07:00.1 rocep7s0f1: abnormal ae_id = 0x401 bool qp=1 qp_id = 1, ae_src=5", "irdma_abnormal_async_event", "rocep7s0f1"},
	// AWS ENA troubleshooting guide, reset example.
	{"ena 0000:00:07.0 eth1: Keep alive watchdog timeout.", "ena_keep_alive_timeout", "eth1"},
	{"ena 0000:00:07.0 eth1: Trigger reset is on", "ena_reset_triggered", "eth1"},
	{"ena 0000:00:07.0: Device reset completed successfully, Driver info: Elastic Network Adapter (ENA) v2.0.2g", "ena_reset_completed", "0000:00:07.0"},
	{"ena 0000:00:05.0 ens5: Device reset completed successfully", "ena_reset_completed", "ens5"},
	{"ena 0000:00:05.0 ens5: Reset attempt failed. Can not reset the device", "ena_reset_failed", "ens5"},
	// netdev_printk of a netdev without a name yet (probe, reset) and
	// of one being unregistered: the function, and the interface.
	{"ena 0000:00:05.0 (unnamed net_device) (uninitialized): Reg read32 timeout occurred", "ena_reset_reg_read_timeout", "0000:00:05.0"},
	{"ena 0000:00:05.0 ens5 (unregistering): Reset attempt failed. Can not reset the device", "ena_reset_failed", "ens5"},
	// AWS ENA troubleshooting guide, register read timeouts (old driver
	// format without a device prefix), and the current format.
	{"[ENA_COM: ena_com_reg_bar_read32] reading reg failed for timeout. expected: req id[1] offset[88] actual: req id[57006] offset[0]", "ena_reg_read_timeout", ""},
	{"[ENA_COM: ena_com_dev_reset] Reg read32 timeout occurred", "ena_reset_reg_read_timeout", ""},
	{"ena 0000:00:05.0 ens5: Reading reg failed for timeout. expected: req id[2] offset[8] actual: req id[57007] offset[0]", "ena_reg_read_timeout", "ens5"},
	{"ena 0000:00:05.0 ens5: The number of lost tx completions is above the threshold (129 > 128). Reset the device", "ena_missing_tx_completions", "ens5"},
	{"ena 0000:00:05.0 ens5: Lost TX completions are above the threshold (129 > 128). Completion transmission timeout: 5000000.", "ena_missing_tx_completions", "ens5"},
	{"ena 0000:00:05.0 ens5: Found a Tx that wasn't completed on time, qid 4, index 219. 5000000 usecs have passed since last napi execution. Napi scheduled: 1", "ena_tx_not_completed_on_time", "ens5"},
	{"mlx5_core 0000:08:00.1: 252.056 Gb/s available PCIe bandwidth, limited by 32.0 GT/s PCIe x8 link at 0000:00:01.1 (capable of 504.112 Gb/s with 32.0 GT/s PCIe x16 link)", "pcie_link_limited", "0000:08:00.1"},
	// 4.17 to 5.3 (PCIE_SPEED2STR, no "PCIe").
	{"mlx5_core 0000:5e:00.0: 31.504 Gb/s available PCIe bandwidth, limited by 8 GT/s x4 link at 0000:5d:00.0 (capable of 126.016 Gb/s with 8 GT/s x16 link)", "pcie_link_limited", "0000:5e:00.0"},
	// aer.c, current and older formats, root port and endpoint lines.
	{"pcieport 0000:00:00.0: AER: Corrected error received: 0000:01:00.0", "pcie_aer_corrected", "0000:01:00.0"},
	{"pcieport 0000:00:00.0: AER: Multiple Corrected error message received from 0000:01:00.1", "pcie_aer_corrected", "0000:01:00.1"},
	{"mlx5_core 0000:01:00.0: PCIe Bus Error: severity=Corrected, type=Transaction Layer, (Receiver ID)", "pcie_aer_corrected", "0000:01:00.0"},
	{"pcieport 0000:00:01.1: AER: Uncorrectable (Non-Fatal) error message received from 0000:08:00.1", "pcie_aer_nonfatal", "0000:08:00.1"},
	{"mlx5_core 0000:08:00.1: AER: PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=Transaction Layer, (Requester ID)", "pcie_aer_nonfatal", "0000:08:00.1"},
	{"pcieport 0000:00:01.1: AER: Uncorrectable (Fatal) error message received from 0000:08:00.0", "pcie_aer_fatal", "0000:08:00.0"},
	{"ena 0000:00:05.0: PCIe Bus Error: severity=Uncorrectable (Fatal), type=Inaccessible, (Unregistered Agent ID)", "pcie_aer_fatal", "0000:00:05.0"},
	{"mlx5_core 0000:c1:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x002f address=0x24d08000 flags=0x0000]", "iommu_page_fault", "0000:c1:00.0"},
	{"AMD-Vi: Event logged [IO_PAGE_FAULT device=0000:c1:00.0 domain=0x002f address=0x24d08000 flags=0x0000]", "iommu_page_fault", "0000:c1:00.0"},
}

// vmaLines are libvma log lines as VMA_LOG_FILE holds them.
var vmaLines = []struct{ line, event string }{
	{" Pid: 4711 Tid: 4711 VMA ERROR  : VMA does not detect IB capable devices", "vma_no_supported_devices"},
	{"VMA ERROR: No supported devices found", "vma_no_supported_devices"},
	{"VMA ERROR: Failed to allocate buffer pool", "vma_buffer_pool_alloc_failed"},
	{"VMA PANIC: bpool[0x1c3e0a0]:288:alloc_data() failed allocating data memory block", "vma_buffer_pool_alloc_failed"},
	{"VMA WARNING: cqm[0x7f2c]:207:request_more_buffers() WARNING Out of mem_buf_desc from Rx buffer pool for qp_mgr qp_mgr initialization (qp=0x7f2c40),", "vma_rx_buffers_exhausted"},
	{"VMA ERROR: ring_simple[0x2a1b]:270:create_resources() Failed to allocate qp_mgr!", "vma_ring_alloc_failed"},
	{"VMA ERROR: Ring allocation failed", "vma_ring_alloc_failed"},
	{"VMA ERROR: Cannot create socket", "vma_socket_create_failed"},
	{"VMA ERROR: IGMP join failed", "vma_igmp_join_failed"},
	{"VMA WARNING: Your current max locked memory is: 65536. Please change it to unlimited.", "vma_memlock_limit"},
	{"VMA WARNING: * Not enough hugepage resources for VMA memory allocation.    ", "vma_hugepages_unavailable"},
	{"VMA WARNING: * Can not establish connection with the daemon (vmad).      *", "vma_daemon_unreachable"},
	{"VMA WARNING: * Interface bond0 will not be offloaded.", "vma_not_offloaded"},
	{"VMA WARNING: * VMA cannot offload the device while RoCE LAG is enabled.", "vma_not_offloaded"},
	{"ERROR: ld.so: object 'libvma.so' from LD_PRELOAD cannot be preloaded (cannot open shared object file): ignored.", "vma_preload_failed"},
}

// unrelatedLines must match no rule.
var unrelatedLines = []string{
	"",
	"mlx5_core 0000:08:00.0: firmware version: 28.39.1002",
	"mlx5_core 0000:08:00.0: Port module event: module 0, Cable plugged",
	"mlx5_core 0000:08:00.1 enp8s0f1np1: Link up",
	"mlx5_core 0000:08:00.0: cq_err_event_notifier is fine",
	"ena 0000:00:05.0: Elastic Network Adapter (ENA) v2.8.0g",
	"ena 0000:00:05.0 ens5: Keep alive watchdog is fine",
	"EXT4-fs (nvme0n1p1): mounted filesystem with ordered data mode",
	"usb 1-1: new high-speed USB device number 2 using xhci_hcd",
	"VMA INFO: VMA_VERSION: 9.8.84-1 Release built on Oct 1 2024",
	// The same texts from other drivers and devices. (The netdev
	// watchdog, the PCIe bandwidth and AER lines are kernel lines of any
	// driver: they match, and the kmsg collector keeps only those of
	// network functions.)
	"hns3 0000:7d:00.0 eth2: cmd failed, status bad parameter(0x3)",
	"i40e 0000:3d:00.0 eno1: Link down",
	// Look-alikes: benign lines with the words of a rule.
	"mlx5_core 0000:08:00.0: 126.016 Gb/s available PCIe bandwidth (8 GT/s x16 link)",
	"pcieport 0000:00:1c.5: AER: Corrected error received: id=00e5",
	"ena 0000:00:05.0 ens5: reset_fail: 0",
	"ena 0000:00:05.0 ens5: tx_timeout: 1",
	"WARNING: CPU: 2 PID: 0 at net/sched/sch_generic.c:525 dev_watchdog+0x1f1/0x200",
	"mlx5_core 0000:08:00.0: mlx5_pcie_event:301:(pid 10308): PCIe slot advertised sufficient power (75W).",
	"audit: type=1400 audit(1700000000.000:10): apparmor=\"STATUSx\" operation=\"profile_load\"",
}

func TestKernelRules(t *testing.T) {
	e, err := Compile(KernelRules())
	if err != nil {
		t.Fatal(err)
	}
	hit := make(map[*Compiled]bool)
	for _, tc := range kernelLines {
		m, ok := e.Match(tc.line)
		if !ok {
			t.Errorf("no rule matches %q; want %s", tc.line, tc.event)
			continue
		}
		hit[m.Rule] = true
		if m.Rule.Event != tc.event || m.Device != tc.device {
			t.Errorf("%q: got event %s device %q, want %s %q", tc.line, m.Rule.Event, m.Device, tc.event, tc.device)
		}
	}
	for _, c := range e.Rules() {
		if !hit[c] {
			t.Errorf("built-in kernel rule %s (%s) has no test line", c.Event, c.Regex)
		}
	}
}

// TestMatchDriver checks that a rule's "driver" group names the driver of
// lines any driver can print.
func TestMatchDriver(t *testing.T) {
	e, err := Compile(KernelRules())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ line, driver string }{
		{"NETDEV WATCHDOG: eno1 (ixgbe): transmit queue 6 timed out 8232 ms", "ixgbe"},
		{"iavf 0000:00:05.0 enp0s5: NETDEV WATCHDOG: CPU: 1: transmit queue 0 timed out 5692 ms", "iavf"},
		{"ena 0000:00:05.0 ens5: Keep alive watchdog timeout.", "ena"},
	} {
		m, ok := e.Match(tc.line)
		if !ok || m.Driver != tc.driver {
			t.Errorf("%q: driver %q (matched %v), want %q", tc.line, m.Driver, ok, tc.driver)
		}
	}
}

func TestVMARules(t *testing.T) {
	e, err := Compile(VMARules())
	if err != nil {
		t.Fatal(err)
	}
	hit := make(map[*Compiled]bool)
	for _, tc := range vmaLines {
		m, ok := e.Match(tc.line)
		if !ok || m.Rule.Event != tc.event {
			t.Errorf("%q: got %+v %v, want %s", tc.line, m.Rule, ok, tc.event)
			continue
		}
		hit[m.Rule] = true
	}
	for _, c := range e.Rules() {
		if !hit[c] {
			t.Errorf("built-in VMA rule %s has no test line", c.Event)
		}
	}
}

func TestUnrelatedLines(t *testing.T) {
	e, err := Compile(append(KernelRules(), VMARules()...))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range unrelatedLines {
		if m, ok := e.Match(line); ok {
			t.Errorf("%q matches %s; want no match", line, m.Rule.Event)
		}
	}
}

// TestBuiltinRulesComplete checks the fields every built-in rule must have.
func TestBuiltinRulesComplete(t *testing.T) {
	for _, r := range append(KernelRules(), VMARules()...) {
		if r.Runbook == "" || r.Source == "" {
			t.Errorf("rule %s: runbook and source are required", r.Event)
		}
	}
}

func TestLiterals(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`Keep alive watchdog timeout`, []string{"Keep alive watchdog timeout"}},
		{`[Rr]eading reg failed for timeout`, []string{"eading reg failed for timeout"}},
		{`CQ error on CQN 0x[0-9a-f]+, syndrome? 0x1\b`, []string{"CQ error on CQN 0x"}},
		{`Ring allocation failed|create qp failed`, []string{"Ring allocation failed", "create qp failed"}},
		{`(?i)keep alive`, nil},
		{`a|b*`, nil},
	} {
		got, err := requiredLiterals(tc.expr)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%s: literals %q, want %q", tc.expr, got, tc.want)
		}
	}
}

func TestExtractDevice(t *testing.T) {
	for _, tc := range []struct{ line, mode, want string }{
		{"mlx5_core 0000:08:00.1 enp8s0f1np1: Link down", DevicePCI, "0000:08:00.1"},
		{"mlx5_core 0000:08:00.1 enp8s0f1np1: Link down", DeviceInterface, "enp8s0f1np1"},
		{"mlx5_core 0000:08:00.1: x", DeviceInterface, "0000:08:00.1"},
		{"infiniband mlx5_0: x", DeviceName, "mlx5_0"},
		{"infiniband mlx5_0: x", DevicePCI, ""},
		{"something at 0000:af:00.7 went wrong", DevicePCI, "0000:af:00.7"},
		{"1234:56:78.9 is not a PCI function", DevicePCI, ""},
		{"no device here", DevicePCI, ""},
		{"mlx5_core 0000:08:00.1: x", DeviceNone, ""},
	} {
		if got := ExtractDevice(tc.line, tc.mode); got != tc.want {
			t.Errorf("ExtractDevice(%q, %s) = %q, want %q", tc.line, tc.mode, got, tc.want)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yml")
	if err := os.WriteFile(good, []byte(`rules:
  - event: mlx5_custom_pages
    driver: mlx5_core
    severity: warning
    regex: 'give_pages:\d+:\(pid \d+\): page allocation failure'
    runbook: mlx5-out-of-resources
`), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := Load(good, KernelRules())
	if err != nil {
		t.Fatal(err)
	}
	m, ok := e.Match("mlx5_core 0000:08:00.0: give_pages:350:(pid 12): page allocation failure")
	if !ok || m.Rule.Event != "mlx5_custom_pages" || m.Device != "0000:08:00.0" {
		t.Errorf("file rule: got %+v %v", m, ok)
	}
	if _, ok := e.Match("ena 0000:00:05.0 ens5: Keep alive watchdog timeout."); !ok {
		t.Error("built-in rules must stay active next to a rules file")
	}

	for name, tc := range map[string]struct{ content, wantErr string }{
		"bad regex":      {"rules:\n- {event: x, driver: d, severity: error, regex: '(unclosed'}\n", "rules file"},
		"unknown field":  {"rules:\n- {event: x, driver: d, severity: error, regex: a, sevrity: x}\n", "sevrity"},
		"bad severity":   {"rules:\n- {event: x, driver: d, severity: fatal, regex: a}\n", "severity"},
		"bad event":      {"rules:\n- {event: 'Bad Name', driver: d, severity: error, regex: a}\n", "event"},
		"no driver":      {"rules:\n- {event: x, severity: error, regex: a}\n", "driver"},
		"bad device":     {"rules:\n- {event: x, driver: d, severity: error, regex: a, device: port}\n", "device"},
		"no rules":       {"rules: []\n", "no rules"},
		"unknown key":    {"other: 1\n", "other"},
		"not yaml":       {"rules: [\n", "rules file"},
		"empty regex":    {"rules:\n- {event: x, driver: d, severity: error}\n", "regex"},
		"not a list":     {"rules: 3\n", "rules file"},
		"rule not a map": {"rules: [3]\n", "rules file"},
	} {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".yml")
		if err := os.WriteFile(p, []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(p, KernelRules())
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: error %v, want one mentioning %q", name, err, tc.wantErr)
		}
	}
	if _, err := Load(filepath.Join(dir, "missing.yml"), nil); err == nil {
		t.Error("a missing rules file must be an error")
	}
}

// FuzzMatch checks that no line panics the matcher, that a match's device
// is a substring of the line, and that the prefilter never hides a line the
// regular expression would match.
func FuzzMatch(f *testing.F) {
	for _, tc := range kernelLines {
		f.Add(tc.line)
	}
	for _, tc := range vmaLines {
		f.Add(tc.line)
	}
	for _, l := range unrelatedLines {
		f.Add(l)
	}
	e, err := Compile(append(KernelRules(), VMARules()...))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, line string) {
		m, ok := e.Match(line)
		if ok && !strings.Contains(line, m.Device) {
			t.Errorf("device %q is not part of %q", m.Device, line)
		}
		for _, c := range e.Rules() {
			if c.re.MatchString(line) && !c.prefilter(line) {
				t.Errorf("rule %s: prefilter %q rejects matching line %q", c.Event, c.literals, line)
			}
		}
	})
}

var benchLines = func() []string {
	var out []string
	// Mostly unrelated lines, as on a real host, with some matches.
	for i := 0; i < 9; i++ {
		out = append(out, unrelatedLines...)
	}
	for _, tc := range kernelLines {
		out = append(out, tc.line)
	}
	return out
}()

// BenchmarkMatchKernel measures lines per second through the built-in
// kernel table.
func BenchmarkMatchKernel(b *testing.B) {
	e, err := Compile(KernelRules())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		for _, l := range benchLines {
			e.Match(l)
		}
		n += len(benchLines)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "lines/s")
}

// BenchmarkMatchUnrelated measures the common case: a line that matches no
// rule and is rejected by the literal prefilter.
func BenchmarkMatchUnrelated(b *testing.B) {
	e, err := Compile(KernelRules())
	if err != nil {
		b.Fatal(err)
	}
	line := "EXT4-fs (nvme0n1p1): mounted filesystem with ordered data mode. Quota mode: none."
	b.ReportAllocs()
	for b.Loop() {
		e.Match(line)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}

// TestRulesDocumented checks that docs/metrics.md lists every built-in
// rule with its driver and severity, so the documentation cannot drift.
func TestRulesDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range append(KernelRules(), VMARules()...) {
		row := fmt.Sprintf("| %s | %s | %s |", r.Event, r.Driver, r.Severity)
		if !strings.Contains(string(doc), row) {
			t.Errorf("docs/metrics.md lacks the row %q", row)
		}
	}
}

// TestLoadHostileFiles gives Load paths that are not rules files: a FIFO
// with no writer (used to hold the startup in open(2)), /dev/zero (used
// to be read until memory ran out), a directory and a file over
// MaxFileSize. Each must fail at once with an error naming the file.
func TestLoadHostileFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yml")
	if err := os.WriteFile(big, []byte("rules: []\n"+strings.Repeat("#", MaxFileSize)), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path    string
		wantErr error
	}{
		{fifo, safefile.ErrNotRegular},
		{"/dev/zero", safefile.ErrNotRegular},
		{dir, safefile.ErrNotRegular},
		{big, safefile.ErrTooLarge},
	}
	for _, tt := range tests {
		done := make(chan error, 1)
		go func() {
			_, err := Load(tt.path, KernelRules())
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.path) {
				t.Errorf("Load(%s) = %v, want an error naming the file that wraps %v", tt.path, err, tt.wantErr)
			}
		case <-time.After(testenv.HangGuard):
			t.Fatalf("Load(%s) did not return", tt.path)
		}
	}
}
