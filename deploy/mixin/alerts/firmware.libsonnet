local utils = import '../lib/utils.libsonnet';

{
  prometheusAlerts+:: {
    groups+: [
      {
        name: 'nic-firmware',
        rules: [
          {
            alert: 'NICFirmwareSkew',
            // The recording rule's expression, with the selector on the
            // raw series (see utils.firmwareVersions).
            expr: utils.firmwareVersions($._config) + ' > 1',
            'for': $._config.firmwareSkewFor,
            labels: { severity: 'warning' },
            annotations: {
              summary: 'Firmware skew: {{ $value | printf "%.0f" }} running firmware versions of board {{ $labels.board_id }} ({{ $labels.driver }}) in one pool',
              description: 'Devices of board {{ $labels.board_id }} ({{ $labels.driver }}) run {{ $value | printf "%.0f" }} different firmware versions within one pool (pool labels: ' + $._config.firmwarePoolLabels + ') for longer than a rollout takes. Mixed firmware makes a fleet behave unevenly (link training, congestion control, counters) and hides which version a problem belongs to.',
            },
          },
          {
            alert: 'NICFirmwareKnownBad',
            expr: 'device:nic_firmware_known_bad:info{%(nicExporterSelector)s}' % $._config,
            'for': '5m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'Known-bad firmware {{ $labels.firmware_running }} on {{ $labels.instance }} {{ $labels.device }}',
              description: '{{ $labels.device }} ({{ $labels.board_id }}, {{ $labels.driver }}) on {{ $labels.instance }} runs firmware {{ $labels.firmware_running }}, listed as known bad: {{ $labels.reason }}',
            },
          },
          {
            alert: 'NICDriverKnownBad',
            expr: 'device:nic_driver_known_bad:info{%(nicExporterSelector)s}' % $._config,
            'for': '5m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'Known-bad driver {{ $labels.driver }} {{ $labels.driver_version }} on {{ $labels.instance }} {{ $labels.device }}',
              description: '{{ $labels.device }} on {{ $labels.instance }} uses {{ $labels.driver }} {{ $labels.driver_version }}, listed as known bad: {{ $labels.reason }}',
            },
          },
        ],
      },
    ],
  },
}
