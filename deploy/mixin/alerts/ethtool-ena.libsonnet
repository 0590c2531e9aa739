local utils = import '../lib/utils.libsonnet';

{
  prometheusAlerts+:: {
    groups+: [
      {
        name: 'nic-ethtool-ena',
        rules: [
          {
            alert: 'NICENAWatchdogExpired',
            // 15 minutes, the window of NICKernelLogENAReset: the page
            // lasts as long as the kernel log warning of the same reset
            // that it inhibits (deploy/alertmanager/alertmanager.yml).
            expr: utils.counterRose('nic_ethtool_wd_expired_total{%(nicExporterSelector)s}' % $._config, '15m', 0),
            'for': '0m',
            labels: { severity: $._config.pageSeverity },
            annotations: {
              summary: 'ENA keep-alive watchdog reset {{ $labels.device }} on {{ $labels.instance }}',
              description: 'The ENA device behind {{ $labels.device }} on {{ $labels.instance }} missed its keep-alive events and the driver reset it ({{ $value | printf "%.0f" }} in 15 minutes). Traffic on the interface stopped during each reset; repeated resets mean the instance\'s network is failing.',
            },
          },
          {
            alert: 'NICENATxTimeout',
            expr: 'increase(nic_ethtool_tx_timeout_total{%(nicExporterSelector)s}[15m]) > 0' % $._config,
            'for': '0m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'ENA transmit timeout on {{ $labels.device }} on {{ $labels.instance }}',
              description: 'The kernel found a stuck transmit queue on {{ $labels.device }} on {{ $labels.instance }} and the ENA driver reset the device in the last 15 minutes.',
            },
          },
          {
            alert: 'NICENAAdminQueuePaused',
            expr: 'increase(nic_ethtool_admin_q_pause_total{%(nicExporterSelector)s}[15m]) > 0' % $._config,
            'for': '0m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'ENA admin queue paused on {{ $labels.device }} on {{ $labels.instance }}',
              description: 'The ENA driver found the admin queue of {{ $labels.device }} on {{ $labels.instance }} paused in the last 15 minutes: the device was busy or resetting and did not take commands.',
            },
          },
          {
            alert: 'NICENAResets',
            expr: |||
              (
                label_replace(increase(nic_ethtool_bad_tx_req_id_total{%(nicExporterSelector)s}[15m]) > 0, "cause", "bad_tx_req_id", "", "")
                or label_replace(increase(nic_ethtool_bad_rx_req_id_total{%(nicExporterSelector)s}[15m]) > 0, "cause", "bad_rx_req_id", "", "")
                or label_replace(increase(nic_ethtool_bad_rx_desc_num_total{%(nicExporterSelector)s}[15m]) > 0, "cause", "bad_rx_desc_num", "", "")
                or label_replace(increase(nic_ethtool_missing_intr_total{%(nicExporterSelector)s}[15m]) > 0, "cause", "missing_intr", "", "")
                or label_replace(increase(nic_ethtool_suspected_poll_starvation_total{%(nicExporterSelector)s}[15m]) > 0, "cause", "suspected_poll_starvation", "", "")
                or label_replace(increase(nic_ethtool_missing_tx_cmpl_total{%(nicExporterSelector)s}[15m]) > 0, "cause", "missing_tx_cmpl", "", "")
                or label_replace(increase(nic_ethtool_rx_desc_malformed_total{%(nicExporterSelector)s}[15m]) > 0, "cause", "rx_desc_malformed", "", "")
                or label_replace(increase(nic_ethtool_tx_desc_malformed_total{%(nicExporterSelector)s}[15m]) > 0, "cause", "tx_desc_malformed", "", "")
                or label_replace(increase(nic_ethtool_invalid_state_total{%(nicExporterSelector)s}[15m]) > 0, "cause", "invalid_state", "", "")
                or label_replace(increase(nic_ethtool_os_netdev_wd_total{%(nicExporterSelector)s}[15m]) > 0, "cause", "os_netdev_wd", "", "")
                or label_replace(increase(nic_ethtool_missing_admin_interrupt_total{%(nicExporterSelector)s}[15m]) > 0, "cause", "missing_admin_interrupt", "", "")
                or label_replace(increase(nic_ethtool_admin_to_total{%(nicExporterSelector)s}[15m]) > 0, "cause", "admin_to", "", "")
                or label_replace(increase(nic_ethtool_device_request_reset_total{%(nicExporterSelector)s}[15m]) > 0, "cause", "device_request_reset", "", "")
                or label_replace(increase(nic_ethtool_missing_first_intr_total{%(nicExporterSelector)s}[15m]) > 0, "cause", "missing_first_intr", "", "")
              ) and on (job, instance, device) nic_ethtool_info{driver="ena", %(nicExporterSelector)s}
            ||| % $._config,
            'for': '0m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'ENA resets ({{ $labels.cause }}) on {{ $labels.device }} on {{ $labels.instance }}',
              description: 'The ENA driver reset the device behind {{ $labels.device }} on {{ $labels.instance }} {{ $value | printf "%.0f" }} times in 15 minutes for the cause {{ $labels.cause }}; traffic on the interface stops during each reset.',
            },
          },
          {
            alert: 'NICENAMissingTxCompletions',
            expr: 'sum by (job, instance, device) (increase(nic_ethtool_queue_tx_missing_tx_comp_total{%(nicExporterSelector)s}[15m])) > 0 or sum by (job, instance, device) (increase(nic_ethtool_queue_tx_missed_tx_total{%(nicExporterSelector)s}[15m])) > 0' % $._config,
            'for': '0m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'ENA missing transmit completions on {{ $labels.device }} on {{ $labels.instance }}',
              description: 'The ENA driver found {{ $value | printf "%.0f" }} transmit completions missing on {{ $labels.device }} on {{ $labels.instance }} in 15 minutes; too many in a row make it reset the device.',
            },
          },
          {
            alert: 'NICENAAllocationFailures',
            expr: |||
              label_replace(sum by (job, instance, device) (increase(nic_ethtool_queue_rx_page_alloc_fail_total{%(nicExporterSelector)s}[15m])) > 0, "failure", "rx page allocation", "", "")
              or label_replace(sum by (job, instance, device) (increase(nic_ethtool_queue_rx_skb_alloc_fail_total{%(nicExporterSelector)s}[15m])) > 0, "failure", "rx socket buffer allocation", "", "")
              or label_replace(sum by (job, instance, device) (increase(nic_ethtool_queue_rx_dma_mapping_err_total{%(nicExporterSelector)s}[15m])) > 0, "failure", "rx DMA mapping", "", "")
              or label_replace(sum by (job, instance, device) (increase(nic_ethtool_queue_tx_dma_mapping_err_total{%(nicExporterSelector)s}[15m])) > 0, "failure", "tx DMA mapping", "", "")
            ||| % $._config,
            'for': '0m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'ENA {{ $labels.failure }} failures on {{ $labels.device }} on {{ $labels.instance }}',
              description: 'The ENA driver of {{ $labels.device }} on {{ $labels.instance }} had {{ $value | printf "%.0f" }} {{ $labels.failure }} failures in 15 minutes: the host is short of memory (or of IOMMU space) and packets were dropped.',
            },
          },
          {
            alert: 'NICENAAllowanceExceeded',
            expr: |||
              label_replace(rate(nic_ethtool_bw_in_allowance_exceeded_total{%(nicExporterSelector)s}[5m]) > %(enaAllowanceExceededRate)s, "allowance", "bw_in", "", "")
              or label_replace(rate(nic_ethtool_bw_out_allowance_exceeded_total{%(nicExporterSelector)s}[5m]) > %(enaAllowanceExceededRate)s, "allowance", "bw_out", "", "")
              or label_replace(rate(nic_ethtool_pps_allowance_exceeded_total{%(nicExporterSelector)s}[5m]) > %(enaAllowanceExceededRate)s, "allowance", "pps", "", "")
              or label_replace(rate(nic_ethtool_conntrack_allowance_exceeded_total{%(nicExporterSelector)s}[5m]) > %(enaAllowanceExceededRate)s, "allowance", "conntrack", "", "")
              or label_replace(rate(nic_ethtool_linklocal_allowance_exceeded_total{%(nicExporterSelector)s}[5m]) > %(enaAllowanceExceededRate)s, "allowance", "linklocal", "", "")
            ||| % $._config,
            'for': $._config.enaAllowanceExceededFor,
            labels: { severity: 'warning' },
            annotations: {
              summary: 'ENA {{ $labels.allowance }} allowance exceeded on {{ $labels.device }} on {{ $labels.instance }}',
              description: 'The instance behind {{ $labels.device }} on {{ $labels.instance }} has been over its {{ $labels.allowance }} allowance for ' + utils.humanizeDuration($._config.enaAllowanceExceededFor) + ': AWS queues or drops {{ $value | printf "%.0f" }} packets per second.',
            },
          },
          {
            alert: 'NICENAConntrackAllowanceLow',
            expr: 'nic_ethtool_conntrack_allowance_available{%(nicExporterSelector)s} < %(enaConntrackAvailableRatio)g * max_over_time(nic_ethtool_conntrack_allowance_available{%(nicExporterSelector)s}[1d])' % $._config,
            'for': $._config.enaConntrackAllowanceLowFor,
            labels: { severity: 'warning' },
            annotations: {
              summary: 'ENA connection tracking allowance nearly exhausted on {{ $labels.device }} on {{ $labels.instance }}',
              description: 'Only {{ $value | printf "%.0f" }} tracked connections can still be established on {{ $labels.device }} on {{ $labels.instance }}, less than ' + std.format('%g', $._config.enaConntrackAvailableRatio * 100) + '% of the most available in the last day; new connections will be dropped (conntrack_allowance_exceeded) when it reaches 0.',
            },
          },
          {
            // Eligible packets that did not go over SRD: ENA Express is on
            // (bit 1 of ena_srd_mode) but traffic falls back to standard
            // ENA, which AWS documents for packets over the SRD MTU and
            // for SRD resources exhausted.
            alert: 'NICENAExpressFallback',
            expr: |||
              (
                rate(nic_ethtool_ena_srd_eligible_tx_pkts_total{%(nicExporterSelector)s}[10m])
                  - on (job, instance, device) rate(nic_ethtool_ena_srd_tx_pkts_total{%(nicExporterSelector)s}[10m])
              )
                / on (job, instance, device) rate(nic_ethtool_ena_srd_eligible_tx_pkts_total{%(nicExporterSelector)s}[10m])
                > %(enaExpressFallbackRatio)g
              and on (job, instance, device) rate(nic_ethtool_ena_srd_eligible_tx_pkts_total{%(nicExporterSelector)s}[10m]) > %(enaExpressMinEligibleRate)g
              and on (job, instance, device) nic_ethtool_ena_srd_mode{%(nicExporterSelector)s} %% 2 == 1
            ||| % $._config,
            'for': '15m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'ENA Express traffic falls back to standard ENA on {{ $labels.device }} on {{ $labels.instance }}',
              description: '{{ $value | humanizePercentage }} of the packets {{ $labels.device }} on {{ $labels.instance }} sent that were eligible for ENA Express (SRD) in the last 10 minutes went out over standard ENA instead, for 15 minutes: packets over the SRD MTU, or the instance out of SRD resources (nic_ethtool_ena_srd_resource_utilization). The latency and tail benefit of ENA Express is lost for them.',
            },
          },
          {
            alert: 'NICENAExpressResourcesHigh',
            expr: 'nic_ethtool_ena_srd_resource_utilization{%(nicExporterSelector)s} > %(enaExpressResourceUtilization)g' % $._config,
            'for': '10m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'ENA Express resources nearly exhausted on {{ $labels.device }} on {{ $labels.instance }}',
              description: 'The instance behind {{ $labels.device }} on {{ $labels.instance }} has used {{ $value | printf "%.0f" }}% of its maximum memory for concurrent ENA Express (SRD) connections for 10 minutes; at 100% new flows go over standard ENA.',
            },
          },
        ],
      },
    ],
  },
}
