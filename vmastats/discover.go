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
	"syscall"
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
// order and then pid. It only reads the names in the directories: no
// file is opened or stat'ed, so a directory filled with junk (the default
// /tmp is world-writable) costs one getdents pass. A directory is opened
// only if it is one (O_DIRECTORY, without blocking). A directory that does
// not exist is skipped; if none exists the error is ErrNoDir. An
// unreadable directory is an error.
func Discover(dirs []string) ([]Candidate, error) {
	var out []Candidate
	found := 0
	for _, dir := range dirs {
		names, err := readNames(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("listing libvma statistics directory: %w", err)
		}
		found++
		start := len(out)
		for _, name := range names {
			if pid, ok := ParseName(name); ok {
				out = append(out, Candidate{Path: filepath.Join(dir, name), PID: pid})
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

// readNames returns the names in dir without a stat of any of them (as
// os.ReadDir does on file systems that do not report the entry type).
func readNames(dir string) ([]string, error) {
	f, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// ParseName returns the pid of a file name vmastat.<pid>. Only plain
// decimal pids in the kernel's range are accepted.
func ParseName(name string) (int, bool) { return ParseNameWithPrefix(name, FilePrefix) }

// ParseNameWithPrefix returns the pid of a file name <prefix><pid>, such
// as libxlio's xliostat.<pid>, under the rules of ParseName.
func ParseNameWithPrefix(name, prefix string) (int, bool) {
	s, ok := strings.CutPrefix(name, prefix)
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
