package ethtool

import (
	"fmt"

	"github.com/alecthomas/kingpin/v2"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/internal/ethtoolioctl"
)

// Spec names the ethtool collector and sets the defaults of its common
// flags (collector.RegisterCommonFlags).
func Spec() collector.Spec {
	return collector.Spec{
		Name:            "ethtool",
		Help:            "driver information, link settings and driver statistics (ethtool -i, ethtool, ethtool -S) with queue, priority and lane numbers as labels.",
		DefaultInterval: "5s",
		DefaultTimeout:  "4s",
	}
}

// Flags are the parsed command-line flags particular to the ethtool
// collector (see collector.RegisterCommonFlags for the shape).
type Flags struct {
	// StatInclude and StatExclude select the driver statistics by the
	// names ethtool -S prints (Config.StatFilter).
	StatInclude string
	StatExclude string
	// PerQueue is the name of the QueueMode (Config.QueueMode).
	PerQueue string
	// Netns is the network namespace file whose interfaces are read;
	// empty means the exporter's own.
	Netns string
}

// RegisterFlags declares the ethtool collector's own flags on app and
// returns the Flags they fill in when app parses.
func RegisterFlags(app *kingpin.Application) *Flags {
	f := &Flags{}
	app.Flag("collector.ethtool.stat-include", "Regular expression (anchored) of the driver statistic names, as ethtool -S prints them, the ethtool collector exports; empty means all.").StringVar(&f.StatInclude)
	app.Flag("collector.ethtool.stat-exclude", "Regular expression (anchored) of the driver statistic names the ethtool collector never exports.").StringVar(&f.StatExclude)
	app.Flag("collector.ethtool.per-queue", "What the ethtool collector does with per-queue statistics: sum (one series per interface in /metrics, monotonic when queues go away, and one per queue as nic_ethtool_per_queue_* in /metrics/detail), keep (a series per queue, label queue, in /metrics) or drop.").Default("sum").EnumVar(&f.PerQueue, "keep", "sum", "drop")
	app.Flag("collector.ethtool.netns", "Network namespace file (e.g. /run/netns/NAME or /proc/PID/ns/net) whose interfaces the ethtool collector reads; empty means the exporter's own.").StringVar(&f.Netns)
	return f
}

// Config returns c with the statistic filter and the queue mode of the
// flags.
func (f *Flags) Config(c Config) (Config, error) {
	mode, err := ParseQueueMode(f.PerQueue)
	if err != nil {
		return c, err
	}
	stats, err := collector.NewNameFilter("collector.ethtool.stat", f.StatInclude, f.StatExclude)
	if err != nil {
		return c, err
	}
	c.StatFilter, c.QueueMode = stats, mode
	return c, nil
}

// Source opens this host's ethtool source (SIOCETHTOOL) in the namespace
// the flags name (Config.Source).
func (f *Flags) Source() (Source, error) {
	s, err := ethtoolioctl.New(f.Netns)
	if err != nil && f.Netns != "" {
		return nil, fmt.Errorf("--collector.ethtool.netns: %w", err)
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}
