local utils = import '../lib/utils.libsonnet';

{
  prometheusAlerts+:: {
    groups+: [
      {
        name: 'nic-ethtool-mlx5',
        rules: [
          {
            alert: 'NICRxOutOfBuffer',
            expr: 'rate(nic_ethtool_rx_out_of_buffer_total{%(nicExporterSelector)s}[5m]) > %(rxOutOfBufferRate)s' % $._config,
            'for': $._config.rxOutOfBufferFor,
            labels: { severity: 'warning' },
            annotations: {
              summary: 'Receive rings running dry on {{ $labels.device }} on {{ $labels.instance }}',
              description: '{{ $labels.device }} on {{ $labels.instance }} has dropped {{ $value | printf "%.0f" }} packets per second for ' + utils.humanizeDuration($._config.rxOutOfBufferFor) + ' because no receive buffer was posted (rx_out_of_buffer): the host does not drain the rings fast enough.',
            },
          },
          {
            // mlx5 PFC storm prevention: the port sent pause frames past
            // the device's timeout and stopped sending them. A host that
            // does not drain its receive side (a hung driver, a stuck
            // application with a lossless priority) pauses the switch
            // port, which backs pauses up into the fabric.
            alert: 'NICPFCPauseStorm',
            expr: utils.counterRose('nic_ethtool_tx_pause_storm_error_events_total{%(nicExporterSelector)s}' % $._config, '15m', '0'),
            'for': '0m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'PFC pause storm on {{ $labels.device }} on {{ $labels.instance }}',
              description: '{{ $labels.device }} on {{ $labels.instance }} sent pause frames so long that the device timed out and stopped sending them {{ $value | printf "%.0f" }} times in 15 minutes (tx_pause_storm_error_events, mlx5 storm prevention): the host cannot drain its receive side on a lossless priority, and its pauses back up into the fabric until prevention stops them. Packets may have been dropped meanwhile.',
            },
          },
          {
            alert: 'NICPhyDiscards',
            expr: |||
              label_replace(rate(nic_ethtool_rx_discards_phy_total{%(nicExporterSelector)s}[5m]) > %(phyDiscardsRate)s, "direction", "rx", "", "")
              or label_replace(rate(nic_ethtool_tx_discards_phy_total{%(nicExporterSelector)s}[5m]) > %(phyDiscardsRate)s, "direction", "tx", "", "")
              or label_replace(rate(nic_ethtool_in_discards_total{%(nicExporterSelector)s}[5m]) > %(phyDiscardsRate)s and on (job, instance, device) nic_ethtool_info{driver="mlx5_core", %(nicExporterSelector)s}, "direction", "rx", "", "")
              or label_replace(rate(nic_ethtool_out_discards_total{%(nicExporterSelector)s}[5m]) > %(phyDiscardsRate)s and on (job, instance, device) nic_ethtool_info{driver="mlx5_core", %(nicExporterSelector)s}, "direction", "tx", "", "")
            ||| % $._config,
            'for': $._config.phyDiscardsFor,
            labels: { severity: 'warning' },
            annotations: {
              summary: 'Port discards ({{ $labels.direction }}) on {{ $labels.device }} on {{ $labels.instance }}',
              description: 'The port of {{ $labels.device }} on {{ $labels.instance }} has discarded {{ $value | printf "%.0f" }} {{ $labels.direction }} packets per second for ' + utils.humanizeDuration($._config.phyDiscardsFor) + ' for lack of device buffer (congestion or host backpressure).',
            },
          },
          {
            alert: 'NICPhyErrors',
            expr: |||
              label_replace(increase(nic_ethtool_rx_crc_errors_phy_total{%(nicExporterSelector)s}[10m]) > %(phyErrors)s, "error", "CRC", "", "")
              or label_replace(increase(nic_ethtool_rx_symbol_err_phy_total{%(nicExporterSelector)s}[10m]) > %(phyErrors)s, "error", "symbol", "", "")
              or label_replace(increase(nic_ethtool_check_seq_err_total{%(nicExporterSelector)s}[10m]) > %(phyErrors)s and on (job, instance, device) nic_ethtool_info{driver="mlx5_core", %(nicExporterSelector)s}, "error", "CRC", "", "")
              or label_replace(increase(nic_ethtool_crc_align_errors_total{%(nicExporterSelector)s}[10m]) > %(phyErrors)s and on (job, instance, device) nic_ethtool_info{driver="mlx5_core", %(nicExporterSelector)s}, "error", "CRC", "", "")
              or label_replace(increase(nic_ethtool_symbol_err_total{%(nicExporterSelector)s}[10m]) > %(phyErrors)s and on (job, instance, device) nic_ethtool_info{driver="mlx5_core", %(nicExporterSelector)s}, "error", "symbol", "", "")
            ||| % $._config,
            'for': '0m',
            labels: { severity: 'warning' },
            annotations: {
              summary: '{{ $labels.error }} errors on {{ $labels.device }} on {{ $labels.instance }}',
              description: 'The port of {{ $labels.device }} on {{ $labels.instance }} received {{ $value | printf "%.0f" }} frames with {{ $labels.error }} errors in 10 minutes: a cable, transceiver or connector problem.',
            },
          },
          {
            alert: 'NICModuleEvent',
            expr: |||
              label_replace(increase(nic_ethtool_module_unplug_total{%(nicExporterSelector)s}[15m]) > 0, "event", "unplugged", "", "")
              or label_replace(increase(nic_ethtool_module_bus_stuck_total{%(nicExporterSelector)s}[15m]) > 0, "event", "I2C bus stuck", "", "")
              or label_replace(increase(nic_ethtool_module_high_temp_total{%(nicExporterSelector)s}[15m]) > 0, "event", "high temperature", "", "")
              or label_replace(increase(nic_ethtool_module_bad_shorted_total{%(nicExporterSelector)s}[15m]) > 0, "event", "bad or shorted", "", "")
            ||| % $._config,
            'for': '0m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'Transceiver module {{ $labels.event }} on {{ $labels.device }} on {{ $labels.instance }}',
              description: 'The transceiver module of {{ $labels.device }} on {{ $labels.instance }} reported "{{ $labels.event }}" in the last 15 minutes.',
            },
          },
        ],
      },
    ],
  },
}
