// Pre-FEC (raw) bit error rate: the share of received bits the FEC
// corrected, per port and per lane. mlx5 counts the bits received
// (rx_bits_phy) and corrected (rx_corrected_bits_phy); for other drivers the
// FEC corrected bits of ethtool netlink are divided by the link speed, which
// leaves out the FEC and coding overhead (a few percent too high). Links
// that are down (no bits) have no series. These are per-device rules, not
// fleet rules: a host without the inputs has no series, and the alert on
// them (NICPreFECBERHigh) needs none.
{
  prometheusRules+:: {
    groups+: [
      {
        name: 'nic-physical-layer',
        rules: [
          {
            record: 'device:nic_phy_pre_fec_ber:rate5m',
            expr: |||
              rate(nic_ethtool_rx_corrected_bit_phy_total{%(nicExporterSelector)s}[5m])
                / on (job, instance, device) (rate(nic_ethtool_rx_bit_phy_total{%(nicExporterSelector)s}[5m]) > 0)
              or on (job, instance, device)
              rate(nic_phy_fec_corrected_bit_errors_total{%(nicExporterSelector)s}[5m])
                / on (job, instance, device) (nic_ethtool_link_speed_bytes_per_second{%(nicExporterSelector)s} * 8 > 0)
            ||| % $._config,
          },
          {
            record: 'lane:nic_phy_pre_fec_ber:rate5m',
            expr: |||
              rate(nic_ethtool_lane_rx_err_phy_total{%(nicExporterSelector)s}[5m])
                / on (job, instance, device) group_left ()
              (
                rate(nic_ethtool_rx_bit_phy_total{%(nicExporterSelector)s}[5m])
                  / on (job, instance, device) count by (job, instance, device) (nic_ethtool_lane_rx_err_phy_total{%(nicExporterSelector)s})
                > 0
              )
            ||| % $._config,
          },
        ],
      },
    ],
  },
}
