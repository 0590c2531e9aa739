package exposition

import (
	"bytes"
	"fmt"
	"strings"
)

// Check checks a text exposition (FormatText, as Snapshot.String
// renders it) for what a registry of client_golang refuses at Gather and
// what Prometheus would drop or reject at a scrape: a series (name and
// labels) twice, a family whose HELP or TYPE line is repeated or whose
// samples are split by another family, a sample of a family other than
// the one its TYPE line announced (a summary's or histogram's _sum,
// _count and _bucket samples belong to it), and a line that is no sample. The
// renderer cannot produce these from one Builder; two collectors, or one
// collector adding the same labels twice, can. It returns an error naming
// the first lines at fault, at most ten.
func Check(text []byte) error {
	var problems []string
	add := func(format string, args ...any) {
		if len(problems) < 10 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	seen := make(map[string]int)     // series -> line
	done := make(map[string]bool)    // families whose block ended
	declared := make(map[string]int) // "HELP name" / "TYPE name" -> line
	current, currentType := "", ""
	for i, line := range bytes.Split(text, []byte("\n")) {
		n := i + 1
		if len(line) == 0 {
			continue
		}
		if line[0] == '#' {
			f := strings.Fields(string(line))
			if len(f) < 3 || (f[1] != "HELP" && f[1] != "TYPE") {
				continue // a comment
			}
			key, name := f[1]+" "+f[2], f[2]
			if f[1] == "TYPE" && len(f) > 3 && name == current {
				currentType = f[3]
			}
			if at, ok := declared[key]; ok {
				add("line %d: %s repeated (first at line %d)", n, key, at)
			}
			declared[key] = n
			if name != current {
				if current != "" {
					done[current] = true
				}
				if done[name] {
					add("line %d: family %s continues after another family", n, name)
				}
				current, currentType = name, ""
				if f[1] == "TYPE" && len(f) > 3 {
					currentType = f[3]
				}
			}
			continue
		}
		s := string(line)
		sp := strings.LastIndexByte(s, ' ')
		if sp <= 0 {
			add("line %d: %q is no sample", n, s)
			continue
		}
		series := s[:sp]
		name := series
		if j := strings.IndexByte(series, '{'); j >= 0 {
			name = series[:j]
		}
		if name != current && !partOf(name, current, currentType) {
			add("line %d: sample of %s in the block of family %q", n, name, current)
		}
		if at, ok := seen[series]; ok {
			add("line %d: series %s repeated (first at line %d)", n, series, at)
			continue
		}
		seen[series] = n
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("exposition: %s", strings.Join(problems, "; "))
}

// partOf reports whether a sample named name belongs to the summary or
// histogram family: its _sum and _count, and a histogram's _bucket.
func partOf(name, family, typ string) bool {
	switch typ {
	case "summary":
		return name == family+"_sum" || name == family+"_count"
	case "histogram":
		return name == family+"_sum" || name == family+"_count" || name == family+"_bucket"
	}
	return false
}
