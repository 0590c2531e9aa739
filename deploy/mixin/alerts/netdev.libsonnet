local utils = import '../lib/utils.libsonnet';

{
  prometheusAlerts+:: {
    groups+: [
      {
        name: 'nic-netdev',
        rules: [
          {
            alert: 'NICLinkDown',
            expr: 'nic_netdev_carrier{%(nicExporterSelector)s} == 0 and on (job, instance, device) nic_netdev_admin_up{%(nicExporterSelector)s} == 1' % $._config,
            'for': $._config.linkDownFor,
            labels: { severity: 'warning' },
            annotations: {
              summary: 'Link down on {{ $labels.instance }} {{ $labels.device }}',
              description: '{{ $labels.device }} on {{ $labels.instance }} is administratively up but has had no carrier for ' + utils.humanizeDuration($._config.linkDownFor) + '.',
            },
          },
          {
            alert: 'NICLinkFlapping',
            expr: utils.counterRose('nic_netdev_carrier_changes_total{%(nicExporterSelector)s}' % $._config, '10m', $._config.linkFlaps),
            'for': '0m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'Link flapping on {{ $labels.instance }} {{ $labels.device }}',
              description: '{{ $labels.device }} on {{ $labels.instance }} changed carrier {{ $value | printf "%.0f" }} times in 10 minutes (two or more down-up cycles).',
            },
          },
          {
            alert: 'NICPCIeLinkDegraded',
            expr: 'nic_pcie_link_degraded{%(nicExporterSelector)s} == 1' % $._config,
            'for': '0m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'PCIe link below capability on {{ $labels.instance }} {{ $labels.device }} ({{ $labels.pci_address }})',
              description: "The PCIe link of {{ $labels.pci_address }} behind {{ $labels.device }} on {{ $labels.instance }} trained below the device's maximum speed or width (LnkSta below LnkCap in lspci -vvv). Throughput is capped until the card is reseated or moved. The state only changes when the link retrains, so it fires at once.",
            },
          },
        ],
      },
    ],
  },
}
