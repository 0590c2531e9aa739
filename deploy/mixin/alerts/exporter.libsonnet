local utils = import '../lib/utils.libsonnet';

{
  prometheusAlerts+:: {
    groups+: [
      {
        name: 'nic-exporter',
        rules: [
          {
            alert: 'NICExporterDown',
            expr: 'up{%(nicExporterSelector)s} == 0' % $._config,
            'for': $._config.exporterDownFor,
            labels: { severity: 'warning' },
            annotations: {
              summary: 'nic_exporter on {{ $labels.instance }} is not scraped',
              description: 'Prometheus job {{ $labels.job }} could not scrape {{ $labels.instance }} for ' + utils.humanizeDuration($._config.exporterDownFor) + '. No NIC on this host is monitored: firmware errors, link loss and ENA resets go unseen.',
            },
          },
          {
            alert: 'NICExporterCollectorDown',
            expr: 'nic_exporter_collector_up{%(nicExporterSelector)s} == 0' % $._config,
            'for': $._config.collectorDownFor,
            labels: { severity: 'warning' },
            annotations: {
              summary: 'nic_exporter collector {{ $labels.collector }} failing on {{ $labels.instance }}',
              description: 'Every poll of the {{ $labels.collector }} collector on {{ $labels.instance }} has failed or timed out for ' + utils.humanizeDuration($._config.collectorDownFor) + '; its series are the last good snapshot and may be stale.',
            },
          },
          {
            alert: 'NICExporterDevicesMissing',
            expr: 'nic_exporter_collector_devices{%(nicExporterSelector)s} < max_over_time(nic_exporter_collector_devices{%(nicExporterSelector)s}[%(devicesMissingWindow)s])' % $._config,
            'for': $._config.devicesMissingFor,
            labels: { severity: 'warning' },
            annotations: {
              summary: '{{ $labels.collector }} devices disappeared on {{ $labels.instance }}',
              description: 'The {{ $labels.collector }} collector on {{ $labels.instance }} finds {{ $value }} devices, fewer than in the last ' + utils.humanizeDuration($._config.devicesMissingWindow) + ', for ' + utils.humanizeDuration($._config.devicesMissingFor) + '. A NIC, port or VMA process that was there is gone (driver unload, failed firmware reset, PCIe link lost).',
            },
          },
        ],
      },
    ],
  },
}
