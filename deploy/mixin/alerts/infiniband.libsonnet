local utils = import '../lib/utils.libsonnet';

{
  prometheusAlerts+:: {
    groups+: [
      {
        name: 'nic-infiniband',
        rules: [
          {
            alert: 'NICInfiniBandPortNotLinkUp',
            expr: 'nic_infiniband_port_phys_state{%(nicExporterSelector)s} != 5 and on (job, instance, device, port) nic_infiniband_port_info{link_layer="InfiniBand", %(nicExporterSelector)s} == 1' % $._config,
            'for': $._config.ibPortNotLinkUpFor,
            labels: { severity: 'warning' },
            annotations: {
              summary: 'InfiniBand port {{ $labels.device }} port {{ $labels.port }} not LinkUp on {{ $labels.instance }}',
              description: 'Port {{ $labels.port }} of {{ $labels.device }} on {{ $labels.instance }} has been in physical state {{ if eq $value 1.0 }}Sleep: the port is powered down; enable it{{ else if eq $value 2.0 }}Polling: no link partner; check the cable and the switch port{{ else if eq $value 3.0 }}Disabled: the port is disabled; enable it{{ else if eq $value 4.0 }}PortConfigurationTraining: training does not complete; check that adapter and switch are compatible (speed, width, firmware){{ else if eq $value 6.0 }}LinkErrorRecovery: the link keeps retraining after errors; replace the cable{{ else if eq $value 7.0 }}PhyTest: the port is in a physical test mode{{ else }}{{ $value }}{{ end }} instead of LinkUp for ' + utils.humanizeDuration($._config.ibPortNotLinkUpFor) + '.',
            },
          },
          {
            alert: 'NICInfiniBandPortNotActive',
            expr: 'nic_infiniband_port_state{%(nicExporterSelector)s} != 4 and on (job, instance, device, port) nic_infiniband_port_phys_state{%(nicExporterSelector)s} == 5 and on (job, instance, device, port) nic_infiniband_port_info{link_layer="InfiniBand", %(nicExporterSelector)s} == 1' % $._config,
            'for': $._config.ibPortNotActiveFor,
            labels: { severity: 'warning' },
            annotations: {
              summary: 'InfiniBand port {{ $labels.device }} port {{ $labels.port }} LinkUp but not Active on {{ $labels.instance }}',
              description: 'Port {{ $labels.port }} of {{ $labels.device }} on {{ $labels.instance }} has a physical link but logical state {{ if eq $value 1.0 }}Down{{ else if eq $value 2.0 }}Initializing{{ else if eq $value 3.0 }}Armed{{ else }}{{ $value }}{{ end }} for ' + utils.humanizeDuration($._config.ibPortNotActiveFor) + ': no subnet manager has activated it.',
            },
          },
          {
            alert: 'NICInfiniBandSymbolErrors',
            expr: 'increase(nic_infiniband_port_symbol_error_total{%(nicExporterSelector)s}[10m]) > %(ibSymbolErrors)s' % $._config,
            'for': '0m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'Symbol errors on {{ $labels.device }} port {{ $labels.port }} on {{ $labels.instance }}',
              description: 'Port {{ $labels.port }} of {{ $labels.device }} on {{ $labels.instance }} counted {{ $value | printf "%.0f" }} symbol errors in 10 minutes: a bad cable, transceiver or connector.',
            },
          },
          {
            alert: 'NICInfiniBandLinkDowned',
            expr: utils.counterRose('nic_infiniband_port_link_downed_total{%(nicExporterSelector)s}' % $._config, '15m', 0),
            'for': '0m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'InfiniBand link went down on {{ $labels.device }} port {{ $labels.port }} on {{ $labels.instance }}',
              description: 'Link error recovery failed and the link of port {{ $labels.port }} of {{ $labels.device }} on {{ $labels.instance }} went down in the last 15 minutes; RDMA connections through it were reset.',
            },
          },
          {
            alert: 'NICInfiniBandCounterSaturated',
            expr: 'nic_infiniband_port_counters_saturated{%(nicExporterSelector)s} == 1' % $._config,
            'for': $._config.ibCounterSaturatedFor,
            labels: { severity: 'warning' },
            annotations: {
              summary: 'InfiniBand counter {{ $labels.counter }} saturated on {{ $labels.device }} port {{ $labels.port }} on {{ $labels.instance }}',
              description: 'The {{ $labels.counter }} counter of port {{ $labels.port }} of {{ $labels.device }} on {{ $labels.instance }} has been stuck at the maximum of its width for ' + utils.humanizeDuration($._config.ibCounterSaturatedFor) + ': it no longer counts, so its rate and the alerts on it read 0 whatever happens. Reset the port counters.',
            },
          },
          {
            alert: 'NICInfiniBandRNRRetriesExceeded',
            expr: 'increase(nic_infiniband_hw_req_rnr_retries_exceeded_total{%(nicExporterSelector)s}[10m]) > 0 or increase(nic_infiniband_hw_retry_rnr_exceeded_err_total{%(nicExporterSelector)s}[10m]) > 0' % $._config,
            'for': '0m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'RDMA RNR retries exceeded on {{ $labels.device }} on {{ $labels.instance }}',
              description: 'Queue pairs on {{ $labels.device }} port {{ $labels.port }} on {{ $labels.instance }} failed with IBV_WC_RNR_RETRY_EXC_ERR in the last 10 minutes: a receiver does not post receive buffers fast enough.',
            },
          },
          {
            alert: 'NICInfiniBandTransportRetriesExceeded',
            expr: 'increase(nic_infiniband_hw_req_transport_retries_exceeded_total{%(nicExporterSelector)s}[10m]) > 0 or increase(nic_infiniband_hw_retry_exceeded_err_total{%(nicExporterSelector)s}[10m]) > 0' % $._config,
            'for': '0m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'RDMA transport retries exceeded on {{ $labels.device }} on {{ $labels.instance }}',
              description: 'Queue pairs on {{ $labels.device }} port {{ $labels.port }} on {{ $labels.instance }} failed with IBV_WC_RETRY_EXC_ERR (ACK timeouts until the retry count ran out) in the last 10 minutes: an unreachable peer, a flapping link or packet loss.',
            },
          },
          {
            // RoCE congestion (DCQCN), as a share of the port's packets:
            // rx, RoCE packets that reached this port with ECN CE set by
            // a switch (np_ecn_marked_roce_packets, the notification
            // point), per million packets received; tx, congestion
            // notification packets that slowed this port's sending
            // (rp_cnp_handled, the reaction point), per million packets
            // sent. The mlx5 cong_cnts (drivers/infiniband/hw/mlx5/
            // counters.c, firmware QUERY_CONG_STATISTICS) and the port's
            // PMA packet counters (64-bit vport counters on RoCE ports)
            // share the labels device and port. A port below
            // roceMinPacketRate is not judged: an idle port's few packets
            // make any share.
            alert: 'NICRoCECongestion',
            expr: |||
              label_replace(1e6 * rate(nic_infiniband_hw_np_ecn_marked_roce_packets_total{%(nicExporterSelector)s}[5m]) / on (job, instance, device, port) (rate(nic_infiniband_port_rcv_packets_total{%(nicExporterSelector)s}[5m]) > %(roceMinPacketRate)s) > %(roceCongestionPerMillion)s, "direction", "rx", "", "")
              or
              label_replace(1e6 * rate(nic_infiniband_hw_rp_cnp_handled_total{%(nicExporterSelector)s}[5m]) / on (job, instance, device, port) (rate(nic_infiniband_port_xmit_packets_total{%(nicExporterSelector)s}[5m]) > %(roceMinPacketRate)s) > %(roceCongestionPerMillion)s, "direction", "tx", "", "")
            ||| % $._config,
            'for': $._config.roceCongestionFor,
            labels: { severity: 'warning' },
            annotations: {
              summary: 'RoCE congestion on {{ $labels.device }} port {{ $labels.port }} on {{ $labels.instance }}',
              description: '{{ if eq $labels.direction "rx" }}{{ $value | printf "%.0f" }} of every million RoCE packets that port {{ $labels.port }} of {{ $labels.device }} on {{ $labels.instance }} received carried an ECN congestion mark (np_ecn_marked_roce_packets) for ' + utils.humanizeDuration($._config.roceCongestionFor) + ': a switch queue towards this host stays above its ECN threshold (many senders to one receiver, or a slow receiver). Check the switch ECN and PFC configuration of the RoCE priority and whether this host drains its receive side.{{ else }}Port {{ $labels.port }} of {{ $labels.device }} on {{ $labels.instance }} handled {{ $value | printf "%.0f" }} congestion notification packets per million packets sent (rp_cnp_handled) for ' + utils.humanizeDuration($._config.roceCongestionFor) + ': DCQCN keeps slowing its senders because the switch queues on the way to its peers stay full. Check the switch ECN and PFC configuration of the RoCE priority and the receivers this host sends to (a slow receiver, a pause storm from a stuck host).{{ end }}',
            },
          },
          {
            // RDMA transport retransmissions, as a share of the port's
            // packets: tx, the requester's go-back-N events (an ACK
            // timeout, a NAK sequence error, an implied NAK: mlx5
            // retrans_q_cnts, which a device has all together or not at
            // all) per million packets sent; rx, out-of-sequence packets
            // the responder received (out_of_seq_q_cnts) per million
            // packets received. roce_adp_retrans is left out: it exists
            // only with RoCE adaptive retransmission, and whether its
            // events are also counted as ACK timeouts is not documented,
            // so adding it could count a loss twice. On a lossless fabric
            // each event is a lost packet.
            alert: 'NICRDMARetransmissions',
            expr: |||
              label_replace(1e6 * (rate(nic_infiniband_hw_local_ack_timeout_err_total{%(nicExporterSelector)s}[5m]) + rate(nic_infiniband_hw_packet_seq_err_total{%(nicExporterSelector)s}[5m]) + rate(nic_infiniband_hw_implied_nak_seq_err_total{%(nicExporterSelector)s}[5m])) / on (job, instance, device, port) (rate(nic_infiniband_port_xmit_packets_total{%(nicExporterSelector)s}[5m]) > %(roceMinPacketRate)s) > %(rdmaRetransmitPerMillion)s, "direction", "tx", "", "")
              or
              label_replace(1e6 * rate(nic_infiniband_hw_out_of_sequence_total{%(nicExporterSelector)s}[5m]) / on (job, instance, device, port) (rate(nic_infiniband_port_rcv_packets_total{%(nicExporterSelector)s}[5m]) > %(roceMinPacketRate)s) > %(rdmaRetransmitPerMillion)s, "direction", "rx", "", "")
            ||| % $._config,
            'for': $._config.rdmaRetransmitFor,
            labels: { severity: 'warning' },
            annotations: {
              summary: 'RDMA retransmissions on {{ $labels.device }} port {{ $labels.port }} on {{ $labels.instance }}',
              description: '{{ if eq $labels.direction "tx" }}Queue pairs on port {{ $labels.port }} of {{ $labels.device }} on {{ $labels.instance }} went back and resent {{ $value | printf "%.1f" }} times per million packets sent (local_ack_timeout_err, packet_seq_err, implied_nak_seq_err) for ' + utils.humanizeDuration($._config.rdmaRetransmitFor) + ': packets to their peers are lost.{{ else }}Port {{ $labels.port }} of {{ $labels.device }} on {{ $labels.instance }} received {{ $value | printf "%.1f" }} out-of-sequence RDMA packets per million (out_of_sequence) for ' + utils.humanizeDuration($._config.rdmaRetransmitFor) + ': packets from its peers are lost on the way.{{ end }} A lossless fabric should lose none: check PFC on the RDMA priority, switch drops and the links on the path.',
            },
          },
          {
            // Receiver not ready: RNR NAKs this port's requesters received
            // (mlx5 rnr_nak_retry_err, retrans_q_cnts) per million packets
            // sent. Each NAK stalls the queue pair for the peer's RNR
            // timer before it resends; with rnr_retry 7 (retry forever)
            // the queue pair never fails, so
            // NICInfiniBandRNRRetriesExceeded never fires and this is the
            // only sign of a receiver that does not post receive buffers.
            alert: 'NICRDMAReceiverNotReady',
            expr: '1e6 * rate(nic_infiniband_hw_rnr_nak_retry_err_total{%(nicExporterSelector)s}[5m]) / on (job, instance, device, port) (rate(nic_infiniband_port_xmit_packets_total{%(nicExporterSelector)s}[5m]) > %(roceMinPacketRate)s) > %(rdmaRNRNakPerMillion)s' % $._config,
            'for': $._config.rdmaRNRNakFor,
            labels: { severity: 'warning' },
            annotations: {
              summary: 'RDMA receiver not ready for {{ $labels.device }} port {{ $labels.port }} on {{ $labels.instance }}',
              description: 'Queue pairs on port {{ $labels.port }} of {{ $labels.device }} on {{ $labels.instance }} received {{ $value | printf "%.0f" }} RNR NAKs per million packets sent (rnr_nak_retry_err) for ' + utils.humanizeDuration($._config.rdmaRNRNakFor) + ': a receiving application on a peer does not post receive buffers fast enough, and each NAK stalls the queue pair for its RNR timer. Find the slow application on the peers.',
            },
          },
          {
            alert: 'NICInfiniBandRemoteAccessErrors',
            expr: 'increase(nic_infiniband_hw_req_remote_access_errors_total{%(nicExporterSelector)s}[10m]) > 0' % $._config,
            'for': '0m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'RDMA remote access errors on {{ $labels.device }} on {{ $labels.instance }}',
              description: 'Requests from {{ $labels.device }} port {{ $labels.port }} on {{ $labels.instance }} were rejected by the remote side with a remote access error (IBV_WC_REM_ACCESS_ERR) {{ $value | printf "%.0f" }} times in 10 minutes: wrong rkey, address outside the memory region or missing access rights.',
            },
          },
        ],
      },
    ],
  },
}
