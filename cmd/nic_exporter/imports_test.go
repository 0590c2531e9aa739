package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// modulePath is the exporter's module path, the prefix of its import
// paths.
const modulePath = "github.com/nic-exporter/nic_exporter/"

// libraryRoots are the directories whose packages read sources and
// render series: the collector framework and its collectors, the kernel
// and file helpers under internal/, and the source libraries. Product
// features (cmd/, the demo host, diagnose, node actions) sit above them
// and may import them; they import no feature.
var libraryRoots = []string{"collector/", "internal/", "devlink/", "vmastats/", "xliostats/"}

// knownUpward are the imports that break the direction today, each to
// be removed by moving the feature above the collectors. The test fails
// when one of them is gone, so that the list only shrinks.
var knownUpward = []string{}

// TestImportDirection checks the layering of the exporter's module with
// go list: a library package (libraryRoots) imports no feature package,
// and a helper under internal/ imports nothing from collector/, whose
// packages build on the helpers. Test files are not checked: a test may
// drive the layers above its package.
func TestImportDirection(t *testing.T) {
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v\n%s", err, stderr.Bytes())
	}
	library := func(p string) bool {
		for _, r := range libraryRoots {
			if strings.HasPrefix(p+"/", r) {
				return true
			}
		}
		return false
	}
	var upward []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, ok := strings.CutPrefix(fields[0], modulePath)
		if !ok || !library(pkg) {
			continue
		}
		for _, imp := range fields[1:] {
			dep, ok := strings.CutPrefix(imp, modulePath)
			if !ok {
				continue
			}
			helper := strings.HasPrefix(pkg, "internal/") && (dep == "collector" || strings.HasPrefix(dep, "collector/"))
			if !library(dep) || helper {
				upward = append(upward, pkg+" -> "+dep)
			}
		}
	}
	for _, u := range upward {
		if !slices.Contains(knownUpward, u) {
			t.Errorf("%s imports against the layering: library packages (%s) import no feature, and internal/ imports nothing from collector/", u, strings.Join(libraryRoots, " "))
		}
	}
	for _, k := range knownUpward {
		if !slices.Contains(upward, k) {
			t.Errorf("%s no longer exists: remove it from knownUpward", k)
		}
	}
}

// TestThinMain keeps the command thin: the daemon's flags, sources,
// collector building and server live in package daemon, and what stays
// here (subcommand dispatch, logging, signals) fits in 400 lines outside
// tests.
func TestThinMain(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines += strings.Count(string(b), "\n")
	}
	if lines > 400 {
		t.Errorf("cmd/nic_exporter has %d lines outside tests, more than 400: move what is not dispatch, logging or signals into a package", lines)
	}
	t.Logf("cmd/nic_exporter: %d lines outside tests", lines)
}
