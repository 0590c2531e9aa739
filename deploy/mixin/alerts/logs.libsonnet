// Kernel and application log events (collectors kmsg and applog). An
// event series appears with its first match, already at 1, which
// increase() cannot see (it needs two samples). So each alert fires on an
// increase of an existing series or on a series that did not exist 15
// minutes ago; "+ 0" drops the metric name so both branches have the
// same labels. Each alert covers the events of one condition; the
// runbook section lists them with the log rules' own subsections. With
// --collector.kmsg.replay (the default) a restarted exporter counts the
// records still in the kernel buffer again, with the same totals, so the
// series continue; the "new series" branch compares last_over_time() over
// 5 minutes with the window before, so a restart shorter than 5 minutes
// (during which the series are stale) neither resolves nor re-fires an
// alert (deploy/restart_test.go; see docs/runbooks.md). The two PCIe AER
// alerts stay silent for a function whose AER counters the exporter read
// in the last 10 minutes (last_over_time, so one missed scrape does not
// let the log alert through): nic-pcie-aer alerts on those instead.
{
  prometheusAlerts+:: {
    groups+: [
      {
        name: 'nic-logs',
        rules: [
          {
            alert: 'NICKernelLogFirmwareError',
            expr: |||
              increase(nic_kernel_log_events_total{event=~"mlx5_fw_fatal_error|mlx5_fw_syndrome|mlx5_health_compromised|mlx5_pci_slot_unavailable|mlx5_health_recovery_failed|mlx5_crdump_failed", %(nicExporterSelector)s}[15m]) > 0
              or (last_over_time(nic_kernel_log_events_total{event=~"mlx5_fw_fatal_error|mlx5_fw_syndrome|mlx5_health_compromised|mlx5_pci_slot_unavailable|mlx5_health_recovery_failed|mlx5_crdump_failed", %(nicExporterSelector)s}[5m]) unless last_over_time(nic_kernel_log_events_total{event=~"mlx5_fw_fatal_error|mlx5_fw_syndrome|mlx5_health_compromised|mlx5_pci_slot_unavailable|mlx5_health_recovery_failed|mlx5_crdump_failed", %(nicExporterSelector)s}[15m] offset 15m)) + 0
            ||| % $._config,
            'for': '0m',
            // The mlx5 device label is the PCI address; pci_address is what
            // the inhibit rules match on with NICDevlinkFwFatalError.
            labels: { severity: 'warning', pci_address: '{{ $labels.device }}' },
            annotations: {
              summary: 'Kernel log: {{ $labels.event }} on {{ $labels.instance }} {{ $labels.device }}',
              description: 'The {{ $labels.driver }} driver logged {{ $value | printf "%.0f" }} {{ $labels.event }} records for {{ $labels.device }} on {{ $labels.instance }} in 15 minutes: the adapter\'s firmware failed or its health check gave up on it.',
            },
          },
          {
            alert: 'NICKernelLogCommandErrors',
            expr: |||
              increase(nic_kernel_log_events_total{event=~"mlx5_cmd_timeout|mlx5_cmd_no_completion|mlx5_cmd_bad_resource_state|mlx5_cmd_failed|mlx5_exec_cmd_failed|mlx5_cmd_out_of_resources|mlx5_cmd_alloc_entry_failed|mlx5_cmd_recovered_after_timeout|mlx5_cmd_eq_recovered", %(nicExporterSelector)s}[15m]) > 0
              or (last_over_time(nic_kernel_log_events_total{event=~"mlx5_cmd_timeout|mlx5_cmd_no_completion|mlx5_cmd_bad_resource_state|mlx5_cmd_failed|mlx5_exec_cmd_failed|mlx5_cmd_out_of_resources|mlx5_cmd_alloc_entry_failed|mlx5_cmd_recovered_after_timeout|mlx5_cmd_eq_recovered", %(nicExporterSelector)s}[5m]) unless last_over_time(nic_kernel_log_events_total{event=~"mlx5_cmd_timeout|mlx5_cmd_no_completion|mlx5_cmd_bad_resource_state|mlx5_cmd_failed|mlx5_exec_cmd_failed|mlx5_cmd_out_of_resources|mlx5_cmd_alloc_entry_failed|mlx5_cmd_recovered_after_timeout|mlx5_cmd_eq_recovered", %(nicExporterSelector)s}[15m] offset 15m)) + 0
            ||| % $._config,
            'for': '0m',
            // The mlx5 device label is the PCI address; pci_address is what
            // the inhibit rules match on with NICDevlinkFwFatalError.
            labels: { severity: 'warning', pci_address: '{{ $labels.device }}' },
            annotations: {
              summary: 'Kernel log: {{ $labels.event }} on {{ $labels.instance }} {{ $labels.device }}',
              description: 'The {{ $labels.driver }} driver logged {{ $value | printf "%.0f" }} {{ $labels.event }} records for {{ $labels.device }} on {{ $labels.instance }} in 15 minutes: firmware commands timed out, failed or ran out of resources.',
            },
          },
          {
            alert: 'NICKernelLogCQErrors',
            expr: |||
              increase(nic_kernel_log_events_total{event=~"mlx5_cq_overrun|mlx5_cq_error|mlx5_ib_cq_unexpected_event", %(nicExporterSelector)s}[15m]) > 0
              or (last_over_time(nic_kernel_log_events_total{event=~"mlx5_cq_overrun|mlx5_cq_error|mlx5_ib_cq_unexpected_event", %(nicExporterSelector)s}[5m]) unless last_over_time(nic_kernel_log_events_total{event=~"mlx5_cq_overrun|mlx5_cq_error|mlx5_ib_cq_unexpected_event", %(nicExporterSelector)s}[15m] offset 15m)) + 0
            ||| % $._config,
            'for': '0m',
            // The mlx5 device label is the PCI address; pci_address is what
            // the inhibit rules match on with NICDevlinkFwFatalError.
            labels: { severity: 'warning', pci_address: '{{ $labels.device }}' },
            annotations: {
              summary: 'Kernel log: {{ $labels.event }} on {{ $labels.instance }} {{ $labels.device }}',
              description: 'The {{ $labels.driver }} driver logged {{ $value | printf "%.0f" }} {{ $labels.event }} records for {{ $labels.device }} on {{ $labels.instance }} in 15 minutes: a completion queue overflowed or was misused, and the queue pairs on it went to the error state.',
            },
          },
          {
            alert: 'NICKernelLogHardwareEvent',
            expr: |||
              increase(nic_kernel_log_events_total{event=~"mlx5_port_module_error|mlx5_insufficient_power|mlx5_high_temperature", %(nicExporterSelector)s}[15m]) > 0
              or (last_over_time(nic_kernel_log_events_total{event=~"mlx5_port_module_error|mlx5_insufficient_power|mlx5_high_temperature", %(nicExporterSelector)s}[5m]) unless last_over_time(nic_kernel_log_events_total{event=~"mlx5_port_module_error|mlx5_insufficient_power|mlx5_high_temperature", %(nicExporterSelector)s}[15m] offset 15m)) + 0
            ||| % $._config,
            'for': '0m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'Kernel log: {{ $labels.event }} on {{ $labels.instance }} {{ $labels.device }}',
              description: 'The {{ $labels.driver }} driver logged {{ $value | printf "%.0f" }} {{ $labels.event }} records for {{ $labels.device }} on {{ $labels.instance }} in 15 minutes: the transceiver module, the slot\'s power or the adapter\'s temperature is out of bounds.',
            },
          },
          {
            alert: 'NICKernelLogTxTimeout',
            expr: |||
              increase(nic_kernel_log_events_total{event=~"mlx5e_tx_timeout|netdev_watchdog|ena_tx_not_completed_on_time", %(nicExporterSelector)s}[15m]) > 0
              or (last_over_time(nic_kernel_log_events_total{event=~"mlx5e_tx_timeout|netdev_watchdog|ena_tx_not_completed_on_time", %(nicExporterSelector)s}[5m]) unless last_over_time(nic_kernel_log_events_total{event=~"mlx5e_tx_timeout|netdev_watchdog|ena_tx_not_completed_on_time", %(nicExporterSelector)s}[15m] offset 15m)) + 0
            ||| % $._config,
            'for': '0m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'Kernel log: {{ $labels.event }} on {{ $labels.instance }} {{ $labels.device }}',
              description: 'The kernel logged {{ $value | printf "%.0f" }} {{ $labels.event }} records for {{ $labels.device }} on {{ $labels.instance }} in 15 minutes: a transmit queue stopped completing and the driver recovered it.',
            },
          },
          {
            alert: 'NICKernelLogENAReset',
            expr: |||
              increase(nic_kernel_log_events_total{event=~"ena_keep_alive_timeout|ena_reset_triggered|ena_reg_read_timeout|ena_reset_reg_read_timeout|ena_missing_tx_completions|ena_reset_failed", %(nicExporterSelector)s}[15m]) > 0
              or (last_over_time(nic_kernel_log_events_total{event=~"ena_keep_alive_timeout|ena_reset_triggered|ena_reg_read_timeout|ena_reset_reg_read_timeout|ena_missing_tx_completions|ena_reset_failed", %(nicExporterSelector)s}[5m]) unless last_over_time(nic_kernel_log_events_total{event=~"ena_keep_alive_timeout|ena_reset_triggered|ena_reg_read_timeout|ena_reset_reg_read_timeout|ena_missing_tx_completions|ena_reset_failed", %(nicExporterSelector)s}[15m] offset 15m)) + 0
            ||| % $._config,
            'for': '0m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'Kernel log: {{ $labels.event }} on {{ $labels.instance }} {{ $labels.device }}',
              description: 'The ena driver logged {{ $value | printf "%.0f" }} {{ $labels.event }} records for {{ $labels.device }} on {{ $labels.instance }} in 15 minutes: the device stopped answering (keep-alive, register reads, transmit completions) and the driver reset it, or failed to.',
            },
          },
          {
            alert: 'NICKernelLogPCIeUncorrectable',
            expr: |||
              (
                increase(nic_kernel_log_events_total{event=~"pcie_aer_fatal|pcie_aer_nonfatal", %(nicExporterSelector)s}[15m]) > 0
                or (last_over_time(nic_kernel_log_events_total{event=~"pcie_aer_fatal|pcie_aer_nonfatal", %(nicExporterSelector)s}[5m]) unless last_over_time(nic_kernel_log_events_total{event=~"pcie_aer_fatal|pcie_aer_nonfatal", %(nicExporterSelector)s}[15m] offset 15m)) + 0
              )
              unless on (instance, device) label_replace(last_over_time(nic_pcie_aer_errors_total{%(nicExporterSelector)s}[10m]), "device", "$1", "pci_address", "(.+)")
            ||| % $._config,
            'for': '0m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'Kernel log: {{ $labels.event }} on {{ $labels.instance }} {{ $labels.device }}',
              description: 'The PCI core logged {{ $value | printf "%.0f" }} {{ $labels.event }} records for {{ $labels.device }} on {{ $labels.instance }} in 15 minutes: the PCIe link of the network function lost a transaction (non-fatal) or had to be reset (fatal); traffic on it stalled or failed while the kernel recovered it.',
            },
          },
          {
            alert: 'NICKernelLogPCIeCorrected',
            expr: |||
              (
                increase(nic_kernel_log_events_total{event=~"pcie_aer_corrected", %(nicExporterSelector)s}[1h]) > %(pcieCorrectedErrors)s
                or (last_over_time(nic_kernel_log_events_total{event=~"pcie_aer_corrected", %(nicExporterSelector)s}[5m]) unless last_over_time(nic_kernel_log_events_total{event=~"pcie_aer_corrected", %(nicExporterSelector)s}[1h] offset 1h)) + 0 > %(pcieCorrectedErrors)s
              )
              unless on (instance, device) label_replace(last_over_time(nic_pcie_aer_errors_total{%(nicExporterSelector)s}[10m]), "device", "$1", "pci_address", "(.+)")
            ||| % $._config,
            'for': '0m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'Kernel log: {{ $labels.event }} on {{ $labels.instance }} {{ $labels.device }}',
              description: 'The PCI core logged {{ $value | printf "%.0f" }} {{ $labels.event }} records for {{ $labels.device }} on {{ $labels.instance }} in an hour: the PCIe link of the network function keeps correcting errors, a sign of a marginal slot, riser or card.',
            },
          },
          {
            alert: 'NICKernelLogDeviceInitFailed',
            expr: |||
              increase(nic_kernel_log_events_total{event=~"mlx5_probe_failed|mlx5_irq_request_failed", %(nicExporterSelector)s}[15m]) > 0
              or (last_over_time(nic_kernel_log_events_total{event=~"mlx5_probe_failed|mlx5_irq_request_failed", %(nicExporterSelector)s}[5m]) unless last_over_time(nic_kernel_log_events_total{event=~"mlx5_probe_failed|mlx5_irq_request_failed", %(nicExporterSelector)s}[15m] offset 15m)) + 0
            ||| % $._config,
            'for': '0m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'Kernel log: {{ $labels.event }} on {{ $labels.instance }} {{ $labels.device }}',
              description: 'The {{ $labels.driver }} driver logged {{ $value | printf "%.0f" }} {{ $labels.event }} records for {{ $labels.device }} on {{ $labels.instance }} in 15 minutes: the driver could not bring up the device or one of its functions (probe or interrupt allocation failed); its ports are missing.',
            },
          },
          {
            alert: 'NICKernelLogRDMAErrors',
            expr: |||
              increase(nic_kernel_log_events_total{event=~"ib_mad_qp_fatal_error|irdma_abnormal_async_event", %(nicExporterSelector)s}[15m]) > 0
              or (last_over_time(nic_kernel_log_events_total{event=~"ib_mad_qp_fatal_error|irdma_abnormal_async_event", %(nicExporterSelector)s}[5m]) unless last_over_time(nic_kernel_log_events_total{event=~"ib_mad_qp_fatal_error|irdma_abnormal_async_event", %(nicExporterSelector)s}[15m] offset 15m)) + 0
            ||| % $._config,
            'for': '0m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'Kernel log: {{ $labels.event }} on {{ $labels.instance }} {{ $labels.device }}',
              description: 'The {{ $labels.driver }} driver logged {{ $value | printf "%.0f" }} {{ $labels.event }} records for {{ $labels.device }} on {{ $labels.instance }} in 15 minutes: the RDMA device reported a fatal error on its management QP or an abnormal asynchronous event; RDMA connections through it failed.',
            },
          },
          {
            alert: 'NICKernelLogIOMMUFault',
            expr: |||
              increase(nic_kernel_log_events_total{event=~"iommu_page_fault", %(nicExporterSelector)s}[15m]) > 0
              or (last_over_time(nic_kernel_log_events_total{event=~"iommu_page_fault", %(nicExporterSelector)s}[5m]) unless last_over_time(nic_kernel_log_events_total{event=~"iommu_page_fault", %(nicExporterSelector)s}[15m] offset 15m)) + 0
            ||| % $._config,
            'for': '0m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'Kernel log: {{ $labels.event }} on {{ $labels.instance }} {{ $labels.device }}',
              description: 'The IOMMU driver logged {{ $value | printf "%.0f" }} {{ $labels.event }} records for {{ $labels.device }} on {{ $labels.instance }} in 15 minutes: the network function made DMA accesses the IOMMU blocked; the transfers failed.',
            },
          },
          {
            alert: 'NICAppLogVMAErrors',
            expr: |||
              increase(nic_app_log_events_total{event=~"vma_no_supported_devices|vma_buffer_pool_alloc_failed|vma_rx_buffers_exhausted|vma_ring_alloc_failed|vma_socket_create_failed|vma_igmp_join_failed|vma_memlock_limit|vma_hugepages_unavailable|vma_daemon_unreachable|vma_not_offloaded|vma_preload_failed", %(nicExporterSelector)s}[15m]) > 0
              or (last_over_time(nic_app_log_events_total{event=~"vma_no_supported_devices|vma_buffer_pool_alloc_failed|vma_rx_buffers_exhausted|vma_ring_alloc_failed|vma_socket_create_failed|vma_igmp_join_failed|vma_memlock_limit|vma_hugepages_unavailable|vma_daemon_unreachable|vma_not_offloaded|vma_preload_failed", %(nicExporterSelector)s}[5m]) unless last_over_time(nic_app_log_events_total{event=~"vma_no_supported_devices|vma_buffer_pool_alloc_failed|vma_rx_buffers_exhausted|vma_ring_alloc_failed|vma_socket_create_failed|vma_igmp_join_failed|vma_memlock_limit|vma_hugepages_unavailable|vma_daemon_unreachable|vma_not_offloaded|vma_preload_failed", %(nicExporterSelector)s}[15m] offset 15m)) + 0
            ||| % $._config,
            'for': '0m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'VMA log: {{ $labels.event }} in {{ $labels.file }} on {{ $labels.instance }}',
              description: 'The VMA log {{ $labels.file }} on {{ $labels.instance }} has {{ $value | printf "%.0f" }} {{ $labels.event }} lines in 15 minutes.',
            },
          },
        ],
      },
    ],
  },
}
