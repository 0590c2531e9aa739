// Command testsummary reads the events of `go test -json` on its standard
// input and prints what plain `go test` prints (each package's result
// line, and the whole output of every test that failed), then a summary:
// every skipped test with its reason, every test that was still running
// when its package timed out, panicked or was killed (with its last output
// lines and the test binary's report of what was running), the slowest
// tests, and the counts of passed, failed and skipped tests. It exits 1 if a test, a package or a build failed, or if
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
	"regexp"
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
	Elapsed float64
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
	// running holds the tests that started and have no result yet, by
	// key; a package that fails with tests still running timed out,
	// panicked outside a test's own goroutine, or was killed.
	running map[string]runningTest
	// unfinished are the tests reported by unfinishedIn, for the summary.
	unfinished []unfinished
	// durations are the finished tests' elapsed times, for the slowest.
	durations []duration
	// failures are the failed tests with their last message lines, for
	// the summary.
	failures []failure
}

// failure is a failed test and the last lines it logged through t.Log or
// t.Error (the "file.go:N: " lines, without their continuation lines).
type failure struct {
	Package, Test string
	Messages      []string
}

// runningTest is a started test without a result.
type runningTest struct {
	Package, Test string
	order         int
}

// unfinished is a test that had no result when its package ended.
type unfinished struct {
	Package, Test, Why string
}

// duration is a finished test's elapsed time, in seconds.
type duration struct {
	Package, Test string
	Seconds       float64
}

// slowest is how many of the slowest finished tests the summary names.
const slowest = 8

// tailLines is how many of an unfinished test's own output lines are
// printed.
const tailLines = 20

// Failure messages in the summary: the last failureLines message lines of
// each failed test, each cut at failureLineLen bytes, for at most
// maxFailures tests. A CI log is often read from its end, and a failing
// test's own error lines are easily thousands of lines above it when the
// test prints the logs of the processes it ran.
const (
	failureLines   = 12
	failureLineLen = 300
	maxFailures    = 20
)

// messageLine matches the first line of a t.Log or t.Error message as go
// test prints it, "    name_test.go:123: text"; continuation lines are
// indented further and have no file name.
var messageLine = regexp.MustCompile(`^    [\w.-]+\.go:\d+: `)

// run filters the events of r onto w and returns the exit code.
func run(r io.Reader, w io.Writer) int {
	s := summary{output: make(map[string][]string), running: make(map[string]runningTest)}
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
	// go test itself killed or the pipe cut: whatever still runs never
	// finished.
	s.unfinishedIn("", "the test stream ended while it was running", w)
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
		s.unfinishedIn(e.Package, "still running when the package failed", w)
	case e.Test == "" && e.Action == "pass":
		s.unfinishedIn(e.Package, "still running when the package passed", w)
	case e.Test == "":
	case e.Action == "run":
		s.running[key] = runningTest{e.Package, e.Test, len(s.running)}
	case e.Action == "output":
		s.output[key] = append(s.output[key], e.Output)
	case e.Action == "pass":
		s.passed++
		s.finished(key, e)
	case e.Action == "fail":
		s.failed++
		for _, o := range s.output[key] {
			io.WriteString(w, o)
		}
		s.failures = append(s.failures, failure{e.Package, e.Test, messages(s.output[key])})
		s.finished(key, e)
	case e.Action == "skip":
		s.skipped++
		s.skips = append(s.skips, skip{e.Package, e.Test, reason(s.output[key])})
		s.finished(key, e)
	}
}

// finished forgets a test that has its result and keeps its duration.
func (s *summary) finished(key string, e event) {
	delete(s.output, key)
	delete(s.running, key)
	if !strings.Contains(e.Test, "/") { // a subtest's time is its parent's too
		s.durations = append(s.durations, duration{e.Package, e.Test, e.Elapsed})
	}
}

// unfinishedIn reports, as failures, the tests of pkg (of every package
// when pkg is empty) that started and have no result: a package that
// timed out or panicked ends without one for the tests it was running.
// For each it prints the test's last own output lines, then what the test
// binary said about the end (go test's "panic: test timed out after …"
// with its list of running tests, or the panic) and the goroutine that
// runs the test, so that the log names what hung and where.
func (s *summary) unfinishedIn(pkg, why string, w io.Writer) {
	var tests []runningTest
	for _, r := range s.running {
		if pkg == "" || r.Package == pkg {
			tests = append(tests, r)
		}
	}
	sort.Slice(tests, func(i, j int) bool { return tests[i].order < tests[j].order })
	for _, r := range tests {
		key := r.Package + " " + r.Test
		s.failed++
		s.unfinished = append(s.unfinished, unfinished{r.Package, r.Test, why})
		fmt.Fprintf(w, "--- UNFINISHED: %s %s (%s)\n", r.Package, r.Test, why)
		own, end := splitEnd(s.output[key])
		if len(own) > tailLines {
			fmt.Fprintf(w, "    (%d earlier lines of its output left out)\n", len(own)-tailLines)
			own = own[len(own)-tailLines:]
		}
		for _, o := range own {
			io.WriteString(w, o)
		}
		for _, o := range testGoroutine(end, r.Test) {
			io.WriteString(w, o)
		}
		delete(s.output, key)
		delete(s.running, key)
	}
}

// splitEnd splits a test's output lines at the test binary's own report
// of its end: a line starting with "panic: " (a timeout is reported as
// "panic: test timed out after …") or "fatal error: ".
func splitEnd(lines []string) (own, end []string) {
	for i, l := range lines {
		if strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ") {
			return lines[:i], lines[i:]
		}
	}
	return lines, nil
}

// testGoroutine keeps of a test binary's end report its header (up to the
// first blank line: the panic and, for a timeout, the running tests) and
// the stack of each goroutine that has the test function in it.
func testGoroutine(end []string, test string) []string {
	if len(end) == 0 {
		return nil
	}
	var out []string
	i := 0
	for ; i < len(end) && strings.TrimSpace(end[i]) != ""; i++ {
		out = append(out, end[i])
	}
	// The test function's frame, "pkg.TestName(0x…)", or a function
	// literal in it, "pkg.TestName.func1(…)", which runs subtests and
	// the goroutines a test starts.
	top, _, _ := strings.Cut(test, "/")
	frame, literal := "."+top+"(", "."+top+".func"
	for i < len(end) {
		for i < len(end) && strings.TrimSpace(end[i]) == "" {
			i++
		}
		j := i
		for j < len(end) && strings.TrimSpace(end[j]) != "" {
			j++
		}
		block := end[i:j]
		for _, l := range block {
			if strings.Contains(l, frame) || strings.Contains(l, literal) {
				out = append(out, "\n")
				out = append(out, block...)
				break
			}
		}
		i = j
	}
	return out
}

// messages returns the last failureLines message lines of a test's
// output, each cut at failureLineLen bytes.
func messages(output []string) []string {
	var out []string
	for _, o := range output {
		if !messageLine.MatchString(o) {
			continue
		}
		l := strings.TrimRight(o, "\n")
		if len(l) > failureLineLen {
			l = l[:failureLineLen] + " …"
		}
		out = append(out, l)
	}
	if len(out) > failureLines {
		out = out[len(out)-failureLines:]
	}
	return out
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
	sort.SliceStable(s.durations, func(i, j int) bool { return s.durations[i].Seconds > s.durations[j].Seconds })
	for i, d := range s.durations {
		if i == slowest || d.Seconds < 1 {
			break
		}
		fmt.Fprintf(w, "SLOW %s %s: %.1fs\n", d.Package, d.Test, d.Seconds)
	}
	for i, f := range s.failures {
		if i == maxFailures {
			fmt.Fprintf(w, "FAIL … and %d more failed tests (their output is above)\n", len(s.failures)-maxFailures)
			break
		}
		fmt.Fprintf(w, "FAIL %s %s, its last messages:\n", f.Package, f.Test)
		for _, m := range f.Messages {
			fmt.Fprintf(w, "%s\n", m)
		}
	}
	for _, u := range s.unfinished {
		fmt.Fprintf(w, "UNFINISHED %s %s: %s (its output is above, under --- UNFINISHED)\n", u.Package, u.Test, u.Why)
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
