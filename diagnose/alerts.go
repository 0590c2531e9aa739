package diagnose

// Severities as the alert rules' severity label defines them.
const (
	SeverityPage    = "page"
	SeverityWarning = "warning"
	SeverityInfo    = "info"
)

// Alert is an alert of deploy/prometheus/alerts.yml that covers a
// condition diagnose reports. TestAlertsMatchRules checks every entry
// against that file.
type Alert struct {
	Name     string
	Severity string
}

// runbookBase is the prefix of every runbook_url in alerts.yml.
const runbookBase = "https://github.com/nic-exporter/nic_exporter/blob/main/docs/runbooks.md#"

// Runbook returns the alert's runbook_url.
func (a Alert) Runbook() string {
	b := []byte(runbookBase)
	for _, c := range a.Name {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, byte(c))
	}
	return string(b)
}

var (
	alertFwFatal         = Alert{"NICDevlinkFwFatalError", SeverityPage}
	alertFw              = Alert{"NICDevlinkFwError", SeverityWarning}
	alertVnic            = Alert{"NICDevlinkVnicError", SeverityWarning}
	alertTxRx            = Alert{"NICDevlinkTxRxErrors", SeverityWarning}
	alertReporterStuck   = Alert{"NICDevlinkReporterStuck", SeverityWarning}
	alertLinkDown        = Alert{"NICLinkDown", SeverityWarning}
	alertPCIeDegraded    = Alert{"NICPCIeLinkDegraded", SeverityWarning}
	alertIBNotLinkUp     = Alert{"NICInfiniBandPortNotLinkUp", SeverityWarning}
	alertIBNotActive     = Alert{"NICInfiniBandPortNotActive", SeverityWarning}
	alertENAWatchdog     = Alert{"NICENAWatchdogExpired", SeverityPage}
	alertENATxTimeout    = Alert{"NICENATxTimeout", SeverityWarning}
	alertENAAdminQPause  = Alert{"NICENAAdminQueuePaused", SeverityWarning}
	alertPCIeUncorrected = Alert{"NICKernelLogPCIeUncorrectable", SeverityWarning}
)

// kernelLogAlerts lists, per alert of the nic-logs group, the kernel log
// rule events its expression selects.
var kernelLogAlerts = []struct {
	Alert  Alert
	Events []string
}{
	{Alert{"NICKernelLogFirmwareError", SeverityWarning}, []string{"mlx5_fw_fatal_error", "mlx5_fw_syndrome", "mlx5_health_compromised", "mlx5_pci_slot_unavailable", "mlx5_health_recovery_failed", "mlx5_crdump_failed"}},
	{Alert{"NICKernelLogCommandErrors", SeverityWarning}, []string{"mlx5_cmd_timeout", "mlx5_cmd_no_completion", "mlx5_cmd_bad_resource_state", "mlx5_cmd_failed", "mlx5_exec_cmd_failed", "mlx5_cmd_out_of_resources", "mlx5_cmd_alloc_entry_failed", "mlx5_cmd_recovered_after_timeout", "mlx5_cmd_eq_recovered"}},
	{Alert{"NICKernelLogCQErrors", SeverityWarning}, []string{"mlx5_cq_overrun", "mlx5_cq_error", "mlx5_ib_cq_unexpected_event"}},
	{Alert{"NICKernelLogHardwareEvent", SeverityWarning}, []string{"mlx5_port_module_error", "mlx5_insufficient_power", "mlx5_high_temperature"}},
	{Alert{"NICKernelLogTxTimeout", SeverityWarning}, []string{"mlx5e_tx_timeout", "netdev_watchdog", "ena_tx_not_completed_on_time"}},
	{Alert{"NICKernelLogENAReset", SeverityWarning}, []string{"ena_keep_alive_timeout", "ena_reset_triggered", "ena_reg_read_timeout", "ena_reset_reg_read_timeout", "ena_missing_tx_completions", "ena_reset_failed"}},
	{Alert{"NICKernelLogPCIeUncorrectable", SeverityWarning}, []string{"pcie_aer_fatal", "pcie_aer_nonfatal"}},
	{Alert{"NICKernelLogDeviceInitFailed", SeverityWarning}, []string{"mlx5_probe_failed", "mlx5_irq_request_failed"}},
	{Alert{"NICKernelLogRDMAErrors", SeverityWarning}, []string{"ib_mad_qp_fatal_error", "irdma_abnormal_async_event"}},
	{Alert{"NICKernelLogIOMMUFault", SeverityWarning}, []string{"iommu_page_fault"}},
}

// kernelLogAlert returns the alert that covers a kernel log event.
func kernelLogAlert(event string) (Alert, bool) {
	for _, ka := range kernelLogAlerts {
		for _, e := range ka.Events {
			if e == event {
				return ka.Alert, true
			}
		}
	}
	return Alert{}, false
}

// devlinkAlert returns the alert that covers a devlink health reporter.
func devlinkAlert(reporter string) (Alert, bool) {
	switch reporter {
	case "fw_fatal":
		return alertFwFatal, true
	case "fw":
		return alertFw, true
	case "vnic":
		return alertVnic, true
	case "tx", "rx":
		return alertTxRx, true
	}
	return Alert{}, false
}
