package kmsg

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/internal/logrules"
)

// corpusFile is the public corpus of real kernel log lines (see its
// README.md).
var corpusFile = filepath.Join("..", "..", "testdata", "realworld", "kmsg", "kmsg_lines.tsv")

type corpusLine struct {
	n                                    int // line number in the file
	line, expected, device, source, note string
}

func readCorpus(t *testing.T) []corpusLine {
	t.Helper()
	f, err := os.Open(corpusFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []corpusLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		if n == 1 {
			if sc.Text() != "line\texpected\tnew\tdevice\tsource\tnote" {
				t.Fatalf("%s: unexpected header %q", corpusFile, sc.Text())
			}
			continue
		}
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) != 6 {
			t.Fatalf("%s:%d: %d columns, want 6", corpusFile, n, len(cols))
		}
		out = append(out, corpusLine{n: n, line: cols[0], expected: cols[1], device: cols[3], source: cols[4], note: cols[5]})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// corpusDevices are the PCI classes of testdata/corpus_pci_classes.txt;
// it knows no RDMA device, so RDMA names stay as the lines print them.
type corpusDevices map[string]uint32

func (d corpusDevices) PCIClass(addr string) (uint32, bool) { c, ok := d[addr]; return c, ok }
func (corpusDevices) RDMAFunction(string) (string, bool)    { return "", false }
func (corpusDevices) NetInterface(string) (string, bool)    { return "", false }

func readCorpusClasses(t *testing.T) corpusDevices {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "corpus_pci_classes.txt"))
	if err != nil {
		t.Fatal(err)
	}
	d := make(corpusDevices)
	for i, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		c, err := parseClass(f[1])
		if len(f) < 2 || !logrules.IsPCIAddress(f[0]) || err != nil {
			t.Fatalf("corpus_pci_classes.txt:%d: bad line %q", i+1, l)
		}
		d[f[0]] = c
	}
	return d
}

// TestKmsgRealWorldCorpus runs every line of the public corpus, with the
// prefixes of the tools that printed it stripped by logrules.StripPrefix,
// through the kmsg collector's real record path and the built-in rules,
// and checks each line's expectation: the event counted once with the
// expected driver-attributed device, or nothing counted for a benign line.
// It reports recall (expected events counted right) and precision (counts
// that were expected).
func TestKmsgRealWorldCorpus(t *testing.T) {
	lines := readCorpus(t)
	if len(lines) < 80 {
		t.Fatalf("corpus has %d lines, want at least 80", len(lines))
	}
	k := New(Config{
		Open:  func() (Device, error) { return newFakeKmsg(), nil },
		Rules: kernelEngine(t), Replay: true, Devices: readCorpusClasses(t),
	}, zap.NewNop())
	var events, recalled, benign, benignCounted, counted, wrong int
	for i, cl := range lines {
		msg := logrules.StripPrefix(cl.line)
		before := snapshotCounts(k)
		// A record as /dev/kmsg returns it, level 3, with the message.
		k.record([]byte(fmt.Sprintf("3,%d,%d,-;%s\n", i+1, 1000*(i+1), msg)))
		got := diffCounts(before, snapshotCounts(k))
		if len(got) > 0 {
			counted++
		}
		if cl.expected == "benign" {
			benign++
			if len(got) > 0 {
				wrong++
				benignCounted++
				t.Errorf("line %d: benign line counted as %v: %q", cl.n, got, cl.line)
			}
			continue
		}
		events++
		want := kmsgKey{event: cl.expected, device: cl.device}
		if len(got) == 1 && got[0].event == want.event && got[0].device == want.device {
			recalled++
			continue
		}
		if len(got) > 0 {
			wrong++
		}
		t.Errorf("line %d: counted %v, want event %s on device %q: %q (stripped %q)", cl.n, got, cl.expected, cl.device, cl.line, msg)
	}
	precision := 1.0
	if counted > 0 {
		precision = float64(counted-wrong) / float64(counted)
	}
	t.Logf("corpus: %d lines, %d events, %d benign; recall %d/%d (%.1f%%), benign lines counted %d, precision %d/%d (%.1f%%)",
		len(lines), events, benign, recalled, events, 100*float64(recalled)/float64(events),
		benignCounted, counted-wrong, counted, 100*precision)
	if benign*3 < len(lines) {
		t.Errorf("%d of %d lines benign, want at least a third", benign, len(lines))
	}

	// The exposition of the whole corpus: fixed metric names without
	// numbers, counters typed as counters and named _total.
	out := pollText(t, k)
	checkExposition(t, out)
}

var typeLine = regexp.MustCompile(`^# TYPE (\S+) (\S+)$`)

func checkExposition(t *testing.T, out string) {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		m := typeLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		name, typ := m[1], m[2]
		if strings.ContainsAny(name, "0123456789") {
			t.Errorf("metric name %s contains a number", name)
		}
		if strings.HasSuffix(name, "_total") != (typ == "counter") {
			t.Errorf("metric %s has type %s", name, typ)
		}
	}
}

func snapshotCounts(k *Collector) map[kmsgKey]uint64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make(map[kmsgKey]uint64, len(k.counts))
	for key, c := range k.counts {
		out[key] = c.n
	}
	return out
}

func diffCounts(before, after map[kmsgKey]uint64) []kmsgKey {
	var out []kmsgKey
	for key, n := range after {
		if n != before[key] {
			out = append(out, key)
		}
	}
	return out
}
