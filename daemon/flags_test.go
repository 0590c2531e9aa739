package daemon

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/nic-exporter/nic_exporter/collector/collectortest"
)

// actionFlags are kingpin's own flags that print and exit when parsed, so
// they are described but never parsed here.
var actionFlags = map[string]bool{
	"help": true, "help-long": true, "help-man": true, "version": true,
	"completion-bash": true, "completion-script-bash": true, "completion-script-zsh": true,
}

// flagProbes are the values every flag is parsed with, alone on the
// command line, to record how it is validated: kingpin's own checks
// (types, enums) and the daemon's (check).
var flagProbes = []string{"", "0", "-1", "1ns", "bogus"}

// TestFlagsGolden describes every flag of the daemon (name, short, help,
// default, environment variable, placeholder, required, hidden, value
// type) and what ParseFlags answers when that flag alone is given each of
// flagProbes, and compares it with testdata/flags.golden. It holds the
// command line byte for byte through moves of where the flags are
// declared.
func TestFlagsGolden(t *testing.T) {
	app, _ := newApp(io.Discard)
	m := app.Model()
	var b strings.Builder
	fmt.Fprintf(&b, "app %s\nhelp %q\n", m.Name, m.Help)
	for _, f := range m.Flags {
		fmt.Fprintf(&b, "\nflag %s\n", f.Name)
		if f.Short != 0 {
			fmt.Fprintf(&b, "  short %q\n", f.Short)
		}
		fmt.Fprintf(&b, "  help %q\n  default %q\n  value %T\n", f.Help, f.Default, f.Value)
		if f.Envar != "" {
			fmt.Fprintf(&b, "  envar %q\n", f.Envar)
		}
		if f.PlaceHolder != "" {
			fmt.Fprintf(&b, "  placeholder %q\n", f.PlaceHolder)
		}
		fmt.Fprintf(&b, "  required %t hidden %t\n", f.Required, f.Hidden)
		if actionFlags[f.Name] {
			continue
		}
		for _, v := range flagProbes {
			arg := "--" + f.Name + "=" + v
			res := "ok"
			if _, err := ParseFlags([]string{arg}, io.Discard); err != nil {
				res = err.Error()
			}
			fmt.Fprintf(&b, "  %q: %s\n", arg, res)
		}
	}
	collectortest.Golden(t, "testdata/flags.golden", b.String())
}
