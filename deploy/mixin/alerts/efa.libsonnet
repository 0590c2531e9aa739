local utils = import '../lib/utils.libsonnet';

// AWS Elastic Fabric Adapter: the efa driver's hw_counters, which the
// infiniband collector exports as nic_infiniband_hw_*_total. Every
// selector keeps port!="0": drivers before the split into device and port
// statistics put the port counters in the device-level directory too
// (port="0"), with the same values.
{
  prometheusAlerts+:: {
    groups+: [
      {
        name: 'nic-efa',
        rules: [
          {
            alert: 'NICEFARetransmissions',
            expr: |||
              1e6 * rate(nic_infiniband_hw_retrans_pkts_total{%(nicExporterSelector)s, port!="0"}[10m])
                / on (job, instance, device, port) rate(nic_infiniband_hw_tx_pkts_total{%(nicExporterSelector)s, port!="0"}[10m])
                > %(efaRetransPerMillion)g
              and on (job, instance, device, port) rate(nic_infiniband_hw_tx_pkts_total{%(nicExporterSelector)s, port!="0"}[10m]) > %(efaMinPacketRate)g
            ||| % $._config,
            'for': $._config.efaRetransFor,
            labels: { severity: 'warning' },
            annotations: {
              summary: 'EFA SRD retransmissions high on {{ $labels.device }} on {{ $labels.instance }}',
              description: 'The SRD transport of the EFA device {{ $labels.device }} on {{ $labels.instance }} has retransmitted {{ $value | printf "%.0f" }} packets per million it sent over the last 10 minutes, for ' + utils.humanizeDuration($._config.efaRetransFor) + ': packets are lost between this host and its peers (a congested or faulty path, a slow or failing peer). Collective operations slow down before anything fails; compare with the other nodes of the job.',
            },
          },
          {
            alert: 'NICEFARxDrops',
            expr: |||
              1e6 * rate(nic_infiniband_hw_rx_drops_total{%(nicExporterSelector)s, port!="0"}[10m])
                / on (job, instance, device, port) rate(nic_infiniband_hw_rx_pkts_total{%(nicExporterSelector)s, port!="0"}[10m])
                > %(efaRxDropsPerMillion)g
              and on (job, instance, device, port) rate(nic_infiniband_hw_rx_pkts_total{%(nicExporterSelector)s, port!="0"}[10m]) > %(efaMinPacketRate)g
            ||| % $._config,
            'for': $._config.efaRxDropsFor,
            labels: { severity: 'warning' },
            annotations: {
              summary: 'EFA receive drops on {{ $labels.device }} on {{ $labels.instance }}',
              description: 'The EFA device {{ $labels.device }} on {{ $labels.instance }} has dropped {{ $value | printf "%.0f" }} received packets per million over the last 10 minutes, for ' + utils.humanizeDuration($._config.efaRxDropsFor) + ': this host does not take packets off the device as fast as they arrive (receive queues not replenished, an overloaded or stalled application), and its peers retransmit them.',
            },
          },
          {
            alert: 'NICEFARemoteUnresponsive',
            expr: utils.counterRose('nic_infiniband_hw_unresponsive_remote_events_total{%(nicExporterSelector)s, port!="0"}' % $._config, '15m', $._config.efaUnresponsiveRemoteEvents),
            'for': '0m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'EFA peers unresponsive to {{ $labels.device }} on {{ $labels.instance }}',
              description: 'The EFA device {{ $labels.device }} on {{ $labels.instance }} found a remote SRD peer unresponsive {{ $value | printf "%.0f" }} times in 15 minutes: a peer instance stopped, lost its network, or is blocked by a security group. Traffic to it fails once the device gives up; find which peers of the job are down.',
            },
          },
          {
            alert: 'NICEFARemoteConnectionImpaired',
            expr: utils.counterRose('nic_infiniband_hw_impaired_remote_conn_events_total{%(nicExporterSelector)s, port!="0"}' % $._config, '15m', $._config.efaImpairedRemoteConnEvents),
            'for': '0m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'EFA connections impaired on {{ $labels.device }} on {{ $labels.instance }}',
              description: 'SRD connections of the EFA device {{ $labels.device }} on {{ $labels.instance }} entered the impaired state {{ $value | printf "%.0f" }} times in 15 minutes, in which the device limits their throughput: the paths to some peers are lossy or a peer is slow. Expect the job to slow down on this host.',
            },
          },
          {
            alert: 'NICEFARDMAWorkRequestErrors',
            expr: |||
              label_replace(%(read)s, "op", "read", "", "")
              or label_replace(%(write)s, "op", "write", "", "")
            ||| % {
              read: utils.counterRose('nic_infiniband_hw_rdma_read_wr_err_total{%(nicExporterSelector)s, port!="0"}' % $._config, '15m', 0),
              write: utils.counterRose('nic_infiniband_hw_rdma_write_wr_err_total{%(nicExporterSelector)s, port!="0"}' % $._config, '15m', 0),
            },
            'for': '0m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'EFA RDMA {{ $labels.op }} errors on {{ $labels.device }} on {{ $labels.instance }}',
              description: '{{ $value | printf "%.0f" }} RDMA {{ $labels.op }} work requests on the EFA device {{ $labels.device }} on {{ $labels.instance }} completed with an error in 15 minutes: the application (NCCL through aws-ofi-nccl, libfabric) saw the failure, usually an unreachable or restarted peer or a deregistered memory region.',
            },
          },
        ],
      },
    ],
  },
}
