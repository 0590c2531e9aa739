// Command testsummary reads the events of `go test -json` on its standard
// input and prints what plain `go test` prints (each package's result
// line, and the whole output of every test that failed), then a summary:
// every skipped test with its reason, and the counts of passed, failed and
// skipped tests. It exits 1 if a test, a package or a build failed, or if
// it read no test event at all, so that a pipeline
//
//	go test -json ./... | go run ./internal/testsummary
//
// fails when go test does. A test skipped for a missing tool, privilege or
// qemu still fails under NIC_EXPORTER_REQUIRE_ALL=1: that is the test's own
// doing (internal/testenv), not this filter's.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

func main() {
	os.Exit(run(os.Stdin, os.Stdout))
}

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// skip is a skipped test and the reason it logged.
type skip struct {
	Package, Test, Reason string
}

// summary is what run has seen so far.
type summary struct {
	passed, failed, skipped int
	packagesFailed          int
	events                  int
	skips                   []skip
	// output buffers each running test's output until its result: it is
	// printed if the test fails and searched for the reason if it skips.
	output map[string][]string
}

// run filters the events of r onto w and returns the exit code.
func run(r io.Reader, w io.Writer) int {
	s := summary{output: make(map[string][]string)}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1024*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil || e.Action == "" {
			// Not an event (go vet or the toolchain writing to
			// stdout): pass it through.
			fmt.Fprintf(w, "%s\n", line)
			continue
		}
		s.events++
		s.add(e, w)
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(w, "testsummary: reading go test -json: %v\n", err)
		return 1
	}
	s.print(w)
	if s.failed > 0 || s.packagesFailed > 0 || s.events == 0 {
		return 1
	}
	return 0
}

// add takes one event: package output and build output go straight
// through, test output waits for the test's result.
func (s *summary) add(e event, w io.Writer) {
	key := e.Package + " " + e.Test
	switch {
	case e.Action == "build-output":
		io.WriteString(w, e.Output)
	case e.Action == "build-fail":
		s.packagesFailed++
	case e.Test == "" && e.Action == "output":
		// go test -json reports each package's "PASS" line, which plain
		// go test shows only with -v.
		if e.Output != "PASS\n" {
			io.WriteString(w, e.Output)
		}
	case e.Test == "" && e.Action == "fail":
		s.packagesFailed++
	case e.Test == "":
	case e.Action == "output":
		s.output[key] = append(s.output[key], e.Output)
	case e.Action == "pass":
		s.passed++
		delete(s.output, key)
	case e.Action == "fail":
		s.failed++
		for _, o := range s.output[key] {
			io.WriteString(w, o)
		}
		delete(s.output, key)
	case e.Action == "skip":
		s.skipped++
		s.skips = append(s.skips, skip{e.Package, e.Test, reason(s.output[key])})
		delete(s.output, key)
	}
}

// reason returns what a skipped test logged: its lines other than the
// framing lines of go test, joined, or a note that it logged nothing.
func reason(output []string) string {
	var lines []string
	for _, o := range output {
		l := strings.TrimSpace(o)
		if l == "" || strings.HasPrefix(l, "=== ") || strings.HasPrefix(l, "--- ") {
			continue
		}
		lines = append(lines, l)
	}
	if len(lines) == 0 {
		return "(no reason logged)"
	}
	return strings.Join(lines, " / ")
}

// print writes the summary: the skips, sorted, and the counts.
func (s *summary) print(w io.Writer) {
	sort.Slice(s.skips, func(i, j int) bool {
		if s.skips[i].Package != s.skips[j].Package {
			return s.skips[i].Package < s.skips[j].Package
		}
		return s.skips[i].Test < s.skips[j].Test
	})
	fmt.Fprintf(w, "\n=== test summary\n")
	for _, k := range s.skips {
		fmt.Fprintf(w, "SKIP %s %s: %s\n", k.Package, k.Test, k.Reason)
	}
	fmt.Fprintf(w, "%d passed, %d failed, %d skipped", s.passed, s.failed, s.skipped)
	if s.packagesFailed > 0 {
		fmt.Fprintf(w, "; %d packages failed", s.packagesFailed)
	}
	if s.events == 0 {
		fmt.Fprintf(w, "; no test events read (did go test run?)")
	}
	fmt.Fprintln(w)
}
