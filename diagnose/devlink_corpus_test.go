package diagnose

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// reporterLine is a reporter's first line in `devlink health show` text:
// "reporter NAME" (iproute2 since 2019) or "name NAME" (before).
var reporterLine = regexp.MustCompile(`^\s+(?:reporter|name) (\S+)\s*$`)

// stateLine is the state line under a reporter.
var stateLine = regexp.MustCompile(`^\s+state (\S+) error (\d+) recover (\d+)`)

// TestRealWorldDevlinkHealth reads every `devlink health show` transcript
// of the shared real-world corpus (testdata/realworld/devlink, printed by
// other people's machines and kernels from 2019 to 2025) as a bundle file:
// each must be recognised as devlink health output, and the reporters
// diagnose parses must be the ones the transcript prints, with their
// state and counts, in order. The transcripts of other commands
// (`devlink health diagnose`, `devlink dev info`) are not formats diagnose
// reads for findings and must yield none.
func TestRealWorldDevlinkHealth(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "testdata", "realworld", "devlink", "*.txt"))
	if err != nil || len(files) < 6 {
		t.Fatalf("devlink corpus: %d files, %v", len(files), err)
	}
	e := rules(t)
	alerts := alertRules(t)
	shows := 0
	for _, p := range files {
		t.Run(filepath.Base(p), func(t *testing.T) {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			text := string(data)
			// What the transcript prints, read line by line: the
			// reporters of `devlink health` / `devlink health show`
			// output.
			type rep struct{ name, state, errs, recs string }
			var want []rep
			lines := strings.Split(text, "\n")
			for i, l := range lines {
				if m := reporterLine.FindStringSubmatch(l); m != nil && i+1 < len(lines) {
					if s := stateLine.FindStringSubmatch(lines[i+1]); s != nil {
						want = append(want, rep{m[1], s[1], s[2], s[3]})
					}
				}
			}
			r := NewAnalyzer(e, alerts, nil).Analyze(bundleOf(t, map[string]string{"devlink_health.txt": text}))
			if len(want) == 0 {
				if len(r.Findings) != 0 {
					t.Errorf("findings from a transcript without health show output: %+v", r.Findings)
				}
				return
			}
			shows++
			if len(r.Files) != 1 || r.Files[0].Kind != KindDevlinkHealth || r.Files[0].Note != "" {
				t.Fatalf("files: %+v, want one %q file", r.Files, KindDevlinkHealth)
			}
			got, err := ParseDevlinkHealth(text)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d reporters parsed, the transcript prints %d: %+v", len(got), len(want), got)
			}
			for i, g := range got {
				w := want[i]
				if g.Name != w.name || g.State != w.state || strconv.FormatUint(g.Errors, 10) != w.errs || strconv.FormatUint(g.Recover, 10) != w.recs {
					t.Errorf("reporter %d: parsed %s %s error %d recover %d, transcript %+v", i, g.Name, g.State, g.Errors, g.Recover, w)
				}
			}
		})
	}
	if shows < 5 {
		t.Errorf("only %d transcripts with health show output", shows)
	}
}
