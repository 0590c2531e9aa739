package main

import (
	"bytes"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Arches are the Linux architectures of a release, as GOARCH, Debian and
// OCI name them.
var Arches = []string{"amd64", "arm64"}

// Config says what to build and where.
type Config struct {
	// Root is the repository root, Out the output directory (removed and
	// recreated).
	Root, Out string
	// Version is the release version without a leading "v"; Revision the
	// full commit hash and Branch its branch, stamped into the binary.
	Version, Revision, Branch string
	// Epoch dates every file of every artifact and the image.
	Epoch time.Time
	// Log prints one progress line; nil prints nothing.
	Log func(format string, args ...any)
}

func (c Config) logf(format string, args ...any) {
	if c.Log != nil {
		c.Log(format, args...)
	}
}

// ConfigFromGit reads version, revision, branch and commit time of the
// checkout at root. The version is the tag without its "v" when HEAD is
// tagged (v0.1.0 gives 0.1.0, three commits later 0.1.0-3-g<hash>), and
// 0.0.0-dev.<commit time>.<short hash> before the first tag, a version
// that sorts below every release in dpkg, rpm and semver. sourceDateEpoch,
// when not empty, overrides the commit time as the files' date.
func ConfigFromGit(root, sourceDateEpoch string) (Config, error) {
	git := func(args ...string) (string, error) {
		var stderr bytes.Buffer
		cmd := exec.Command("git", append([]string{"-C", root}, args...)...)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
		}
		return strings.TrimSpace(string(out)), nil
	}
	c := Config{Root: root}
	var err error
	if c.Revision, err = git("rev-parse", "HEAD"); err != nil {
		return c, err
	}
	if c.Branch, err = git("rev-parse", "--abbrev-ref", "HEAD"); err != nil {
		return c, err
	}
	ct, err := git("log", "-1", "--format=%ct", "HEAD")
	if err != nil {
		return c, err
	}
	if sourceDateEpoch != "" {
		ct = sourceDateEpoch
	}
	secs, err := strconv.ParseInt(ct, 10, 64)
	if err != nil {
		return c, fmt.Errorf("commit time or SOURCE_DATE_EPOCH %q: %w", ct, err)
	}
	c.Epoch = time.Unix(secs, 0).UTC()
	if tag, err := git("describe", "--tags", "--match", "v[0-9]*"); err == nil {
		c.Version = strings.TrimPrefix(tag, "v")
	} else {
		c.Version = fmt.Sprintf("0.0.0-dev.%s.%s", c.Epoch.Format("20060102150405"), c.Revision[:12])
	}
	return c, nil
}
