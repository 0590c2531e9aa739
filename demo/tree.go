package demo

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// A tree file describes a directory tree in reviewable text, in the manner
// of txtar: a line "-- path --" starts a file whose content is the lines up
// to the next header, and "-- path -> target --" is a symbolic link. Lines
// before the first header are comments naming the sources of the content.

// entry is one file or link of a tree file.
type entry struct {
	path    string
	target  string // non-empty for a symbolic link
	content string
}

// parseTree parses a tree file.
func parseTree(data string) ([]entry, error) {
	var out []entry
	var cur *entry
	sc := bufio.NewScanner(strings.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		t := sc.Text()
		if strings.HasPrefix(t, "-- ") && strings.HasSuffix(t, " --") && len(t) > 6 {
			name := strings.TrimSpace(t[3 : len(t)-3])
			e := entry{path: name}
			if p, target, ok := strings.Cut(name, " -> "); ok {
				e.path, e.target = strings.TrimSpace(p), strings.TrimSpace(target)
			}
			if e.path == "" || filepath.IsAbs(e.path) || strings.Contains(e.path, "..") {
				return nil, fmt.Errorf("line %d: bad path %q", line, e.path)
			}
			out = append(out, e)
			cur = &out[len(out)-1]
			continue
		}
		if cur == nil {
			continue // comment
		}
		if cur.target != "" {
			return nil, fmt.Errorf("line %d: link %s has content", line, cur.path)
		}
		cur.content += t + "\n"
	}
	return out, sc.Err()
}

// WriteTree parses a tree file and creates its files and links below
// root. Tests use it to build fixture sysfs trees kept in the same
// reviewable form as the demo host.
func WriteTree(root, data string) error {
	entries, err := parseTree(data)
	if err != nil {
		return err
	}
	return writeTree(root, entries)
}

// writeTree creates the entries below root.
func writeTree(root string, entries []entry) error {
	for _, e := range entries {
		p := filepath.Join(root, filepath.FromSlash(e.path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if e.target != "" {
			if err := os.Symlink(e.target, p); err != nil {
				return err
			}
			continue
		}
		if err := os.WriteFile(p, []byte(e.content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// writeAtomic replaces a file's content so readers never see a torn value.
// The new content is written in scratch, a directory on the same file
// system outside the tree, so no temporary name ever shows in a listing.
func writeAtomic(scratch, path, content string) error {
	f, err := os.CreateTemp(scratch, "w")
	if err != nil {
		return err
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		os.Remove(f.Name())
		return err
	}
	return os.Rename(f.Name(), path)
}
