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
}
