package ethtool_test

import (
	"testing"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/collectortest"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
)

// pollOnce runs one Update of c and returns the snapshot and the source
// errors it reported.
func pollOnce(t testing.TB, c collector.Collector, log *zap.Logger) (*exposition.Snapshot, []collector.ReasonCount) {
	t.Helper()
	r := collectortest.MustPoll(t, c, collector.NewSourceErrors(log, 0))
	return r.Snapshot, r.Errors.Counts()
}

// series parses a text exposition into "name{a="x",b="y"}" -> value, with
// labels sorted by name. It fails the test if the text does not parse.
func series(t testing.TB, text string) map[string]float64 {
	t.Helper()
	return collectortest.Series(t, text)
}
