package diagnose

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Escape returns s with every character a terminal acts on instead of
// showing replaced by an escape, so text from a bundle can neither move
// the cursor, erase or hide output, set the window title nor start a
// line of its own: C0 controls and DEL become \a, \b, \t, \n, \v, \f, \r
// or \xNN, C1 controls, the Unicode bidirectional formatting characters
// and the line and paragraph separators \uNNNN, and bytes that are not
// UTF-8 (a raw 8-bit control among them) \xNN. Everything else is kept,
// backslashes too, so a name that an error message already quoted with
// %q (which escapes the same characters) is not escaped twice.
func Escape(s string) string {
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if unsafeRune(r, n) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case !unsafeRune(r, n):
			b.WriteString(s[i : i+n])
		case r == utf8.RuneError:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x80:
			if c := strings.IndexByte("\a\b\t\n\v\f\r", byte(r)); c >= 0 {
				b.WriteByte('\\')
				b.WriteByte("abtnvfr"[c])
			} else {
				fmt.Fprintf(&b, `\x%02x`, r)
			}
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += n
	}
	return b.String()
}

// unsafeRune reports whether the rune r, n bytes long in its string,
// must be escaped: see Escape.
func unsafeRune(r rune, n int) bool {
	switch {
	case r == utf8.RuneError && n == 1:
		return true // not UTF-8
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true // C0, DEL, C1
	case r == '\u061c', r == '\u200e', r == '\u200f', r >= '\u202a' && r <= '\u202e', r >= '\u2066' && r <= '\u2069':
		return true // bidirectional formatting (UAX #9)
	case r == '\u2028', r == '\u2029':
		return true // line and paragraph separators
	}
	return false
}
