package main

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// repoRoot is the repository's root, seen from this package.
const repoRoot = "../.."

// architectureTree returns the package tree of the README's section
// "Architecture": its code block whose lines start with a directory, as
// a map from each directory to its one-line description (continuation
// lines, which start with a space, are joined to it).
func architectureTree(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Architecture\n")
	if !ok {
		t.Fatal(`README.md has no section "## Architecture"`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	entry := regexp.MustCompile(`^([a-z0-9_./-]+/) {2,}(\S.*)$`)
	for _, block := range strings.Split(section, "```")[1:] {
		lines := strings.Split(strings.Trim(block, "\n"), "\n")
		if len(lines) == 0 || !entry.MatchString(lines[0]) {
			continue
		}
		tree := make(map[string]string)
		last := ""
		for i, l := range lines {
			if strings.HasPrefix(l, " ") && last != "" {
				tree[last] += " " + strings.TrimSpace(l)
				continue
			}
			m := entry.FindStringSubmatch(l)
			if m == nil {
				t.Errorf("README.md, Architecture tree, line %d: %q is not \"dir/  description\" (one directory a line)", i+1, l)
				continue
			}
			if _, dup := tree[m[1]]; dup {
				t.Errorf("README.md, Architecture tree: %s appears twice", m[1])
			}
			tree[m[1]], last = m[2], m[1]
		}
		return tree
	}
	t.Fatal("README.md, Architecture: no code block listing directories")
	return nil
}

// goPackageDirs returns the directory, relative to the repository's
// root and ending in "/", of every package of the Go module in dir.
func goPackageDirs(t *testing.T, dir string) []string {
	t.Helper()
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-f", "{{.Dir}}", "./...")
	cmd.Dir = filepath.Join(root, dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./... in %s: %v\n%s", dir, err, stderr.Bytes())
	}
	var dirs []string
	for _, d := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, d)
		if err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, filepath.ToSlash(rel)+"/")
	}
	return dirs
}

// TestDocsArchitectureTree checks the README's package tree against the
// code: every Go package of the exporter's module and of the deploy
// module has a line with a description, and every directory the tree
// names exists.
func TestDocsArchitectureTree(t *testing.T) {
	tree := architectureTree(t)
	for _, module := range []string{".", "deploy"} {
		for _, dir := range goPackageDirs(t, module) {
			if _, ok := tree[dir]; !ok {
				t.Errorf("package directory %s is missing from the README's Architecture tree: add \"%s  <what it does>\"", dir, dir)
			}
		}
	}
	dirs := make([]string, 0, len(tree))
	for d := range tree {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		fi, err := os.Stat(filepath.Join(repoRoot, d))
		switch {
		case err != nil:
			t.Errorf("the README's Architecture tree names %s: %v", d, err)
		case !fi.IsDir():
			t.Errorf("the README's Architecture tree names %s, which is not a directory", d)
		}
	}
}

// userDocs are the documents written for people outside the project.
// CHANGELOG.md is left out on purpose: it records the project's history.
func userDocs(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{filepath.Join(repoRoot, "README.md"), filepath.Join(repoRoot, "deploy", "README.md"),
		filepath.Join(repoRoot, "deploy", "mixin", "README.md")}
	return append(out, docs...)
}

var (
	// externalRef is a reference into another project's tracker, which
	// names the project: owner/repo#12, repo#12, with more numbers of
	// the same tracker after it ("#12, #13 and #14"), or
	// "node_exporter issue 3434".
	externalRef = regexp.MustCompile(`[A-Za-z0-9_.-]+#[0-9]+((,| and|,? and) #[0-9]+)*` +
		`|[A-Za-z0-9_.-]*[_/-][A-Za-z0-9_.-]* (issues?|PRs?|pull requests?) #?[0-9]+`)
	// trackerRef is a reference to this project's own tracker, which a
	// reader outside it cannot follow: "issue 18", "issues 9 and 12",
	// "(#15)", "PR 4".
	trackerRef = regexp.MustCompile(`(?i)\b(issues?|PRs?|pull requests?|tickets?) #?[0-9]+|(^|[\s(\[])#[0-9]+\b`)
)

// trackerRefs returns the references to the project's tracker in text,
// with their line numbers.
func trackerRefs(text string) []string {
	var out []string
	// A reference may wrap: look at the text with its line breaks as
	// spaces, and count lines up to each match.
	flat := strings.ReplaceAll(text, "\n", " ")
	flat = externalRef.ReplaceAllStringFunc(flat, func(s string) string { return strings.Repeat("x", len(s)) })
	for _, loc := range trackerRef.FindAllStringIndex(flat, -1) {
		line := strings.Count(text[:loc[0]], "\n") + 1
		out = append(out, fmt.Sprintf("line %d: %q", line, strings.TrimSpace(text[loc[0]:loc[1]])))
	}
	return out
}

func TestDocsTrackerRefsPattern(t *testing.T) {
	tests := []struct {
		text string
		want int
	}{
		{"issue 18 keeps pages", 1},
		{"see the issues 9\nand 12", 1},
		{"the \"Physical layer health\" issue (#15)", 1},
		{"PR 4 and #7", 2},
		{"node_exporter issue 3434", 0},
		{"prometheus/node_exporter#966 and its", 0},
		{"isc-projects/ethq#6, #7, #8, #15", 0},
		{"endlessm/linux#547,\n#625", 0},
		{"leptonai/gpud#943 had", 0},
		{"a firmware issue (check dmesg)", 0},
		{"IBV_WC_RETRY_EXC_ERR (12)", 0},
		{"[runbooks](runbooks.md#nicdevlinkfwerror)", 0},
	}
	for _, tt := range tests {
		if got := trackerRefs(tt.text); len(got) != tt.want {
			t.Errorf("trackerRefs(%q) = %q, want %d", tt.text, got, tt.want)
		}
	}
}

// TestDocsNoTrackerReferences fails when a user document refers to this
// project's tracker by number ("issue 18", "#15"), which means nothing
// to a reader outside it: say what the reference stood for instead.
// References into other projects' trackers name the project
// (node_exporter#2096) and are fine.
func TestDocsNoTrackerReferences(t *testing.T) {
	for _, doc := range userDocs(t) {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repoRoot, doc)
		for _, r := range trackerRefs(string(b)) {
			t.Errorf("%s, %s: a tracker reference means nothing to a reader; say what it stood for", rel, r)
		}
	}
}

// TestFixturesCiteNoMachinePaths fails when a test fixture (a file under a
// testdata directory) names its source by a path of a development
// machine (/work/..., /home/..., /root/...), which a reader of the
// repository cannot open: a source is a public reference or a file of
// this repository, named by its path in the repository.
func TestFixturesCiteNoMachinePaths(t *testing.T) {
	machinePath := regexp.MustCompile(`(^|[\s('"])/(work|home|root)/[A-Za-z0-9._-]`)
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == ".git" || name == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.Contains(filepath.ToSlash(path), "/testdata/") {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		// Sources are cited in a fixture's header.
		head := make([]byte, 8192)
		n, _ := io.ReadFull(f, head)
		rel, _ := filepath.Rel(repoRoot, path)
		for i, line := range strings.Split(string(head[:n]), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "#") && machinePath.MatchString(line) {
				t.Errorf("%s:%d cites a path of a development machine: %s", rel, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// thousands formats n with a comma between thousands, as the docs write
// numbers: 1,052.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// TestDocsDemoNumbers checks the numbers deploy/README.md quotes from the
// demo host against a run of it (frozen at 10 minutes, no faults): the
// series count of the default scrape in "Resources" (which make
// bench-demo counts the same way, as the lines starting with nic_) and
// the series budget warning's top collectors in "Series budget", with
// --web.series-budget=100. A change to the demo's series fails here
// until the README quotes the new numbers.
func TestDocsDemoNumbers(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	e := start(t, "--demo", "--demo.elapsed=10m", "--web.series-budget=100")
	scrape, _ := e.get(t, "/metrics", nil)
	series := 0
	for _, l := range strings.Split(scrape, "\n") {
		if strings.HasPrefix(l, "nic_") {
			series++
		}
	}
	if want := thousands(series) + " series at `/metrics`"; !strings.Contains(string(readme), want) {
		t.Errorf("deploy/README.md (Resources) does not say %q: the demo's default scrape has %d series; run make bench-demo and quote its numbers", want, series)
	}
	// The budget is checked when the scrape gathers the self-metrics; the
	// warning may reach the log after the scrape's answer.
	topCollectors := regexp.MustCompile(`top_collectors="[^"]*"`)
	var m string
	for deadline := time.Now().Add(testenv.HangGuard); ; time.Sleep(20 * time.Millisecond) {
		if m = topCollectors.FindString(e.stderr.String()); m != "" || time.Now().After(deadline) {
			break
		}
	}
	if m == "" {
		t.Fatalf("no series budget warning with top_collectors in the exporter's log:\n%s", e.stderr.String())
	}
	if want := "`" + m + "` on the demo host with `--demo.elapsed=10m --web.series-budget=100`"; !strings.Contains(strings.Join(strings.Fields(string(readme)), " "), want) {
		t.Errorf("deploy/README.md (Series budget) does not quote the warning as %q", want)
	}
}
