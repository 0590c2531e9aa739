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
