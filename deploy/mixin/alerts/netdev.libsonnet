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
          {
            alert: 'NICTemperatureHigh',
            expr: 'nic_hwmon_temperature_celsius{%(nicExporterSelector)s} >= on (job, instance, device, pci_address, chip, sensor) (nic_hwmon_temperature_critical_celsius{%(nicExporterSelector)s} - %(nicTemperatureMargin)s)' % $._config,
            'for': '10m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'NIC temperature high on {{ $labels.instance }} {{ $labels.device }} ({{ $labels.chip }} {{ $labels.sensor }})',
              description: 'Sensor {{ $labels.sensor }} of {{ $labels.chip }} behind {{ $labels.device }} ({{ $labels.pci_address }}) on {{ $labels.instance }} has read {{ $value | printf "%.1f" }} °C for 10 minutes, within ' + $._config.nicTemperatureMargin + ' °C of its critical threshold: airflow, a failed fan or a blocked slot; the card protects itself by shutting down above its limit.',
            },
          },
          {
            alert: 'NICTemperatureCritical',
            expr: 'nic_hwmon_temperature_celsius{%(nicExporterSelector)s} > on (job, instance, device, pci_address, chip, sensor) nic_hwmon_temperature_critical_celsius{%(nicExporterSelector)s}' % $._config,
            'for': '1m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'NIC at its critical temperature on {{ $labels.instance }} {{ $labels.device }} ({{ $labels.chip }} {{ $labels.sensor }})',
              description: 'Sensor {{ $labels.sensor }} of {{ $labels.chip }} behind {{ $labels.device }} ({{ $labels.pci_address }}) on {{ $labels.instance }} has read {{ $value | printf "%.1f" }} °C, above its critical threshold, for a minute: the firmware may shut the card down (ConnectX: 120 °C) and take the node off the network.',
            },
          },
        ],
      },
    ],
  },
}
