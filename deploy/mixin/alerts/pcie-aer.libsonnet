// PCIe AER from the functions' own counters (sysfs aer_dev_*, kernel
// 4.19+). Where a function has them, these replace the kernel-log AER
// alerts of nic-logs (NICKernelLogPCIeUncorrectable and
// NICKernelLogPCIeCorrected stay silent for it): the counters see every
// error, while the kernel rate-limits its AER lines.
{
  prometheusAlerts+:: {
    groups+: [
      {
        name: 'nic-pcie-aer',
        rules: [
          {
            alert: 'NICPCIeAERUncorrectable',
            expr: 'label_replace(increase(nic_pcie_aer_errors_total{severity=~"fatal|nonfatal", %(nicExporterSelector)s}[15m]), "aer_severity", "$1", "severity", "(.+)") > 0' % $._config,
            'for': '0m',
            labels: {
              severity: 'warning',
            },
            annotations: {
              description: 'The PCI function {{ $labels.pci_address }} behind {{ $labels.device }} on {{ $labels.instance }} reported {{ $value | printf "%.0f" }} uncorrectable {{ $labels.aer_severity }} PCIe errors in 15 minutes: a transaction was lost (nonfatal) or the link had to be reset (fatal); traffic on the function stalled or failed while the kernel recovered it.',
              summary: 'PCIe AER {{ $labels.aer_severity }} errors on {{ $labels.instance }} {{ $labels.device }} ({{ $labels.pci_address }})',
            },
          },
          {
            alert: 'NICPCIeAERCorrectableHigh',
            expr: 'increase(nic_pcie_aer_errors_total{severity="correctable", %(nicExporterSelector)s}[1h]) > %(pcieAERCorrectableErrors)s' % $._config,
            'for': '0m',
            labels: {
              severity: 'warning',
            },
            annotations: {
              description: 'The PCI function {{ $labels.pci_address }} behind {{ $labels.device }} on {{ $labels.instance }} reported {{ $value | printf "%.0f" }} correctable PCIe errors in an hour (threshold ' + $._config.pcieAERCorrectableErrors + '): the link keeps replaying packets, a sign of a marginal slot, riser or card that precedes uncorrectable errors.',
              summary: 'PCIe AER correctable errors high on {{ $labels.instance }} {{ $labels.device }} ({{ $labels.pci_address }})',
            },
          },
        ],
      },
    ],
  },
}
