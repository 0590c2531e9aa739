// Package ruleeval evaluates the exporter's shipped alerting rules
// (deploy/prometheus/alerts.yml, with the recording rules of rules.yml
// that the alerts read) over the series of one host at one point in
// time, with Prometheus' own rule file parser (model/rulefmt), PromQL
// engine (promql) and template expander (template) as a library. It is
// what `nic_exporter diagnose` names its findings with: a support bundle
// becomes the series the daemon would export, and every alert whose
// expression returns a sample is a finding, so there is no second table
// of conditions to keep in step with the rules.
//
// Why this engine. Three were measured (docs/benchmarks.md, "diagnose
// rule engine"): Prometheus' rules package (the rule manager) brings its
// notifier, service discovery and remote-write configuration, 77 modules
// and 6.2 MB of binary before any use; promql, rulefmt and template bring
// 14 modules, and the whole of diagnose's rule evaluation adds 3.5 MB to
// the 16.7 MB binary and about 50 ms of CPU to a run; promtool's test machinery
// is a program, not on user hosts, and needs its input series written as
// text. The project's own evaluator in nodehealth is a hand-kept table
// that mirrors a few alerts, which is what this package replaces for
// diagnose. So the rule manager's loop is done here in a few lines: each
// alerting rule's expression is an instant query at the snapshot's time,
// and its labels and annotations are expanded as the rule manager
// expands them.
//
// Point-in-time semantics. A bundle is one snapshot (sometimes two), not
// a history, so:
//   - "for:" cannot be observed: an alert whose expression returns a
//     sample at the snapshot's time is a finding, whatever its "for:"
//     (Alert.For says what the rule would have waited).
//   - A counter's single value is "since boot": the series is given a
//     synthetic zero at boot time (Input.Boot) and grows linearly to the
//     value read, so rate() and increase() see the average rate since
//     boot; any count above zero fires the "increase(...) > 0" alerts,
//     and a threshold on a rate fires when the average since boot
//     crosses it.
//   - With two observations of a counter or more (a bundle's two
//     samples) there are two views of the time before the first one,
//     and the caller evaluates the rules in each (Input.SinceBoot). In
//     the "between samples" view the rate between the first two
//     observations holds back to the start of any window: the rate
//     between them is the real one, and a counter that did not move
//     between them is quiet however high its count. In the "since
//     boot" view the counter grows from zero at boot to its first
//     observation, as a single value does, and then as its observations
//     say: a count that rose before the first observation (an event a
//     minute before the bundle, which the daemon would alert on for 15
//     minutes) is not lost because it did not rise again in the seconds
//     between the observations. The first view is the stronger
//     evidence; the second is what one observation would give.
//   - A gauge keeps the value read over the whole window a rule looks
//     at (back to boot), so min_over_time and for-like windows see it.
//   - Recording rules that an alert reads are evaluated first, at the
//     snapshot's time only; the alerts read their result as an instant
//     vector.
//
// Series are generated on demand: the storage given to the engine builds
// the samples of the selected series within the query's range only, on a
// one-minute grid, so a one-day window over one metric does not cost
// samples for every series of the host.
package ruleeval
