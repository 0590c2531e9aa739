package vmastats

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// FilePrefix is the name prefix of libvma statistics files.
const FilePrefix = "vmastat."

// ErrNoDir says none of the statistics directories exists.
var ErrNoDir = errors.New("no libvma statistics directory exists")

// Candidate is a file whose name looks like a statistics file. Nothing
// about it has been checked yet.
type Candidate struct {
	Path string
	PID  int
}

// Discover lists the vmastat.<pid> entries of dirs, sorted by directory
// order and then pid. It only reads directory entries, never a file. A
// directory that does not exist is skipped; if none exists the error is
// ErrNoDir. An unreadable directory is an error.
func Discover(dirs []string) ([]Candidate, error) {
	var out []Candidate
	found := 0
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("listing libvma statistics directory: %w", err)
		}
		found++
		start := len(out)
		for _, e := range entries {
			if pid, ok := ParseName(e.Name()); ok {
				out = append(out, Candidate{Path: filepath.Join(dir, e.Name()), PID: pid})
			}
		}
		part := out[start:]
		sort.Slice(part, func(i, j int) bool { return part[i].PID < part[j].PID })
	}
	if found == 0 {
		return nil, fmt.Errorf("%w: %s", ErrNoDir, strings.Join(dirs, ", "))
	}
	return out, nil
}

// ParseName returns the pid of a file name vmastat.<pid>. Only plain
// decimal pids in the kernel's range are accepted.
func ParseName(name string) (int, bool) {
	s, ok := strings.CutPrefix(name, FilePrefix)
	if !ok || s == "" || len(s) > 10 || s[0] == '0' {
		return 0, false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	pid, err := strconv.Atoi(s)
	if err != nil || pid <= 0 || pid > 1<<22 {
		return 0, false
	}
	return pid, true
}
