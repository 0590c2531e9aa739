local utils = import '../lib/utils.libsonnet';

{
  prometheusAlerts+:: {
    groups+: [
      {
        name: 'nic-vma',
        rules: [
          {
            alert: 'NICVMANoBuffers',
            expr: 'increase(nic_vma_buffer_pool_no_buffers_total{%(nicExporterSelector)s}[10m]) > 0' % $._config,
            'for': '0m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'VMA {{ $labels.pool }} buffer pool empty in {{ $labels.comm }} (pid {{ $labels.pid }}) on {{ $labels.instance }}',
              description: 'The {{ $labels.pool }} buffer pool of the VMA application {{ $labels.comm }} (pid {{ $labels.pid }}, libvma {{ $labels.version }}) on {{ $labels.instance }} could not serve {{ $value | printf "%.0f" }} requests in 10 minutes: packets are dropped. Usually the locked-memory limit (ulimit -l) is too low for VMA\'s buffers.',
            },
          },
          {
            alert: 'NICVMAOSFallback',
            expr: '(sum by (job, instance, pid, comm) (rate(nic_vma_socket_packets_total{path="os", %(nicExporterSelector)s}[5m])) > %(vmaOSFallbackRate)s) and on (job, instance, pid, comm) (sum by (job, instance, pid, comm) (nic_vma_sockets{offloaded="false", protocol=~"tcp|udp", %(nicExporterSelector)s}) > 0)' % $._config,
            'for': $._config.vmaOSFallbackFor,
            labels: { severity: 'warning' },
            annotations: {
              summary: 'VMA traffic falling back to the kernel in {{ $labels.comm }} (pid {{ $labels.pid }}) on {{ $labels.instance }}',
              description: 'The VMA application {{ $labels.comm }} (pid {{ $labels.pid }}) on {{ $labels.instance }} has TCP or UDP sockets that are not offloaded and has sent or received {{ $value | printf "%.0f" }} packets per second through the kernel for ' + utils.humanizeDuration($._config.vmaOSFallbackFor) + ': it runs without kernel bypass on those sockets.',
            },
          },
          {
            alert: 'NICVMADrops',
            expr: |||
              label_replace(sum by (job, instance, pid, comm) (rate(nic_vma_cq_rx_dropped_packets_total{%(nicExporterSelector)s}[5m])) > %(vmaDropsRate)s, "queue", "completion queue", "", "")
              or label_replace(sum by (job, instance, pid, comm) (rate(nic_vma_socket_rx_ready_queue_dropped_packets_total{%(nicExporterSelector)s}[5m])) > %(vmaDropsRate)s, "queue", "socket ready queue", "", "")
            ||| % $._config,
            'for': $._config.vmaDropsFor,
            labels: { severity: 'warning' },
            annotations: {
              summary: 'VMA {{ $labels.queue }} drops in {{ $labels.comm }} (pid {{ $labels.pid }}) on {{ $labels.instance }}',
              description: 'The VMA application {{ $labels.comm }} (pid {{ $labels.pid }}) on {{ $labels.instance }} has dropped {{ $value | printf "%.0f" }} received packets per second in its {{ $labels.queue }} for ' + utils.humanizeDuration($._config.vmaDropsFor) + ': the application does not read fast enough or its queues are too small.',
            },
          },
          {
            alert: 'NICVMAStatsStale',
            expr: 'nic_vma_reader_handshake{%(nicExporterSelector)s} == 0' % $._config,
            'for': $._config.vmaStatsStaleFor,
            labels: { severity: 'warning' },
            annotations: {
              summary: 'VMA statistics of {{ $labels.comm }} (pid {{ $labels.pid }}) are not refreshed on {{ $labels.instance }}',
              description: 'nic_exporter on {{ $labels.instance }} cannot increment reader_counter in the statistics file of {{ $labels.comm }} (pid {{ $labels.pid }}), so libvma stops copying counters into it: the VMA series of this process are stale.',
            },
          },
          {
            alert: 'NICVMAStatsFilesRejected',
            expr: 'nic_vma_files{state=~"unsupported|refused|error", %(nicExporterSelector)s} > 0' % $._config,
            'for': $._config.vmaStatsFilesRejectedFor,
            labels: { severity: 'warning' },
            annotations: {
              summary: '{{ $value | printf "%.0f" }} VMA statistics files {{ $labels.state }} on {{ $labels.instance }}',
              description: 'nic_exporter on {{ $labels.instance }} has found {{ $value | printf "%.0f" }} libvma statistics files it does not read (state {{ $labels.state }}) for ' + utils.humanizeDuration($._config.vmaStatsFilesRejectedFor) + ': an unsupported libvma version, a file that failed the ownership and mapping checks, or a read error. The exporter log names each file.',
            },
          },
        ],
      },
    ],
  },
}
