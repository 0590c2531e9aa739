package netdev

import (
	"fmt"

	"github.com/alecthomas/kingpin/v2"

	"github.com/nic-exporter/nic_exporter/collector"
)

// Spec names the netdev collector and sets the defaults of its common
// flags (collector.RegisterCommonFlags).
func Spec() collector.Spec {
	return collector.Spec{
		Name:            "netdev",
		Help:            "interface state, statistics and PCIe link from sysfs.",
		DefaultInterval: "5s",
		DefaultTimeout:  "4s",
	}
}

// Flags are the parsed command-line flags particular to the netdev
// collector (see collector.RegisterCommonFlags for the shape).
type Flags struct {
	// Netns is the network namespace file whose interfaces are read;
	// empty means the exporter's own.
	Netns string
}

// RegisterFlags declares the netdev collector's own flags on app and
// returns the Flags they fill in when app parses.
func RegisterFlags(app *kingpin.Application) *Flags {
	f := &Flags{}
	app.Flag("collector.netdev.netns", "Network namespace file (e.g. /run/netns/NAME or /proc/PID/ns/net) whose interfaces the netdev collector reads; empty means the exporter's own. Another namespace's interfaces have no sysfs directory here: their device (driver, PCIe) is found through rtnetlink, and their speed is left out.").StringVar(&f.Netns)
	return f
}

// Foreign reports whether the flags name another network namespace than
// the exporter's own, whose interfaces its sysfs does not show
// (Config.ForeignNamespace).
func (f *Flags) Foreign() bool { return f.Netns != "" }

// Links opens this host's interface list in the namespace the flags name:
// an rtnetlink dump (Config.Links).
func (f *Flags) Links() (LinkSource, error) {
	l, err := NewRtnlLinks(f.Netns)
	if err != nil && f.Netns != "" {
		return nil, fmt.Errorf("--collector.netdev.netns: %w", err)
	}
	if err != nil {
		return nil, err
	}
	return l, nil
}
