{
  prometheusAlerts+:: {
    groups+: [
      {
        name: 'nic-physical-layer',
        rules: [
          {
            alert: 'NICTransceiverRxPowerLow',
            expr: |||
              nic_transceiver_rx_power_watts{%(nicExporterSelector)s}
                < on (job, instance, device) group_left ()
              nic_transceiver_rx_power_threshold_watts{level="low_warning", %(nicExporterSelector)s}
            ||| % $._config,
            'for': '0m',
            labels: {
              severity: 'warning',
            },
            annotations: {
              description: 'Lane {{ $labels.lane }} of the module in {{ $labels.device }} on {{ $labels.instance }} receives {{ $value | printf "%.2e" }} W, below the low-warning threshold the module itself advertises: dirty or damaged fiber, a bad patch, a failing far-end transmitter. Errors and a flap follow if it keeps sinking.',
              summary: 'Optic receive power below its warning threshold on {{ $labels.instance }} {{ $labels.device }} lane {{ $labels.lane }}',
            },
          },
          {
            alert: 'NICTransceiverRxPowerLowAlarm',
            expr: |||
              nic_transceiver_rx_power_watts{%(nicExporterSelector)s}
                < on (job, instance, device) group_left ()
              nic_transceiver_rx_power_threshold_watts{level="low_alarm", %(nicExporterSelector)s}
            ||| % $._config,
            'for': '0m',
            labels: {
              severity: 'warning',
            },
            annotations: {
              description: 'Lane {{ $labels.lane }} of the module in {{ $labels.device }} on {{ $labels.instance }} receives {{ $value | printf "%.2e" }} W, below the low-alarm threshold the module advertises: the receiver is at the edge of its sensitivity; expect FEC to fail and the link to flap.',
              summary: 'Optic receive power below its alarm threshold on {{ $labels.instance }} {{ $labels.device }} lane {{ $labels.lane }}',
            },
          },
          {
            alert: 'NICTransceiverTemperatureHigh',
            expr: |||
              nic_transceiver_temperature_celsius{%(nicExporterSelector)s}
                > on (job, instance, device)
              nic_transceiver_temperature_threshold_celsius{level="high_warning", %(nicExporterSelector)s}
            ||| % $._config,
            'for': $._config.transceiverTemperatureFor,
            labels: {
              severity: 'warning',
            },
            annotations: {
              description: 'The module in {{ $labels.device }} on {{ $labels.instance }} is at {{ $value | printf "%.1f" }} C, above the high-warning temperature it advertises, for 5 minutes: airflow, a failed fan, a module drawing more power than the cage is rated for.',
              summary: 'Optic temperature above its warning threshold on {{ $labels.instance }} {{ $labels.device }}',
            },
          },
          {
            alert: 'NICPreFECBERHigh',
            expr: 'device:nic_phy_pre_fec_ber:rate5m{%(nicExporterSelector)s} > %(preFECBER)g' % $._config,
            'for': $._config.preFECBERFor,
            labels: {
              severity: 'warning',
            },
            annotations: {
              description: '{{ $labels.device }} on {{ $labels.instance }} corrects {{ $value | printf "%.2e" }} of its received bits (5-minute average), above ' + std.format('%g', $._config.preFECBER) + ' (the default, 2.4e-5, is a tenth of the 2.4e-4 at which RS(544,514) FEC stops guaranteeing error-free PAM4 links): the margin of the link is going.',
              summary: 'Pre-FEC bit error rate high on {{ $labels.instance }} {{ $labels.device }}',
            },
          },
          {
            alert: 'NICFECUncorrectableBlocks',
            expr: 'increase(nic_phy_fec_uncorrectable_blocks_total{%(nicExporterSelector)s}[10m]) > 0' % $._config,
            'for': '0m',
            labels: {
              severity: 'warning',
            },
            annotations: {
              description: '{{ $labels.device }} on {{ $labels.instance }} received {{ $value | printf "%.0f" }} FEC codewords in 10 minutes with more errors than the FEC can correct; each lost frames.',
              summary: 'Uncorrectable FEC blocks on {{ $labels.instance }} {{ $labels.device }}',
            },
          },
          {
            alert: 'NICLinkDownWithReason',
            expr: 'max_over_time(nic_phy_link_down_reason{%(nicExporterSelector)s}[10m]) == 1' % $._config,
            'for': '0m',
            labels: {
              severity: 'warning',
            },
            annotations: {
              description: 'The driver of {{ $labels.device }} on {{ $labels.instance }} reported the link down in the last 10 minutes for the reason {{ $labels.reason }} {{ $labels.substate }}.',
              summary: 'Link down ({{ $labels.reason }}) on {{ $labels.instance }} {{ $labels.device }}',
            },
          },
        ],
      },
    ],
  },
}
