package logrules

// The built-in tables are written against the format strings the drivers
// print, read in their sources (file and function named in each rule's
// Source). Kernel device messages reach /dev/kmsg with the dev_printk
// prefix "<driver> <bus id>[ <interface>]: ", and mlx5 adds
// "<function>:<line>:(pid <n>): " after it, so the expressions match the
// format string's text, not the whole line. Where the vendor's
// troubleshooting documentation quotes a text that the current source does
// not print, the rule accepts both and its Source says so.

// KernelRules returns the built-in rules for the kernel log: mlx5_core,
// mlx5_ib, ib_core, irdma, ena, the netdev watchdog of any driver, the PCI
// core (bandwidth, AER) and IOMMU faults. Rules are tried in order; the first match
// wins, so specific rules come before catch-all ones of the same driver.
func KernelRules() []Rule {
	return []Rule{
		// mlx5_core: firmware and health (health.c).
		{
			Event: "mlx5_fw_fatal_error", Driver: "mlx5_core", Severity: SeverityCritical,
			Regex:   `^mlx5_core\S* .*Fatal error \d+ detected`,
			Runbook: "mlx5-firmware-fatal",
			Source:  "drivers/net/ethernet/mellanox/mlx5/core/health.c poll_health: \"Fatal error %u detected\"",
		},
		{
			Event: "mlx5_health_compromised", Driver: "mlx5_core", Severity: SeverityCritical,
			Regex:   `^mlx5_core\S* .*device's health compromised`,
			Runbook: "mlx5-health-compromised",
			Source:  "drivers/net/ethernet/mellanox/mlx5/core/health.c poll_health: \"device's health compromised - reached miss count\"",
		},
		{
			Event: "mlx5_fw_syndrome", Driver: "mlx5_core", Severity: SeverityCritical,
			Regex:   `^mlx5_core\S* .*synd 0x[0-9a-f]+: (?:firmware internal error|irisc not responding|unrecoverable hardware error|firmware CRC error|ICM fetch PCI error|HW fatal error|async EQ buffer overrun|EQ error|Invalid EQ refe?renced|FFSER error|High tempe?rature|unrecognized error)`,
			Runbook: "mlx5-firmware-fatal",
			Source:  "drivers/net/ethernet/mellanox/mlx5/core/health.c print_health_info: \"synd 0x%x: %s\" with hsynd_str()",
		},
		{
			Event: "mlx5_pci_slot_unavailable", Driver: "mlx5_core", Severity: SeverityCritical,
			Regex:   `^mlx5_core\S* .*PCI slot is unavailable`,
			Runbook: "mlx5-health-compromised",
			Source:  "drivers/net/ethernet/mellanox/mlx5/core/health.c print_health_info: \"PCI slot is unavailable\"",
		},
		{
			Event: "mlx5_health_recovery_failed", Driver: "mlx5_core", Severity: SeverityCritical,
			Regex:   `^mlx5_core\S* .*health recovery (?:failed|flow aborted)`,
			Runbook: "mlx5-health-compromised",
			Source:  "drivers/net/ethernet/mellanox/mlx5/core/health.c mlx5_health_try_recover: \"health recovery failed\", \"health recovery flow aborted, PCI reads still not working\"",
		},
		{
			Event: "mlx5_crdump_failed", Driver: "mlx5_core", Severity: SeverityError,
			Regex:   `^mlx5_core\S* .*crdump: failed to lock vsc gw err -?\d+`,
			Runbook: "mlx5-firmware-fatal",
			Source:  "drivers/net/ethernet/mellanox/mlx5/core/diag/crdump.c mlx5_crdump_collect: mlx5_core_warn(\"crdump: failed to lock vsc gw err %d\") (the fw_fatal crash dump could not be taken)",
		},
		// mlx5_core: firmware commands (cmd.c).
		{
			Event: "mlx5_cmd_timeout", Driver: "mlx5_core", Severity: SeverityError,
			Regex:   `^mlx5_core\S* .*\) timeout\. Will cause a leak of a command resource`,
			Runbook: "mlx5-command-timeout",
			Source:  "drivers/net/ethernet/mellanox/mlx5/core/cmd.c wait_func: \"%s(0x%x) timeout. Will cause a leak of a command resource\"",
		},
		{
			Event: "mlx5_cmd_no_completion", Driver: "mlx5_core", Severity: SeverityWarning,
			Regex:   `^mlx5_core\S* .*cmd\[-?\d+\]: [A-Z0-9_]+\(0x[0-9a-f]+\) No done completion`,
			Runbook: "mlx5-command-timeout",
			Source:  "drivers/net/ethernet/mellanox/mlx5/core/cmd.c wait_func_handle_exec_timeout: \"cmd[%d]: %s(0x%x) No done completion\"",
		},
		{
			// Before the generic command failure: restricted PFs (and some
			// probe paths) refuse register reads, which counter readers
			// such as node_exporter trigger on every poll (node_exporter
			// issue 3434); this is no firmware command error.
			Event: "mlx5_access_reg_restricted", Driver: "mlx5_core", Severity: SeverityInfo,
			Regex:   `^mlx5_core\S* .*ACCESS_REG\(0x805\) op_mod\(0x1\) failed, status bad (?:parameter\(0x3\)|operation\(0x2\))`,
			Runbook: "mlx5-access-reg-restricted",
			Source:  "drivers/net/ethernet/mellanox/mlx5/core/cmd.c mlx5_cmd_out_err: \"%s(0x%x) op_mod(0x%x) failed, status %s(0x%x), syndrome (0x%x), err(%d)\" for MLX5_CMD_OP_ACCESS_REG (0x805) read (op_mod 1) with MLX5_CMD_STAT_BAD_OP_ERR (0x2) or MLX5_CMD_STAT_BAD_PARAM_ERR (0x3)",
		},
		{
			Event: "mlx5_cmd_alloc_entry_failed", Driver: "mlx5_core", Severity: SeverityError,
			Regex:   `^mlx5_core\S* .*failed to allocate command entry`,
			Runbook: "mlx5-command-interface",
			Source:  "drivers/net/ethernet/mellanox/mlx5/core/cmd.c cmd_work_handler: mlx5_core_err(_rl)(\"failed to allocate command entry\")",
		},
		{
			Event: "mlx5_cmd_recovered_after_timeout", Driver: "mlx5_core", Severity: SeverityWarning,
			Regex:   `^mlx5_core\S* .*cmd\[-?\d+\]: [A-Z0-9_]+\(0x[0-9a-f]+\) recovered after timeout`,
			Runbook: "mlx5-command-interface",
			Source:  "drivers/net/ethernet/mellanox/mlx5/core/cmd.c wait_func_handle_exec_timeout: mlx5_core_warn(\"cmd[%d]: %s(0x%x) recovered after timeout\")",
		},
		{
			Event: "mlx5_cmd_eq_recovered", Driver: "mlx5_core", Severity: SeverityWarning,
			Regex:   `^mlx5_core\S* .*Recovered \d+ EQEs on cmd_eq`,
			Runbook: "mlx5-command-interface",
			Source:  "drivers/net/ethernet/mellanox/mlx5/core/eq.c mlx5_cmd_eq_recover: mlx5_core_warn(\"Recovered %d EQEs on cmd_eq\")",
		},
		{
			Event: "mlx5_cmd_bad_resource_state", Driver: "mlx5_core", Severity: SeverityError,
			Regex:   `^(?:mlx5_core\S* .*|command )failed, status bad resource state\(0x[0-9a-f]+\)`,
			Runbook: "mlx5-command-failed",
			Source:  "drivers/net/ethernet/mellanox/mlx5/core/cmd.c mlx5_cmd_out_err: \"%s(0x%x) op_mod(0x%x) failed, status %s(0x%x), ...\" with cmd_status_str() \"bad resource state\"; older drivers print \"command failed, status bad resource state(0x9)\"",
		},
		{
			Event: "mlx5_cmd_out_of_resources", Driver: "mlx5_core", Severity: SeverityError,
			Regex:   `^mlx5_core\S* .*failed, status (?:no resources|limits exceeded)\(0x[0-9a-f]+\)`,
			Runbook: "mlx5-out-of-resources",
			Source:  "drivers/net/ethernet/mellanox/mlx5/core/cmd.c mlx5_cmd_out_err with cmd_status_str() \"no resources\" (MLX5_CMD_STAT_NO_RES_ERR) or \"limits exceeded\" (MLX5_CMD_STAT_LIM_ERR)",
		},
		{
			Event: "mlx5_cmd_failed", Driver: "mlx5_core", Severity: SeverityWarning,
			Regex:   `^mlx5_core\S* .*failed, status [a-zA-Z ()]+\(0x[0-9a-f]+\)`,
			Runbook: "mlx5-command-failed",
			Source:  "drivers/net/ethernet/mellanox/mlx5/core/cmd.c mlx5_cmd_out_err, any other status",
		},
		{
			Event: "mlx5_exec_cmd_failed", Driver: "mlx5_core", Severity: SeverityError,
			Regex:   `^mlx5_core\S* .*exec cmd failed`,
			Runbook: "mlx5-command-failed",
			Source:  "NVIDIA ConnectX-7 user manual, troubleshooting table (\"exec cmd failed\"); not printed by the upstream mlx5_core sources read, kept for MLNX_OFED drivers",
		},
		// mlx5_core: initialisation.
		{
			Event: "mlx5_irq_request_failed", Driver: "mlx5_core", Severity: SeverityError,
			Regex:   `^mlx5_core\S* .*Failed to request irq\. err = -?\d+`,
			Runbook: "mlx5-probe-failed",
			Source:  "drivers/net/ethernet/mellanox/mlx5/core/pci_irq.c mlx5_irq_alloc: mlx5_core_err(\"Failed to request irq. err = %d\")",
		},
		{
			Event: "mlx5_probe_failed", Driver: "mlx5_core", Severity: SeverityError, Device: DeviceName,
			Regex:   `^mlx5_core\S*: probe of (?P<device>\S+) failed with error -?\d+`,
			Runbook: "mlx5-probe-failed",
			Source:  "drivers/base/dd.c call_driver_probe: pr_warn(\"%s: probe of %s failed with error %d\") for the mlx5_core drivers (PCI and auxiliary mlx5_core.eth, .rdma, .sf)",
		},
		// mlx5_core: asynchronous events (events.c, eq.c).
		{
			Event: "mlx5_port_module_error", Driver: "mlx5_core", Severity: SeverityError,
			Regex:   `^mlx5_core\S* .*Port module event(?:\[error\]: module \d+|: module \d+, Cable error|: Error)`,
			Runbook: "mlx5-port-module-error",
			Source:  "drivers/net/ethernet/mellanox/mlx5/core/events.c port_module: \"Port module event[error]: module %u, %s, %s\"; older kernels \"Port module event: module %u, Cable error\"",
		},
		{
			Event: "mlx5_cq_overrun", Driver: "mlx5_core", Severity: SeverityError,
			Regex:   `^mlx5_core\S* .*CQ error on CQN 0x[0-9a-f]+, syndrome? 0x1\b`,
			Runbook: "mlx5-cq-overrun",
			Source:  "drivers/net/ethernet/mellanox/mlx5/core/eq.c cq_err_event_notifier: \"CQ error on CQN 0x%x, syndrome 0x%x\", syndrome 0x1 = MLX5_CQ_ERROR_SYNDROME_CQ_OVERRUN; the event reaches mlx5_ib (cq.c mlx5_ib_cq_event) as IB_EVENT_CQ_ERR",
		},
		{
			Event: "mlx5_cq_error", Driver: "mlx5_core", Severity: SeverityError,
			Regex:   `^mlx5_core\S* .*CQ error on CQN 0x[0-9a-f]+, syndrome? 0x[0-9a-f]+`,
			Runbook: "mlx5-cq-overrun",
			Source:  "drivers/net/ethernet/mellanox/mlx5/core/eq.c cq_err_event_notifier, other syndromes (0x2 = access violation)",
		},
		{
			Event: "mlx5_insufficient_power", Driver: "mlx5_core", Severity: SeverityError,
			Regex:   `^mlx5_core\S* .*Detected insufficient power on the PCIe slot`,
			Runbook: "mlx5-insufficient-power",
			Source:  "drivers/net/ethernet/mellanox/mlx5/core/events.c mlx5_pcie_event: \"Detected insufficient power on the PCIe slot (%uW).\"",
		},
		{
			Event: "mlx5_high_temperature", Driver: "mlx5_core", Severity: SeverityWarning,
			Regex:   `^mlx5_core\S* .*High temperature on sensors`,
			Runbook: "mlx5-high-temperature",
			Source:  "drivers/net/ethernet/mellanox/mlx5/core/events.c temp_warn: \"High temperature on sensors with bit set %llx %llx\"",
		},
		// mlx5_core Ethernet (mlx5e) and the netdev watchdog.
		{
			Event: "mlx5e_tx_timeout", Driver: "mlx5_core", Severity: SeverityError, Device: DeviceInterface,
			Regex:   `^mlx5_core\S* .*TX timeout on queue: \d+`,
			Runbook: "tx-timeout",
			Source:  "drivers/net/ethernet/mellanox/mlx5/core/en/reporter_tx.c mlx5e_reporter_tx_timeout: \"TX timeout on queue: %d, SQ: 0x%x, ...\"",
		},
		{
			Event: "netdev_watchdog", Driver: "netdev", Severity: SeverityError, Device: DeviceInterface,
			Regex:   `^(?P<driver>[\w.-]+) \S+ (?P<device>[^\s:]+): NETDEV WATCHDOG: CPU: \d+: transmit queue \d+ timed out`,
			Runbook: "tx-timeout",
			Source:  "net/sched/sch_generic.c dev_watchdog, 6.9 and later: netdev_crit(dev, \"NETDEV WATCHDOG: CPU: %d: transmit queue %u timed out %u ms\") with the driver's netdev prefix, any driver",
		},
		{
			Event: "netdev_watchdog", Driver: "netdev", Severity: SeverityError,
			Regex:   `NETDEV WATCHDOG: (?P<device>[^\s:]+) \((?P<driver>[^)\s]+)\): transmit queue \d+ timed out`,
			Runbook: "tx-timeout",
			Source:  "net/sched/sch_generic.c dev_watchdog, kernels before 6.9: WARN_ONCE(\"NETDEV WATCHDOG: %s (%s): transmit queue %u timed out\") with dev->name and netdev_drivername(); 6.4 to 6.8 append \" %u ms\"",
		},
		{
			Event: "mlx5e_link_down", Driver: "mlx5_core", Severity: SeverityWarning, Device: DeviceInterface,
			Regex:   `^mlx5_core \S+ \S+: Link down$`,
			Runbook: "link-down",
			Source:  "drivers/net/ethernet/mellanox/mlx5/core/en_main.c mlx5e_update_carrier: netdev_info(\"Link down\")",
		},
		// mlx5_ib (drivers/infiniband/hw/mlx5/cq.c).
		{
			Event: "mlx5_ib_cq_unexpected_event", Driver: "mlx5_ib", Severity: SeverityWarning, Device: DeviceName,
			Regex:   `^(?:infiniband )?(?P<device>[A-Za-z][\w.-]*):.*Unexpected event type \d+ on CQ [0-9a-f]+`,
			Runbook: "mlx5-cq-overrun",
			Source:  "drivers/infiniband/hw/mlx5/cq.c mlx5_ib_cq_event: \"Unexpected event type %d on CQ %06x\"",
		},
		{
			Event: "mlx5_ib_wc_error", Driver: "mlx5_ib", Severity: SeverityWarning, Device: DeviceName,
			Regex:   `^(?:infiniband )?(?P<device>[A-Za-z][\w.-]*):.*WC error: \d+, [Mm]essage: `,
			Runbook: "mlx5-ib-wc-error",
			Source:  "drivers/infiniband/hw/mlx5/cq.c dump_cqe / mlx5_handle_error_cqe: \"WC error: %d, Message: %s\" (\"message:\" in some 5.17-era kernels); the device is whatever name the RDMA device has (mlx5_0, or rocep8s0f0, ibp..., mlx5_bond_0 after rdma-core's udev renaming)",
		},
		// ib_core and irdma, any RDMA device name.
		{
			Event: "ib_mad_qp_fatal_error", Driver: "ib_core", Severity: SeverityError, Device: DeviceName,
			Regex:   `^(?:infiniband |\S+ \S+ )?(?P<device>[A-Za-z][\w.-]*): Fatal error \(\d+\) on MAD QP \(\d+\)`,
			Runbook: "rdma-async-error",
			Source:  "drivers/infiniband/core/mad.c qp_event_handler: dev_err(\"Fatal error (%d) on MAD QP (%u)\")",
		},
		{
			Event: "irdma_abnormal_async_event", Driver: "irdma", Severity: SeverityWarning, Device: DeviceName,
			Regex:   `^(?:infiniband |\S+ \S+ )(?P<device>[A-Za-z][\w.-]*): abnormal ae_id = 0x[0-9a-f]+`,
			Runbook: "rdma-async-error",
			Source:  "drivers/infiniband/hw/irdma/hw.c irdma_process_aeq: ibdev_err(\"abnormal ae_id = 0x%x bool qp=%d qp_id = %d, ae_src=%d\") (older: without \", ae_src=%d\"), printed with the ice/i40e PCI prefix and the RDMA device name",
		},
		// ena (drivers/net/ethernet/amazon/ena).
		{
			Event: "ena_keep_alive_timeout", Driver: "ena", Severity: SeverityError, Device: DeviceInterface,
			Regex:   `^(?:ena |\[ENA_COM: ).*Keep alive watchdog timeout`,
			Runbook: "ena-keep-alive-timeout",
			Source:  "drivers/net/ethernet/amazon/ena/ena_netdev.c check_for_missing_keep_alive: \"Keep alive watchdog timeout.\"",
		},
		{
			Event: "ena_reset_triggered", Driver: "ena", Severity: SeverityWarning, Device: DeviceInterface,
			Regex:   `^(?:ena |\[ENA_COM: ).*Trigger reset is on`,
			Runbook: "ena-device-reset",
			Source:  "drivers/net/ethernet/amazon/ena/ena_netdev.c ena_timer_service: \"Trigger reset is on\"",
		},
		{
			Event: "ena_reg_read_timeout", Driver: "ena", Severity: SeverityError, Device: DeviceInterface,
			Regex:   `^(?:ena |\[ENA_COM: ).*[Rr]eading reg failed for timeout`,
			Runbook: "ena-register-read-timeout",
			Source:  "drivers/net/ethernet/amazon/ena/ena_com.c ena_com_reg_bar_read32: \"Reading reg failed for timeout. expected: req id[%u] offset[%u] actual: ...\" (\"reading reg\" in older drivers)",
		},
		{
			Event: "ena_reset_reg_read_timeout", Driver: "ena", Severity: SeverityError, Device: DeviceInterface,
			Regex:   `^(?:ena |\[ENA_COM: ).*Reg read32 timeout occurred`,
			Runbook: "ena-register-read-timeout",
			Source:  "drivers/net/ethernet/amazon/ena/ena_com.c ena_com_dev_reset: \"Reg read32 timeout occurred\"",
		},
		{
			Event: "ena_tx_not_completed_on_time", Driver: "ena", Severity: SeverityWarning, Device: DeviceInterface,
			Regex:   `^(?:ena |\[ENA_COM: ).*Found a Tx that wasn't completed on time, qid \d+, index \d+`,
			Runbook: "tx-timeout",
			Source:  "drivers/net/ethernet/amazon/ena/ena_netdev.c check_missing_comp_in_tx_queue: netif_notice(\"Found a Tx that wasn't completed on time, qid %d, index %d.\") (newer drivers add \" %u usecs have passed since last napi execution. Napi scheduled: %d\")",
		},
		{
			Event: "ena_missing_tx_completions", Driver: "ena", Severity: SeverityError, Device: DeviceInterface,
			Regex:   `^(?:ena .*|\[ENA_COM: .*|(?P<device>[\w.-]+): )(?:The number of lost tx completions is|Lost TX completions are) above the threshold`,
			Runbook: "tx-timeout",
			Source:  "drivers/net/ethernet/amazon/ena/ena_netdev.c check_missing_comp_in_tx_queue: \"The number of lost tx completions is above the threshold (%d > %d). Reset the device\"; newer drivers \"Lost TX completions are above the threshold (%d > %d). Completion transmission timeout: %u.\"; also when a report cut the line to \"<interface>: ...\"",
		},
		{
			Event: "ena_reset_failed", Driver: "ena", Severity: SeverityCritical, Device: DeviceInterface,
			Regex:   `^(?:ena |\[ENA_COM: ).*Reset attempt failed\. Can not reset the device`,
			Runbook: "ena-device-reset",
			Source:  "drivers/net/ethernet/amazon/ena/ena_netdev.c ena_restore_device: \"Reset attempt failed. Can not reset the device\"",
		},
		{
			Event: "ena_reset_completed", Driver: "ena", Severity: SeverityInfo, Device: DeviceInterface,
			Regex:   `^(?:ena |\[ENA_COM: ).*Device reset completed successfully`,
			Runbook: "ena-device-reset",
			Source:  "drivers/net/ethernet/amazon/ena/ena_netdev.c ena_restore_device: \"Device reset completed successfully, Driver info: %s\" (newer: without the driver info)",
		},
		// PCI core, printed with the device driver's prefix; counted only for
		// network and InfiniBand functions (NICOnly).
		{
			Event: "pcie_link_limited", Driver: "pci", Severity: SeverityWarning, NICOnly: true,
			Regex:   `^\S+ \S+(?: \S+)?: .*available PCIe bandwidth, limited by [0-9.]+ GT/s(?: PCIe)? x\d+ link at`,
			Runbook: "pcie-link-degraded",
			Source:  "drivers/pci/pci.c __pcie_print_link_status: \"%u.%03u Gb/s available PCIe bandwidth, limited by %s x%d link at %s (capable of ...)\"; the speed is \"8.0 GT/s PCIe\" (pci_speed_string, 5.4 and later) or \"8 GT/s\" (PCIE_SPEED2STR, 4.17 to 5.3)",
		},
		{
			Event: "pcie_aer_fatal", Driver: "pci", Severity: SeverityCritical, NICOnly: true,
			Regex:   aerRegex(`Uncorrect(?:ed|able) \(Fatal\)`),
			Runbook: "pcie-aer",
			Source:  aerSource,
		},
		{
			Event: "pcie_aer_nonfatal", Driver: "pci", Severity: SeverityError, NICOnly: true,
			Regex:   aerRegex(`Uncorrect(?:ed|able) \(Non-Fatal\)`),
			Runbook: "pcie-aer",
			Source:  aerSource,
		},
		{
			Event: "pcie_aer_corrected", Driver: "pci", Severity: SeverityWarning, NICOnly: true,
			Regex:   aerRegex(`Corrected`),
			Runbook: "pcie-aer",
			Source:  aerSource,
		},
		// IOMMU faults, printed with the faulting device's prefix.
		{
			Event: "iommu_page_fault", Driver: "iommu", Severity: SeverityError, NICOnly: true,
			Regex:   `AMD-Vi: Event logged \[IO_PAGE_FAULT `,
			Runbook: "iommu-page-fault",
			Source:  "drivers/iommu/amd/iommu.c amd_iommu_report_page_fault: pci_err(pdev, \"Event logged [IO_PAGE_FAULT domain=0x%04x address=0x%llx flags=0x%04x]\") with pr_fmt \"AMD-Vi: \"; for a function without IOMMU data pr_err(\"Event logged [IO_PAGE_FAULT device=%04x:%02x:%02x.%x ...]\"), whose address the pci device mode finds in the text",
		},
	}
}

// pciAddr is a PCI address (domain, bus, device, function) in a regular
// expression.
const pciAddr = `[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]`

// aerRegex matches the two lines the AER driver prints per error of the
// given severity: the root port's summary, which names the source function
// (the device group), and each reporting function's own line, whose
// dev_printk prefix names it.
func aerRegex(severity string) string {
	return `AER: (?:Multiple )?` + severity + ` error (?:message )?received(?::| from) (?P<device>` + pciAddr + `)` +
		`|^\S+ ` + pciAddr + `: (?:AER: )?PCIe Bus Error: severity=` + severity + `,`
}

const aerSource = "drivers/pci/pcie/aer.c aer_print_port_info: pci_info(\"%s%s error message received from %04x:%02x:%02x.%d\") (newer kernels append details, aer_print_source; before: \"%s%s error received: %04x:%02x:%02x.%d\", and \"id=%04x\" in old kernels, which names no function) with \"Multiple \" and aer_error_severity_string[] \"Corrected\", \"Uncorrectable (Non-Fatal)\", \"Uncorrectable (Fatal)\" (\"Uncorrected\" before 4.x); aer_print_error/__aer_print_error: \"PCIe Bus Error: severity=%s, type=%s, (%s)\" on the reporting function"

// VMARules returns the built-in rules for NVIDIA VMA (libvma) application
// logs (VMA_LOG_FILE). libvma prefixes its lines with "VMA <LEVEL>:"; the
// expressions match the message text after it.
func VMARules() []Rule {
	return []Rule{
		{
			Event: "vma_no_supported_devices", Driver: "vma", Severity: SeverityError, Device: DeviceNone,
			Regex:   `No supported devices found|VMA does not detect IB capable devices|No IB capable devices found`,
			Runbook: "vma-no-devices",
			Source:  "libvma src/vma/dev/ib_ctx_handler_collection.cpp update_tbl: \"VMA does not detect IB capable devices\", \"No IB capable devices found!\"; VMA user manual: \"No supported devices found\"",
		},
		{
			Event: "vma_buffer_pool_alloc_failed", Driver: "vma", Severity: SeverityError, Device: DeviceNone,
			Regex:   `Failed to allocate buffer pool|failed allocating data memory block`,
			Runbook: "vma-buffer-pool",
			Source:  "libvma src/vma/dev/allocator.cpp: \"failed allocating data memory block\"; VMA user manual: \"Failed to allocate buffer pool\"",
		},
		{
			Event: "vma_rx_buffers_exhausted", Driver: "vma", Severity: SeverityWarning, Device: DeviceNone,
			Regex:   `Out of mem_buf_desc from Rx buffer pool`,
			Runbook: "vma-buffer-pool",
			Source:  "libvma src/vma/dev/cq_mgr.cpp request_more_buffers: \"WARNING Out of mem_buf_desc from Rx buffer pool for qp_mgr qp_mgr initialization\"",
		},
		{
			Event: "vma_ring_alloc_failed", Driver: "vma", Severity: SeverityError, Device: DeviceNone,
			Regex:   `Ring allocation failed|Failed to allocate qp_mgr|create qp failed`,
			Runbook: "vma-ring-allocation",
			Source:  "libvma src/vma/dev/ring_simple.cpp create_resources: \"Failed to allocate qp_mgr!\", \"create qp failed\"; VMA user manual: \"Ring allocation failed\"",
		},
		{
			Event: "vma_socket_create_failed", Driver: "vma", Severity: SeverityError, Device: DeviceNone,
			Regex:   `Cannot create socket`,
			Runbook: "vma-socket",
			Source:  "VMA user manual, troubleshooting: \"Cannot create socket\" (no such string in libvma master)",
		},
		{
			Event: "vma_igmp_join_failed", Driver: "vma", Severity: SeverityError, Device: DeviceNone,
			Regex:   `IGMP join failed`,
			Runbook: "vma-igmp",
			Source:  "VMA user manual, troubleshooting: \"IGMP join failed\" (no such string in libvma master)",
		},
		{
			Event: "vma_memlock_limit", Driver: "vma", Severity: SeverityWarning, Device: DeviceNone,
			Regex:   `Your current max locked memory is: -?\d+\. Please change it to unlimited`,
			Runbook: "vma-memlock",
			Source:  "libvma src/vma/main.cpp check_locked_mem: \"Your current max locked memory is: %ld. Please change it to unlimited.\"",
		},
		{
			Event: "vma_hugepages_unavailable", Driver: "vma", Severity: SeverityWarning, Device: DeviceNone,
			Regex:   `Not enough hugepage resources for VMA memory allocation`,
			Runbook: "vma-hugepages",
			Source:  "libvma src/vma/dev/allocator.cpp: \"* Not enough hugepage resources for VMA memory allocation.\"",
		},
		{
			Event: "vma_daemon_unreachable", Driver: "vma", Severity: SeverityWarning, Device: DeviceNone,
			Regex:   `Can not establish connection with the daemon \(vmad\)`,
			Runbook: "vma-daemon",
			Source:  "libvma 8.9.5 src/vma/util/agent.cpp: \"* Can not establish connection with the daemon (vmad).\"",
		},
		{
			Event: "vma_not_offloaded", Driver: "vma", Severity: SeverityWarning, Device: DeviceNone,
			Regex:   `(?:Interface|Bond) \S+ will not be offloaded|VMA cannot offload the device while RoCE LAG is enabled`,
			Runbook: "vma-roce-lag",
			Source:  "libvma src/vma/util/utils.cpp print_roce_lag_warnings: \"* Interface %s will not be offloaded.\"; src/vma/dev/net_device_val.cpp: \"* Bond %s will not be offloaded ...\"",
		},
		{
			Event: "vma_preload_failed", Driver: "vma", Severity: SeverityError, Device: DeviceNone,
			Regex:   `from LD_PRELOAD cannot be preloaded|Failed loading VMA library`,
			Runbook: "vma-preload",
			Source:  "glibc elf/rtld.c: \"ERROR: ld.so: object '%s' from LD_PRELOAD cannot be preloaded (%s): ignored.\"; libvma src/vma/util/sys_vars.cpp: \"* Failed loading VMA library!\"",
		},
	}
}
