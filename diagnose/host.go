package diagnose

import (
	"path"
	"strconv"
	"strings"
)

// Kinds of the files that say which host the bundle is of.
const (
	KindUname     = "uname"
	KindOSRelease = "os-release"
)

// Host is what the bundle says of its host: the kernel (uname -a or -r,
// as collect_debug.sh and collect write uname.txt) and the distribution
// (os-release's PRETTY_NAME).
type Host struct {
	Kernel string `json:"kernel,omitempty"`
	OS     string `json:"os,omitempty"`
}

// isUname reports whether a one-line file is uname output: `uname -a`
// ("Linux HOST RELEASE ..."), or a bare release in a file named uname*.
func isUname(name string, ls []string) bool {
	ls = uncommented(ls)
	if len(ls) != 1 {
		return false
	}
	f := strings.Fields(ls[0])
	switch {
	case len(f) >= 3 && f[0] == "Linux":
		return true
	case len(f) == 1 && strings.HasPrefix(path.Base(name), "uname"):
		return kernelRelease(f[0])
	}
	return false
}

// kernelRelease reports whether s looks like a kernel release: it starts
// with MAJOR.MINOR.
func kernelRelease(s string) bool {
	maj, rest, ok := strings.Cut(s, ".")
	if !ok {
		return false
	}
	_, err1 := strconv.Atoi(maj)
	minor := strings.FieldsFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
	return err1 == nil && len(minor) > 0 && strings.HasPrefix(rest, minor[0])
}

// uncommented returns the lines that are not empty or "#" comments (a
// fixture's source header).
func uncommented(ls []string) []string {
	var out []string
	for _, l := range ls {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
			out = append(out, t)
		}
	}
	return out
}

// parseUname returns the kernel release of uname output (lines as isUname
// accepted them).
func parseUname(ls []string) string {
	f := strings.Fields(uncommented(ls)[0])
	if len(f) >= 3 && f[0] == "Linux" {
		return f[2]
	}
	return f[0]
}

// isOSRelease reports whether lines are an os-release file (os-release(5)):
// a PRETTY_NAME or NAME and an ID assignment.
func isOSRelease(ls []string) bool {
	var name, id bool
	for _, l := range ls {
		name = name || strings.HasPrefix(l, "PRETTY_NAME=") || strings.HasPrefix(l, "NAME=")
		id = id || strings.HasPrefix(l, "ID=")
	}
	return name && id
}

// parseOSRelease returns PRETTY_NAME, else NAME VERSION, of an os-release
// file, its shell quoting removed.
func parseOSRelease(ls []string) string {
	vals := map[string]string{}
	for _, l := range ls {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			continue
		}
		if u, err := strconv.Unquote(v); err == nil {
			v = u
		} else {
			v = strings.Trim(v, `'"`)
		}
		vals[k] = v
	}
	if p := vals["PRETTY_NAME"]; p != "" {
		return p
	}
	return strings.TrimSpace(vals["NAME"] + " " + vals["VERSION"])
}
