local utils = import '../lib/utils.libsonnet';

// The far end of each local InfiniBand port, as the opt-in fabric
// collector reads it over MADs: usually the switch port of the node's
// cable. Every series carries the local device and port and the far end's
// remote_guid, remote_node and remote_port, so each alert names both ends.
{
  prometheusAlerts+:: {
    groups+: [
      {
        name: 'nic-fabric',
        rules: [
          {
            alert: 'NICFabricRemoteSymbolErrors',
            expr: 'increase(nic_fabric_remote_port_symbol_error_total{%(nicExporterSelector)s}[10m]) > %(fabricSymbolErrors)s' % $._config,
            'for': '0m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'Symbol errors on the switch side of {{ $labels.device }} port {{ $labels.port }} ({{ $labels.remote_node }} port {{ $labels.remote_port }}) on {{ $labels.instance }}',
              description: 'Port {{ $labels.remote_port }} of {{ $labels.remote_node }} ({{ $labels.remote_guid }}), at the far end of the cable of {{ $labels.device }} port {{ $labels.port }} on {{ $labels.instance }}, counted {{ $value | printf "%.0f" }} symbol errors in 10 minutes: the cable, a transceiver or the switch port is bad, even if the host side counts none.',
            },
          },
          {
            alert: 'NICFabricRemoteLinkErrorRecovery',
            expr: utils.counterRose('nic_fabric_remote_port_link_error_recovery_total{%(nicExporterSelector)s}' % $._config, '15m', 0),
            'for': '0m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'Link error recovery on the switch side of {{ $labels.device }} port {{ $labels.port }} ({{ $labels.remote_node }} port {{ $labels.remote_port }}) on {{ $labels.instance }}',
              description: 'Port {{ $labels.remote_port }} of {{ $labels.remote_node }}, at the far end of {{ $labels.device }} port {{ $labels.port }} on {{ $labels.instance }}, went through link error recovery in the last 15 minutes: the link retrained after errors and traffic stalled meanwhile.',
            },
          },
          {
            alert: 'NICFabricRemoteLinkDowned',
            expr: utils.counterRose('nic_fabric_remote_port_link_downed_total{%(nicExporterSelector)s}' % $._config, '15m', 0),
            'for': '0m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'Link downed on the switch side of {{ $labels.device }} port {{ $labels.port }} ({{ $labels.remote_node }} port {{ $labels.remote_port }}) on {{ $labels.instance }}',
              description: 'Link error recovery failed on port {{ $labels.remote_port }} of {{ $labels.remote_node }}, at the far end of {{ $labels.device }} port {{ $labels.port }} on {{ $labels.instance }}, and the link went down in the last 15 minutes; RDMA connections through it were reset.',
            },
          },
          {
            alert: 'NICFabricRemoteRcvErrors',
            expr: 'increase(nic_fabric_remote_port_rcv_errors_total{%(nicExporterSelector)s}[10m]) > %(fabricRcvErrors)s' % $._config,
            'for': '0m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'Receive errors on the switch side of {{ $labels.device }} port {{ $labels.port }} ({{ $labels.remote_node }} port {{ $labels.remote_port }}) on {{ $labels.instance }}',
              description: 'Port {{ $labels.remote_port }} of {{ $labels.remote_node }} discarded {{ $value | printf "%.0f" }} packets with errors received from {{ $labels.device }} port {{ $labels.port }} on {{ $labels.instance }} in 10 minutes: what the host sends arrives damaged (cable, transceiver, or the host port).',
            },
          },
          {
            alert: 'NICFabricCongestion',
            expr: 'rate(nic_fabric_remote_port_xmit_wait_total{%(nicExporterSelector)s}[5m]) > %(fabricXmitWaitRate)s' % $._config,
            'for': $._config.fabricCongestionFor,
            labels: { severity: 'warning' },
            annotations: {
              summary: 'Congestion towards {{ $labels.device }} port {{ $labels.port }} at {{ $labels.remote_node }} port {{ $labels.remote_port }} on {{ $labels.instance }}',
              description: 'Port {{ $labels.remote_port }} of {{ $labels.remote_node }} has waited for flow-control credits to send to {{ $labels.device }} port {{ $labels.port }} on {{ $labels.instance }} at {{ $value | printf "%.0f" }} PortXmitWait ticks per second for ' + utils.humanizeDuration($._config.fabricCongestionFor) + ': the host does not drain its receive side fast enough, or the fabric is congested towards it.',
            },
          },
          {
            alert: 'NICFabricLinkEndsDisagree',
            // The far end's state with the remote labels, where exactly one
            // end of the cable is Active.
            expr: '(nic_fabric_remote_port_state{%(nicExporterSelector)s} != 4 and on (job, instance, device, port) nic_fabric_local_port_state{%(nicExporterSelector)s} == 4) or (nic_fabric_remote_port_state{%(nicExporterSelector)s} == 4 and on (job, instance, device, port) nic_fabric_local_port_state{%(nicExporterSelector)s} != 4)' % $._config,
            'for': $._config.fabricEndsDisagreeFor,
            labels: { severity: 'warning' },
            annotations: {
              summary: 'The two ends of the cable of {{ $labels.device }} port {{ $labels.port }} disagree ({{ $labels.remote_node }} port {{ $labels.remote_port }}) on {{ $labels.instance }}',
              description: 'For ' + utils.humanizeDuration($._config.fabricEndsDisagreeFor) + ' one end of the cable between {{ $labels.device }} port {{ $labels.port }} on {{ $labels.instance }} and port {{ $labels.remote_port }} of {{ $labels.remote_node }} has been Active and the other not (far end in state {{ if eq $value 1.0 }}Down{{ else if eq $value 2.0 }}Init{{ else if eq $value 3.0 }}Armed{{ else if eq $value 4.0 }}Active{{ else }}{{ $value }}{{ end }}): a half-configured link the subnet manager did not finish, or a port stuck in one state.',
            },
          },
        ],
      },
    ],
  },
}
