package kernelpkgs

import "strings"

// CompareVersions orders two Debian package versions as dpkg does
// (deb-version(5): epoch, upstream version, Debian revision; within each
// part, alternating runs of non-digits compared character by character,
// where '~' sorts before everything, even the end of the part, and letters
// before other characters, and runs of digits compared as numbers). It
// returns -1, 0 or +1.
//
// The algorithm is written here rather than taken from a library because
// its only users are the test harness and CI's install step: a module for
// it would enter the exporter's go.mod for a test helper. TestCompareVersions
// checks it against dpkg --compare-versions itself.
func CompareVersions(a, b string) int {
	ae, au, ar := splitVersion(a)
	be, bu, br := splitVersion(b)
	if c := compareNumeric(ae, be); c != 0 {
		return c
	}
	if c := comparePart(au, bu); c != 0 {
		return c
	}
	return comparePart(ar, br)
}

// splitVersion splits [epoch:]upstream[-revision]; the revision is what
// follows the last hyphen.
func splitVersion(v string) (epoch, upstream, revision string) {
	epoch = "0"
	if e, rest, ok := strings.Cut(v, ":"); ok {
		epoch, v = e, rest
	}
	if i := strings.LastIndexByte(v, '-'); i >= 0 {
		return epoch, v[:i], v[i+1:]
	}
	return epoch, v, ""
}

// comparePart compares an upstream version or a revision.
func comparePart(a, b string) int {
	for a != "" || b != "" {
		var an, bn string
		an, a = span(a, false)
		bn, b = span(b, false)
		if c := compareLexical(an, bn); c != 0 {
			return c
		}
		an, a = span(a, true)
		bn, b = span(b, true)
		if c := compareNumeric(an, bn); c != 0 {
			return c
		}
	}
	return 0
}

// span splits s after its leading run of digits (digits true) or
// non-digits.
func span(s string, digits bool) (run, rest string) {
	i := 0
	for i < len(s) && isDigit(s[i]) == digits {
		i++
	}
	return s[:i], s[i:]
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// order is dpkg's weight of one character of a non-digit run: '~' lowest,
// the end of the run next, then letters, then everything else.
func order(c byte) int {
	switch {
	case c == '~':
		return -1
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		return int(c)
	default:
		return int(c) + 256
	}
}

func compareLexical(a, b string) int {
	for i := 0; i < len(a) || i < len(b); i++ {
		var oa, ob int // 0: the end of the run
		if i < len(a) {
			oa = order(a[i])
		}
		if i < len(b) {
			ob = order(b[i])
		}
		if oa != ob {
			return sign(oa - ob)
		}
	}
	return 0
}

// compareNumeric compares two runs of digits as numbers of any length;
// an empty run is 0.
func compareNumeric(a, b string) int {
	a = strings.TrimLeft(a, "0")
	b = strings.TrimLeft(b, "0")
	if len(a) != len(b) {
		return sign(len(a) - len(b))
	}
	return strings.Compare(a, b)
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}
