// Package diagnose reads a support bundle (the directory or tarball that
// collect_debug.sh, a sosreport or the exporter's evidence capture writes),
// recognises the tool outputs in it by their content, turns them into the
// series the daemon would export, and evaluates the shipped alerting rules
// (deploy/prometheus/alerts.yml, with the recording rules they read) over
// those series: every sample an alert returns is a finding with the
// alert's name, severity and runbook, the device and the evidence. There
// is no table of conditions here; TestEveryAlertReachable says which
// alerts a bundle can show and why the others cannot (docs/diagnose.md).
//
// It reuses the daemon's parsers and collectors: ethtool dumps go through
// internal/ethtooldump and the ethtool collector, kernel log lines
// through internal/logrules and the kmsg collector; devlink health,
// ethtool DEV, lspci and ibstat outputs become series under the
// collectors' names here (series.go).
//
// The rules are evaluated by internal/ruleeval, with Prometheus' promql,
// rulefmt and template packages as a library. That engine was chosen by
// measurement (docs/benchmarks.md, "diagnose rule engine"): it adds
// 3.5 MB to the 16.7 MB binary, 14 modules to go.mod and about 50 ms of
// CPU to a run. Prometheus' rules package would have added its notifier and
// service discovery (77 modules, 6.2 MB before any use) for a loop of
// instant queries that ruleeval does in a few lines; promtool's test
// machinery is not on user hosts; and nodehealth's evaluator is a small
// hand-kept mirror of a few alerts, the second table this package must
// not have. A bundle is a snapshot, so counters count since boot and
// "for:" cannot be observed; ruleeval's package comment gives the
// semantics, and findings.go the two views of a bundle of two samples.
package diagnose

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/nic-exporter/nic_exporter/internal/safefile"
)

// Limits bound what a bundle may hold, so a hostile or broken archive
// cannot exhaust memory, and how much of it is analysed, so bytes within
// those bounds cannot multiply into work (a file of newlines is millions
// of lines, a file of one line a single regular expression input).
type Limits struct {
	// MaxFileSize is the largest member, in bytes.
	MaxFileSize int64
	// MaxFiles is the most members a bundle may have.
	MaxFiles int
	// MaxTotal is the most bytes all members hold together, the ones
	// skipped included.
	MaxTotal int64

	// MaxLineBytes is the longest line analysed; a longer one is passed
	// over (its line number kept) and noted.
	MaxLineBytes int
	// MaxFileLines is the most lines of one file analysed; the rest of
	// the file is cut and the cut noted.
	MaxFileLines int
	// MaxBundleLines is the most lines analysed in all files together;
	// the files after it is spent are cut or not analysed, and noted.
	MaxBundleLines int
	// MaxBundleTextBytes is the most bytes of text analysed in all files
	// together, the same way: lines within the line limits still cost
	// the kernel log rules time in proportion to their bytes.
	MaxBundleTextBytes int
}

// DefaultLimits are generous for real bundles: collect_debug.sh writes
// fourteen small text files, a sosreport a few thousand. A kernel log
// line is at most 1024 bytes and a few dozen of prefixes; a 64 MiB log
// of real lines has well under a million.
var DefaultLimits = Limits{MaxFileSize: 64 << 20, MaxFiles: 10000, MaxTotal: 512 << 20,
	MaxLineBytes: 4096, MaxFileLines: 1 << 20, MaxBundleLines: 4 << 20, MaxBundleTextBytes: 64 << 20}

// File is one regular file of a bundle, read into memory.
type File struct {
	// Name is the path inside the bundle, slash-separated, without the
	// bundle's top-level directory.
	Name string
	Data []byte
}

// Bundle is the regular files of one support bundle.
type Bundle struct {
	// Source is the path the bundle was read from.
	Source string
	Files  []File
	// Limits are the limits the bundle was read with, which also bound
	// its analysis; a zero MaxLineBytes, MaxFileLines, MaxBundleLines or
	// MaxBundleTextBytes (a Bundle built without Limits) is
	// DefaultLimits' value.
	Limits Limits
}

// withDefaultWork returns lim with DefaultLimits' value for each zero
// bound of the analysis.
func (lim Limits) withDefaultWork() Limits {
	if lim.MaxLineBytes == 0 {
		lim.MaxLineBytes = DefaultLimits.MaxLineBytes
	}
	if lim.MaxFileLines == 0 {
		lim.MaxFileLines = DefaultLimits.MaxFileLines
	}
	if lim.MaxBundleLines == 0 {
		lim.MaxBundleLines = DefaultLimits.MaxBundleLines
	}
	if lim.MaxBundleTextBytes == 0 {
		lim.MaxBundleTextBytes = DefaultLimits.MaxBundleTextBytes
	}
	return lim
}

// InputError says why an input is not a readable bundle. The command
// exits with status 2 on it.
type InputError struct {
	Path   string
	Reason string
}

func (e *InputError) Error() string { return e.Path + ": " + e.Reason }

func inputErr(p, format string, args ...any) error {
	return &InputError{Path: p, Reason: fmt.Sprintf(format, args...)}
}

// Open reads the bundle at p: a directory, or a .tar.gz/.tgz archive
// holding a single top-level directory. Nothing is written to disk; an
// archive is read member by member into memory within lim.
func Open(p string, lim Limits) (*Bundle, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, inputErr(p, "cannot read: %v", errors.Unwrap(err))
	}
	switch {
	case st.IsDir():
		return openDir(p, lim)
	case st.Mode().IsRegular() && (strings.HasSuffix(p, ".tar.gz") || strings.HasSuffix(p, ".tgz")):
		f, err := os.Open(p)
		if err != nil {
			return nil, inputErr(p, "cannot read: %v", err)
		}
		defer f.Close()
		return readTarGz(p, f, lim)
	default:
		return nil, inputErr(p, "not a bundle: want a directory or a .tar.gz/.tgz archive")
	}
}

// openDir reads the regular files under root. A symbolic link is
// followed only when its target stays inside root; one that points out
// of the bundle makes the bundle unreadable.
func openDir(root string, lim Limits) (*Bundle, error) {
	absRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, inputErr(root, "cannot read: %v", err)
	}
	b := &Bundle{Source: root, Limits: lim}
	var total int64
	err = filepath.WalkDir(absRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(absRoot, p)
		if d.Type()&fs.ModeSymlink != 0 {
			target, err := filepath.EvalSymlinks(p)
			if err != nil {
				return fmt.Errorf("symbolic link %s: %w", rel, err)
			}
			if target != absRoot && !strings.HasPrefix(target, absRoot+string(filepath.Separator)) {
				return fmt.Errorf("symbolic link %s points out of the bundle", rel)
			}
			return nil // its target is read where it lies in the bundle
		}
		if d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		if len(b.Files) >= lim.MaxFiles {
			return fmt.Errorf("more than %d files", lim.MaxFiles)
		}
		data, err := safefile.ReadRegular(p, lim.MaxFileSize)
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		total += int64(len(data))
		if total > lim.MaxTotal {
			return fmt.Errorf("more than %d bytes in all", lim.MaxTotal)
		}
		b.Files = append(b.Files, File{Name: filepath.ToSlash(rel), Data: data})
		return nil
	})
	if err != nil {
		return nil, inputErr(root, "%v", err)
	}
	sortFiles(b.Files)
	return b, nil
}

// readTarGz reads a gzip-compressed tar archive with one top-level
// directory. Absolute names, ".." components, links of any kind and
// members larger than the limits are refused before their data is read;
// every member's declared size counts against the limits, the ones
// skipped (the archive's "." directory) included.
func readTarGz(p string, r io.Reader, lim Limits) (*Bundle, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, inputErr(p, "not a gzip archive: %v", err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	b := &Bundle{Source: p, Limits: lim}
	top := ""
	var total int64
	members := 0
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, inputErr(p, "corrupt archive: %v", err)
		}
		members++
		if members > lim.MaxFiles {
			return nil, inputErr(p, "more than %d members", lim.MaxFiles)
		}
		name := h.Name
		if strings.HasPrefix(name, "/") || filepath.IsAbs(name) {
			return nil, inputErr(p, "member %q has an absolute path", name)
		}
		for _, c := range strings.Split(name, "/") {
			if c == ".." {
				return nil, inputErr(p, "member %q leaves the bundle directory", name)
			}
		}
		// Every member's bytes count, whatever its name or type: the
		// reader decompresses what it skips as much as what it keeps.
		if h.Size < 0 || h.Size > lim.MaxFileSize {
			return nil, inputErr(p, "member %q declares %d bytes, more than the limit of %d", name, h.Size, lim.MaxFileSize)
		}
		if total+h.Size > lim.MaxTotal {
			return nil, inputErr(p, "members hold more than %d bytes in all", lim.MaxTotal)
		}
		total += h.Size
		clean := path.Clean(name)
		first, rest, _ := strings.Cut(clean, "/")
		if first == "." {
			continue
		}
		if top == "" {
			top = first
		} else if first != top {
			return nil, inputErr(p, "more than one top-level directory (%q and %q)", top, first)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			continue
		case tar.TypeReg:
		case tar.TypeSymlink, tar.TypeLink:
			return nil, inputErr(p, "member %q is a link; links are not followed in archives", name)
		default:
			return nil, inputErr(p, "member %q is not a regular file or directory", name)
		}
		if rest == "" {
			return nil, inputErr(p, "file %q at the top level; want a single top-level directory", name)
		}
		data := make([]byte, h.Size)
		if _, err := io.ReadFull(tr, data); err != nil {
			return nil, inputErr(p, "corrupt archive: member %q: %v", name, err)
		}
		b.Files = append(b.Files, File{Name: rest, Data: data})
	}
	if top == "" {
		return nil, inputErr(p, "empty archive")
	}
	sortFiles(b.Files)
	return b, nil
}

func sortFiles(fs []File) {
	sort.Slice(fs, func(i, j int) bool { return fs[i].Name < fs[j].Name })
}
