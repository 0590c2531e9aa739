local utils = import '../lib/utils.libsonnet';

// devlink health reporters (mlx5: fw, fw_fatal, vnic per device; tx, rx
// per port). A reporter's state is read with min_over_time so an error
// that the driver recovered between two scrapes still counts (the
// exporter sees it through devlink's notifications), and the function
// drops the metric name so both branches of "or" have the same labels.
{
  prometheusAlerts+:: {
    groups+: [
      {
        name: 'nic-devlink',
        rules: [
          {
            alert: 'NICDevlinkFwFatalError',
            expr: 'min_over_time(nic_devlink_health_reporter_healthy{reporter="fw_fatal", %(nicExporterSelector)s}[5m]) == 0 or increase(nic_devlink_health_reporter_errors_total{reporter="fw_fatal", %(nicExporterSelector)s}[10m]) > 0' % $._config,
            'for': '0m',
            // pci_address (the device without its "pci/" bus prefix) lets
            // Alertmanager's inhibit rules match the kernel log alerts of
            // the same function, whose device label is the PCI address.
            labels: { severity: $._config.pageSeverity, pci_address: '{{ reReplaceAll "^pci/" "" $labels.device }}' },
            annotations: {
              summary: 'Fatal firmware error on {{ $labels.device }} on {{ $labels.instance }}',
              description: 'The devlink fw_fatal health reporter of {{ $labels.device }} on {{ $labels.instance }} {{ if eq $value 0.0 }}has been in error{{ else }}counted {{ $value | printf "%.0f" }} errors{{ end }} in the last minutes: the adapter\'s firmware hit a fatal error. If the reporter stays in error the card needs a cold reboot; collect the devlink evidence first and open a support case.',
            },
          },
          {
            alert: 'NICDevlinkFwError',
            expr: 'min_over_time(nic_devlink_health_reporter_healthy{reporter="fw", %(nicExporterSelector)s}[5m]) == 0 or increase(nic_devlink_health_reporter_errors_total{reporter="fw", %(nicExporterSelector)s}[10m]) > 0' % $._config,
            'for': '0m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'Firmware error on {{ $labels.device }} on {{ $labels.instance }}',
              description: 'The devlink fw health reporter of {{ $labels.device }} on {{ $labels.instance }} {{ if eq $value 0.0 }}has been in error{{ else }}counted {{ $value | printf "%.0f" }} errors{{ end }} in the last minutes: the firmware reported a syndrome. Check the kernel log and plan a firmware update.',
            },
          },
          {
            alert: 'NICDevlinkVnicError',
            expr: 'min_over_time(nic_devlink_health_reporter_healthy{reporter="vnic", %(nicExporterSelector)s}[5m]) == 0 or increase(nic_devlink_health_reporter_errors_total{reporter="vnic", %(nicExporterSelector)s}[10m]) > 0' % $._config,
            'for': '0m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'VF error (vnic reporter) on {{ $labels.device }} on {{ $labels.instance }}',
              description: 'The devlink vnic health reporter of {{ $labels.device }} on {{ $labels.instance }} {{ if eq $value 0.0 }}has been in error{{ else }}counted {{ $value | printf "%.0f" }} errors{{ end }} in the last minutes: a virtual function misbehaves. Check the SR-IOV configuration and the VF\'s driver.',
            },
          },
          {
            alert: 'NICDevlinkTxRxErrors',
            expr: 'increase(nic_devlink_health_reporter_errors_total{reporter=~"tx|rx", %(nicExporterSelector)s}[15m]) > %(devlinkTxRxErrors)s' % $._config,
            'for': '0m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'Repeated {{ $labels.reporter }} queue errors on {{ $labels.device }} {{ $labels.netdev }} on {{ $labels.instance }}',
              description: 'The devlink {{ $labels.reporter }} health reporter of {{ $labels.netdev }} ({{ $labels.device }}) on {{ $labels.instance }} counted {{ $value | printf "%.0f" }} queue errors or timeouts in 15 minutes; mlx5e recovers each, but a steady rate means packet loss and latency spikes.',
            },
          },
          {
            alert: 'NICDevlinkReporterStuck',
            expr: 'nic_devlink_health_reporter_healthy{%(nicExporterSelector)s} == 0' % $._config,
            'for': $._config.devlinkReporterStuckFor,
            labels: { severity: 'warning' },
            annotations: {
              summary: 'devlink {{ $labels.reporter }} reporter stuck in error on {{ $labels.device }} on {{ $labels.instance }}',
              description: 'The devlink {{ $labels.reporter }} health reporter of {{ $labels.device }}{{ if $labels.netdev }} ({{ $labels.netdev }}){{ end }} on {{ $labels.instance }} has been in error for ' + utils.humanizeDuration($._config.devlinkReporterStuckFor) + ': it did not recover by itself (no recover operation, auto-recover off, or recovery failing).',
            },
          },
          {
            alert: 'NICDevlinkEvidenceCaptured',
            expr: 'increase(nic_devlink_health_captures_total{%(nicExporterSelector)s}[15m]) > 0' % $._config,
            'for': '0m',
            labels: { severity: 'info' },
            annotations: {
              summary: 'devlink evidence captured for {{ $labels.reporter }} on {{ $labels.device }} on {{ $labels.instance }}',
              description: 'nic_exporter on {{ $labels.instance }} wrote the attributes, diagnose output and dump of the {{ $labels.reporter }} reporter of {{ $labels.device }} to its capture directory when it went to error. Attach the file to the support case before the device is reset.',
            },
          },
        ],
      },
    ],
  },
}
