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
            // No target at all matches the selector: every other alert
            // is blind. absent() fires where the rules are evaluated, so
            // in a fleet each Prometheus (or each cluster's instance of
            // the mixin, with the cluster in nicExporterSelector) sees
            // its own gap; absent() carries the selector's equality
            // matchers (cluster="gpu-a") as labels, not its regexes.
            alert: 'NICExporterTargetsAbsent',
            expr: 'absent(up{%(nicExporterSelector)s})' % $._config,
            'for': $._config.targetsAbsentFor,
            labels: { severity: 'warning' },
            annotations: {
              summary: "No nic_exporter target matches the alerts' selector {%(nicExporterSelector)s}" % $._config,
              description: 'For ' + utils.humanizeDuration($._config.targetsAbsentFor) + ' no up series matched {%(nicExporterSelector)s}: the alerts and recording rules of nic_exporter see no host. Either nothing scrapes nic_exporter here, or its job label is not the one the rules select (a Helm nameOverride or a renamed scrape job).' % $._config,
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
