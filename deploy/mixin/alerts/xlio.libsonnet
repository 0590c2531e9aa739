local utils = import '../lib/utils.libsonnet';

// The alerts the nic-vma group has, for libxlio applications (nic_xlio_*,
// the same metric model), with the same thresholds: one setting of
// config.libsonnet tunes VMA and XLIO alike.
{
  prometheusAlerts+:: {
    groups+: [
      {
        name: 'nic-xlio',
        rules: [
          {
            alert: 'NICXLIONoBuffers',
            expr: 'increase(nic_xlio_buffer_pool_no_buffers_total{%(nicExporterSelector)s}[10m]) > 0' % $._config,
            'for': '0m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'XLIO {{ $labels.kind }} buffer pool {{ $labels.pool }} empty in {{ $labels.comm }} (pid {{ $labels.pid }}) on {{ $labels.instance }}',
              description: 'The {{ $labels.kind }} buffer pool {{ $labels.pool }} of the XLIO application {{ $labels.comm }} (pid {{ $labels.pid }}, libxlio {{ $labels.version }}) on {{ $labels.instance }} could not serve {{ $value | printf "%.0f" }} requests in 10 minutes: packets are dropped. Usually the locked-memory limit (ulimit -l) is too low for XLIO\'s buffers.',
            },
          },
          {
            alert: 'NICXLIOOSFallback',
            expr: '(sum by (job, instance, pid, comm) (rate(nic_xlio_socket_packets_total{path="os", %(nicExporterSelector)s}[5m])) > %(vmaOSFallbackRate)s) and on (job, instance, pid, comm) (sum by (job, instance, pid, comm) (nic_xlio_sockets{offloaded="false", protocol=~"tcp|udp", %(nicExporterSelector)s}) > 0)' % $._config,
            'for': $._config.vmaOSFallbackFor,
            labels: { severity: 'warning' },
            annotations: {
              summary: 'XLIO traffic falling back to the kernel in {{ $labels.comm }} (pid {{ $labels.pid }}) on {{ $labels.instance }}',
              description: 'The XLIO application {{ $labels.comm }} (pid {{ $labels.pid }}) on {{ $labels.instance }} has TCP or UDP sockets that are not offloaded and has sent or received {{ $value | printf "%.0f" }} packets per second through the kernel for ' + utils.humanizeDuration($._config.vmaOSFallbackFor) + ': it runs without kernel bypass on those sockets.',
            },
          },
          {
            alert: 'NICXLIODrops',
            expr: |||
              label_replace(sum by (job, instance, pid, comm) (rate(nic_xlio_cq_rx_dropped_packets_total{%(nicExporterSelector)s}[5m])) > %(vmaDropsRate)s, "queue", "completion queue", "", "")
              or label_replace(sum by (job, instance, pid, comm) (rate(nic_xlio_socket_rx_ready_queue_dropped_packets_total{%(nicExporterSelector)s}[5m])) > %(vmaDropsRate)s, "queue", "socket ready queue", "", "")
            ||| % $._config,
            'for': $._config.vmaDropsFor,
            labels: { severity: 'warning' },
            annotations: {
              summary: 'XLIO {{ $labels.queue }} drops in {{ $labels.comm }} (pid {{ $labels.pid }}) on {{ $labels.instance }}',
              description: 'The XLIO application {{ $labels.comm }} (pid {{ $labels.pid }}) on {{ $labels.instance }} has dropped {{ $value | printf "%.0f" }} received packets per second in its {{ $labels.queue }} for ' + utils.humanizeDuration($._config.vmaDropsFor) + ': the application does not read fast enough or its queues are too small.',
            },
          },
          {
            alert: 'NICXLIOStatsStale',
            expr: 'nic_xlio_reader_handshake{%(nicExporterSelector)s} == 0' % $._config,
            'for': $._config.vmaStatsStaleFor,
            labels: { severity: 'warning' },
            annotations: {
              summary: 'XLIO statistics of {{ $labels.comm }} (pid {{ $labels.pid }}) are not refreshed on {{ $labels.instance }}',
              description: 'nic_exporter on {{ $labels.instance }} does not increment reader_counter in the statistics file of {{ $labels.comm }} (pid {{ $labels.pid }}) (no write access, or --no-collector.xlio.handshake), so libxlio copies no fresh counters into it: the XLIO series of this process are frozen.',
            },
          },
          {
            alert: 'NICXLIOStatsFilesRejected',
            expr: 'nic_xlio_files{state=~"unsupported|refused|error", %(nicExporterSelector)s} > 0' % $._config,
            'for': $._config.vmaStatsFilesRejectedFor,
            labels: { severity: 'warning' },
            annotations: {
              summary: '{{ $value | printf "%.0f" }} XLIO statistics files {{ $labels.state }} on {{ $labels.instance }}',
              description: 'nic_exporter on {{ $labels.instance }} has found {{ $value | printf "%.0f" }} libxlio statistics files it does not read (state {{ $labels.state }}) for ' + utils.humanizeDuration($._config.vmaStatsFilesRejectedFor) + ': a libxlio release or build whose layout is not known, a file that failed the ownership and mapping checks, or a read error. The exporter log names each file and the reason.',
            },
          },
        ],
      },
    ],
  },
}
