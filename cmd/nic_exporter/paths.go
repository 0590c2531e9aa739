package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// checkPaths refuses paths given explicitly on the command line that
// cannot be what their flag says: a typo would otherwise read as "nothing
// to collect" (the collector up, no series), and a wrong procfs would
// make every live VMA process look stale. The defaults (/proc, /tmp,
// /dev/kmsg) are not checked: where they are absent there is nothing to
// collect. Only the paths of enabled collectors are checked. Nothing is
// opened: a FIFO given as a path must not block the startup.
func (o *options) checkPaths() error {
	enabled := make(map[string]bool)
	for _, cf := range o.collectors {
		enabled[cf.spec.name] = cf.enabled
	}
	x := &o.extra
	if o.procfsSet {
		if err := checkProcfs(o.procfs); err != nil {
			return fmt.Errorf("--path.procfs: %w", err)
		}
	}
	if x.vmaDirsSet && enabled["vma"] {
		for _, d := range x.vmaDirs {
			if err := checkDir(d); err != nil {
				return fmt.Errorf("--collector.vma.stats-dir: %w", err)
			}
		}
	}
	if x.kmsgPathSet && enabled["kmsg"] {
		st, err := os.Stat(x.kmsgPath)
		if err != nil {
			return fmt.Errorf("--collector.kmsg.path: %w", err)
		}
		if st.Mode()&fs.ModeCharDevice == 0 {
			return fmt.Errorf("--collector.kmsg.path: %s is not a character device", x.kmsgPath)
		}
	}
	if enabled["applog"] {
		for _, g := range x.applogFiles {
			if err := checkGlobDir(g); err != nil {
				return fmt.Errorf("--collector.applog.files %q: %w", g, err)
			}
		}
	}
	return nil
}

// checkProcfs checks that dir looks like a procfs: a directory with the
// stat file (the boot time) and self (the reader's own process).
func checkProcfs(dir string) error {
	if err := checkDir(dir); err != nil {
		return err
	}
	for _, name := range []string{"stat", "self"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("%s is not a procfs: %w", dir, err)
		}
	}
	return nil
}

func checkDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	return nil
}

// checkGlobDir checks that the directory part of a glob names at least
// one directory; files that appear later in it are followed.
func checkGlobDir(glob string) error {
	dir := filepath.Dir(glob)
	if !strings.ContainsAny(dir, `*?[\`) {
		return checkDir(dir)
	}
	matches, err := filepath.Glob(dir)
	if err != nil {
		return err
	}
	for _, m := range matches {
		if checkDir(m) == nil {
			return nil
		}
	}
	return fmt.Errorf("no directory matches %s", dir)
}
