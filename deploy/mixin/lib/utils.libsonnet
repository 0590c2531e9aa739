// Helpers for the alert files.
{
  // humanizeDuration turns a Prometheus duration of one unit ('90s', '5m',
  // '6h', '1d') into words for a description ('5 minutes', '1 hour');
  // anything else is returned as it is.
  humanizeDuration(d)::
    local units = { s: 'second', m: 'minute', h: 'hour', d: 'day', w: 'week' };
    local n = std.substr(d, 0, std.length(d) - 1);
    local u = std.substr(d, std.length(d) - 1, 1);
    local digits = std.length(n) > 0 && std.all([std.member('0123456789', c) for c in std.stringChars(n)]);
    if std.objectHas(units, u) && digits then
      n + ' ' + units[u] + (if n == '1' then '' else 's')
    else d,

  // counterRose is "increase(counter[window]) > threshold" for a counter
  // that counts since boot, guarded so that VictoriaMetrics (MetricsQL)
  // fires it when Prometheus does: for a series that is new within the
  // window, MetricsQL's increase() counts from 0 when the first value is
  // small (a port's link_downed of 2 since boot "rose by 2" on its first
  // scrape). The guard asks that the series rose by more than threshold
  // inside the window, or existed before it; in Prometheus, whose
  // increase() only sees the window's samples, it never removes a result.
  // selector is the counter with its matchers, window a duration.
  counterRose(selector, window, threshold)::
    std.format('increase(%s[%s]) > %s and (max_over_time(%s[%s]) - min_over_time(%s[%s]) > %s or %s offset %s)',
               [selector, window, threshold, selector, window, selector, window, threshold, selector, window]),

  // firmwareVersions counts the distinct running firmware versions of
  // each board (PSID) and driver within a pool (firmwarePoolLabels): the
  // recording rule pool:nic_firmware_running_versions:count and the
  // NICFirmwareSkew alert, which needs the selector on the raw series
  // because the count drops the labels that are not pool labels.
  firmwareVersions(config)::
    'count by (%(firmwarePoolLabels)s, driver, board_id) (count by (%(firmwarePoolLabels)s, driver, board_id, firmware_running) (nic_devlink_info{%(nicExporterSelector)s, firmware_running!=""}))' % config,
}
