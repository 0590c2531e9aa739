// The nic_exporter monitoring mixin: prometheusAlerts and prometheusRules
// for Prometheus (or a ruler: Mimir, Thanos, VictoriaMetrics), configured
// by _config (config.libsonnet). deploy/prometheus/alerts.yml and rules.yml
// are this mixin rendered with the defaults (make mixin).
//
// Each alert group is one file under alerts/ and each recording rule group
// one file under rules/; to add a group, add its file and one import line
// below. Every alert gets its runbook_url here, from runbookURLBase and the
// alert's name, unless its file sets one.
local withRunbooks(config, groups) = [
  g {
    rules: [
      if std.objectHas(r, 'alert') && !std.objectHas(std.get(r, 'annotations', {}), 'runbook_url') then
        r { annotations+: { runbook_url: config.runbookURLBase + std.asciiLower(r.alert) } }
      else r
      for r in super.rules
    ],
  }
  for g in groups
];

local mixin =
  (import 'config.libsonnet') +
  // Alert groups, in the order of alerts.yml.
  (import 'alerts/exporter.libsonnet') +
  (import 'alerts/devlink.libsonnet') +
  (import 'alerts/netdev.libsonnet') +
  (import 'alerts/infiniband.libsonnet') +
  (import 'alerts/ethtool-ena.libsonnet') +
  (import 'alerts/efa.libsonnet') +
  (import 'alerts/ethtool-mlx5.libsonnet') +
  (import 'alerts/vma.libsonnet') +
  (import 'alerts/xlio.libsonnet') +
  (import 'alerts/logs.libsonnet') +
  (import 'alerts/physical-layer.libsonnet') +
  (import 'alerts/pcie-aer.libsonnet') +
  (import 'alerts/fabric.libsonnet') +
  (import 'alerts/firmware.libsonnet') +
  // Recording rule groups, in the order of rules.yml.
  (import 'rules/fleet.libsonnet') +
  (import 'rules/physical-layer.libsonnet') +
  (import 'rules/firmware.libsonnet');

mixin {
  prometheusAlerts+:: {
    groups: withRunbooks($._config, super.groups),
  },
}
