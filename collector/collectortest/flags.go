package collectortest

import (
	"testing"

	"github.com/alecthomas/kingpin/v2"
)

// ParseFlags declares a collector package's own flags with register (its
// RegisterFlags) on a new kingpin application, parses args and returns
// what register returned, filled in. A parse error fails the test.
func ParseFlags[F any](t testing.TB, register func(*kingpin.Application) F, args ...string) F {
	t.Helper()
	app := kingpin.New("test", "")
	f := register(app)
	if _, err := app.Parse(args); err != nil {
		t.Fatalf("parsing %q: %v", args, err)
	}
	return f
}
