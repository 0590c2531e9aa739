package main

import (
	"runtime/debug"
	"strings"

	"github.com/prometheus/common/version"
)

// stampVersion fills in the version when the build gave none with
// -ldflags (`make build` and the Dockerfile do): from the module version
// Go records in the binary, which is the tag for `go install ...@v0.2.0`,
// a pseudo-version naming the commit for `go build` in a git checkout when
// Go stamps version control information (Go 1.24 and later, unless
// -buildvcs=false), and "(devel)" otherwise, shown as "devel" rather than
// an empty string. The revision is left to prometheus/common/version,
// which reads vcs.revision itself.
func stampVersion() {
	if version.Version != "" {
		return
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		version.Version = moduleVersion(bi)
	}
}

// moduleVersion returns the main module's version without the leading
// "v", as Prometheus components print it, or "devel" when Go recorded
// none.
func moduleVersion(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if v == "" || v == "(devel)" {
		return "devel"
	}
	return strings.TrimPrefix(v, "v")
}
