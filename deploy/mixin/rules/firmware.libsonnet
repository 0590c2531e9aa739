// Recording rules for firmware and driver policy: how many firmware
// versions each board runs within a node pool, and the devices that run a
// version listed in knownBadFirmware or knownBadDrivers.
local utils = import '../lib/utils.libsonnet';
local matcher(label, value) = '%s=%s' % [label, std.escapeStringJson(value)];

// knownBad is one label_replace per entry, joined with "or": the series
// of metric that match the entry's labels, with the entry's reason. An
// empty list yields a rule that matches nothing (the metric is always 1).
local knownBad(config, metric, entries, fields) =
  if std.length(entries) == 0 then
    'label_replace(%s{%s} == -1, "reason", "", "", "")' % [metric, config.nicExporterSelector]
  else
    std.join('\nor\n', [
      'label_replace(%s{%s}, "reason", %s, "", "")' % [
        metric,
        std.join(', ', [config.nicExporterSelector] + [matcher(f[1], e[f[0]]) for f in fields if std.objectHas(e, f[0])]),
        std.escapeStringJson(e.reason),
      ]
      for e in entries
    ]);

{
  prometheusRules+:: {
    groups+: [
      {
        name: 'nic-firmware',
        rules: [
          {
            // Distinct running firmware versions of each board (PSID) and
            // driver within a pool.
            record: 'pool:nic_firmware_running_versions:count',
            expr: utils.firmwareVersions($._config),
          },
          {
            record: 'device:nic_firmware_known_bad:info',
            expr: knownBad($._config, 'nic_devlink_info', $._config.knownBadFirmware, [['firmware', 'firmware_running'], ['board_id', 'board_id'], ['driver', 'driver']]),
          },
          {
            record: 'device:nic_driver_known_bad:info',
            expr: knownBad($._config, 'nic_ethtool_info', $._config.knownBadDrivers, [['driver', 'driver'], ['driver_version', 'driver_version']]),
          },
        ],
      },
    ],
  },
}
