// Recording rules for the fleet overview dashboard: one series per host
// (job, instance) and rule. Each rule yields a value for every scraped host:
// orZero adds 0 for the hosts that lack the source (no devlink, ENA, VMA or
// InfiniBand), from nic_exporter_build_info, which every exporter serves.
// A host that is not scraped has no build_info and so no fleet series:
// "0" means healthy, nothing means "not reporting".
local orZero(config, expr) =
  local e = std.rstripChars(expr, '\n') % config;
  |||
    %s
    or on (job, instance) (0 * group by (job, instance) (nic_exporter_build_info{%s}))
  ||| % [e, config.nicExporterSelector];

{
  prometheusRules+:: {
    groups+: [
      {
        name: 'nic-fleet',
        rules: [
          {
            record: 'instance:nic_exporter_collectors_down:sum',
            expr: orZero($._config, 'sum by (job, instance) (1 - nic_exporter_collector_up{%(nicExporterSelector)s})'),
          },
          {
            record: 'instance:nic_devlink_reporters_unhealthy:sum',
            expr: orZero($._config, 'sum by (job, instance) (1 - nic_devlink_health_reporter_healthy{%(nicExporterSelector)s})'),
          },
          {
            record: 'instance:nic_netdev_links_down:sum',
            expr: orZero($._config, 'sum by (job, instance) ((nic_netdev_carrier{%(nicExporterSelector)s} == bool 0) and on (job, instance, device) nic_netdev_admin_up{%(nicExporterSelector)s} == 1)'),
          },
          {
            record: 'instance:nic_netdev_carrier_changes:increase1h',
            expr: orZero($._config, 'sum by (job, instance) (increase(nic_netdev_carrier_changes_total{%(nicExporterSelector)s}[1h]))'),
          },
          {
            record: 'instance:nic_pcie_links_degraded:sum',
            expr: orZero($._config, 'sum by (job, instance) (nic_pcie_link_degraded{%(nicExporterSelector)s})'),
          },
          {
            record: 'instance:nic_infiniband_ports_not_linkup:sum',
            expr: orZero($._config, 'sum by (job, instance) ((nic_infiniband_port_phys_state{%(nicExporterSelector)s} != bool 5) and on (job, instance, device, port) nic_infiniband_port_info{link_layer="InfiniBand", %(nicExporterSelector)s} == 1)'),
          },
          {
            record: 'instance:nic_infiniband_symbol_errors:increase1h',
            expr: orZero($._config, 'sum by (job, instance) (increase(nic_infiniband_port_symbol_error_total{%(nicExporterSelector)s}[1h]))'),
          },
          {
            record: 'instance:nic_ena_allowance_exceeded:rate5m',
            expr: orZero($._config, |||
              sum by (job, instance) (
                rate(nic_ethtool_bw_in_allowance_exceeded_total{%(nicExporterSelector)s}[5m]) + rate(nic_ethtool_bw_out_allowance_exceeded_total{%(nicExporterSelector)s}[5m])
                + rate(nic_ethtool_pps_allowance_exceeded_total{%(nicExporterSelector)s}[5m]) + rate(nic_ethtool_conntrack_allowance_exceeded_total{%(nicExporterSelector)s}[5m])
                + rate(nic_ethtool_linklocal_allowance_exceeded_total{%(nicExporterSelector)s}[5m])
              )
            |||),
          },
          {
            record: 'instance:nic_ena_resets:increase1h',
            expr: orZero($._config, 'sum by (job, instance) (increase(nic_ethtool_wd_expired_total{%(nicExporterSelector)s}[1h]) + increase(nic_ethtool_tx_timeout_total{%(nicExporterSelector)s}[1h]))'),
          },
          {
            record: 'instance:nic_vma_os_path_packets:rate5m',
            expr: orZero($._config, 'sum by (job, instance) (rate(nic_vma_socket_packets_total{path="os", %(nicExporterSelector)s}[5m]))'),
          },
          {
            record: 'instance:nic_vma_dropped_packets:rate5m',
            expr: orZero($._config, 'sum by (job, instance) (rate(nic_vma_cq_rx_dropped_packets_total{%(nicExporterSelector)s}[5m])) + sum by (job, instance) (rate(nic_vma_socket_rx_ready_queue_dropped_packets_total{%(nicExporterSelector)s}[5m]))'),
          },
          {
            record: 'instance:nic_vma_no_buffers:increase1h',
            expr: orZero($._config, 'sum by (job, instance) (increase(nic_vma_buffer_pool_no_buffers_total{%(nicExporterSelector)s}[1h]))'),
          },
        ],
      },
    ],
  },
}
