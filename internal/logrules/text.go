package logrules

import "strings"

// StripPrefix returns the kernel message of one line of kernel log text as
// tools print it, without the prefixes they add in front of the message:
//
//   - leading white space (quoted logs, mail);
//   - a console level "<3>";
//   - a dmesg timestamp "[   12.345678]", a dmesg -H relative one
//     "[  +0.005106]" or "[Mar15 18:17]", a dmesg -T date
//     "[Thu Oct 22 08:55:04 2020]";
//   - a syslog or journalctl short prefix "Jul 14 10:10:21 host kernel: "
//     (also with fractional seconds, journalctl -o short-precise), a
//     journalctl -o short-iso or short-iso-precise prefix
//     "2024-01-02T03:04:05+0100 host kernel: ", and a bare "kernel: ";
//   - a syslog line without its date, "host kernel: ";
//   - the host name a parallel shell (pdsh, clush -L) puts before each
//     line of a remote command, "host01: ", when what follows is itself
//     one of these prefixes (so "eth0: renamed from" or a hex dump's
//     "00000030: " is kept).
//
// The prefixes may be combined (a syslog prefix followed by a dmesg
// timestamp, as rsyslog writes kernel lines on some distributions) and are
// removed in any order until none is left. A line without a prefix is
// returned unchanged. The result is what a /dev/kmsg record carries as its
// message, so the kernel rules can run on it.
func StripPrefix(line string) string {
	for {
		rest := strings.TrimLeft(line, " \t")
		rest = stripLevel(rest)
		rest = stripBracket(rest)
		rest = stripSyslog(rest)
		rest = strings.TrimPrefix(rest, "kernel: ")
		rest = stripHost(rest)
		if rest == line {
			return line
		}
		line = rest
	}
}

// stripLevel removes a console level "<N>" (one to three digits).
func stripLevel(s string) string {
	if len(s) < 3 || s[0] != '<' {
		return s
	}
	end := strings.IndexByte(s, '>')
	if end < 2 || end > 4 || !allDigits(s[1:end]) {
		return s
	}
	return s[end+1:]
}

// stripBracket removes a dmesg timestamp in square brackets: seconds since
// boot, a relative "+0.005" or a date. It accepts only digits, spaces, and
// the characters of dates and times inside the brackets, so a message that
// starts with a bracketed word ("[ENA_COM: ...]") is kept.
func stripBracket(s string) string {
	if len(s) < 3 || s[0] != '[' {
		return s
	}
	end := strings.IndexByte(s, ']')
	if end < 2 || end > 40 {
		return s
	}
	inner := strings.TrimSpace(s[1:end])
	if inner == "" || !isTimestamp(inner) {
		return s
	}
	return strings.TrimLeft(s[end+1:], " ")
}

// isTimestamp reports whether s looks like a dmesg timestamp: a number of
// seconds with an optional sign ("12.345678", "+0.005106"), or a date or
// time made of month and weekday names, digits, ':' and spaces.
func isTimestamp(s string) bool {
	digits := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c == '.' || c == ':' || c == ' ' || c == '+' || c == '-' || c == ',':
		case c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z':
			// Only names of months and weekdays: a capital letter followed
			// by two lower-case ones.
			if c < 'A' || c > 'Z' || i+2 >= len(s) || !isLower(s[i+1]) || !isLower(s[i+2]) ||
				(i+3 < len(s) && isLetter(s[i+3])) || !isDateName(s[i:i+3]) {
				return false
			}
			i += 2
		default:
			return false
		}
	}
	return digits > 0
}

// stripSyslog removes "Mon DD hh:mm:ss[.frac] host kernel: " and the ISO
// form "YYYY-MM-DDThh:mm:ss[.frac][zone] host kernel: ". The host is one
// word; the program must be "kernel" (with an optional "[pid]"), so lines
// of other programs keep their prefix and match no kernel rule.
func stripSyslog(s string) string {
	var rest string
	switch {
	case len(s) > 16 && isDateName(s[:3]) && s[3] == ' ':
		// "Jul 14 10:10:21" or "May  7 17:31:25".
		day := s[4:]
		if len(day) < 11 || !allDigits(strings.TrimSpace(day[:2])) || day[2] != ' ' || !isClock(day[3:11]) {
			return s
		}
		rest = skipFraction(day[11:])
	case len(s) > 20 && allDigits(s[:4]) && s[4] == '-' && s[10] == 'T' && isClock(s[11:19]):
		rest = s[19:]
		rest = skipFraction(rest)
		// A zone: "Z", "+0100", "+01:00".
		if strings.HasPrefix(rest, "Z") {
			rest = rest[1:]
		} else if len(rest) > 0 && (rest[0] == '+' || rest[0] == '-') {
			i := 1
			for i < len(rest) && (isDigit(rest[i]) || rest[i] == ':') {
				i++
			}
			rest = rest[i:]
		}
	default:
		return s
	}
	if len(rest) == 0 || rest[0] != ' ' {
		return s
	}
	host, after, ok := strings.Cut(rest[1:], " ")
	if !ok || host == "" {
		return s
	}
	prog, msg, ok := strings.Cut(after, ": ")
	if !ok {
		return s
	}
	if prog != "kernel" && !(strings.HasPrefix(prog, "kernel[") && strings.HasSuffix(prog, "]")) {
		return s
	}
	return msg
}

// skipFraction removes ".123456" after a clock.
func skipFraction(s string) string {
	if len(s) < 2 || s[0] != '.' || !isDigit(s[1]) {
		return s
	}
	i := 1
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return s[i:]
}

// isClock reports whether s is "hh:mm:ss".
func isClock(s string) bool {
	return len(s) == 8 && s[2] == ':' && s[5] == ':' && allDigits(s[:2]) && allDigits(s[3:5]) && allDigits(s[6:])
}

const dateNames = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec Mon Tue Wed Thu Fri Sat Sun"

func isDateName(s string) bool {
	return len(s) == 3 && strings.Contains(dateNames, s) && s[0] >= 'A' && s[0] <= 'Z'
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isLower(c byte) bool  { return c >= 'a' && c <= 'z' }
func isLetter(c byte) bool { return isLower(c) || c >= 'A' && c <= 'Z' }

// stripHost removes a leading host name: "host kernel: " (a syslog line
// without its date), or "host: " before another prefix StripPrefix
// removes (a parallel shell's per-host label). A host name is a word of
// letters, digits, '.', '_' and '-', at most 64 bytes long.
func stripHost(s string) string {
	n := 0
	for n < len(s) && n <= 64 && isHostByte(s[n]) {
		n++
	}
	if n == 0 || n > 64 {
		return s
	}
	rest := s[n:]
	if after, ok := strings.CutPrefix(rest, " kernel: "); ok {
		return after
	}
	after, ok := strings.CutPrefix(rest, ": ")
	if !ok {
		return s
	}
	after = strings.TrimLeft(after, " \t")
	if stripLevel(after) != after || stripBracket(after) != after || stripSyslog(after) != after ||
		strings.HasPrefix(after, "kernel: ") || hasHostKernel(after) {
		return after
	}
	return s
}

// hasHostKernel reports whether s starts with "host kernel: ".
func hasHostKernel(s string) bool {
	i := strings.Index(s, " kernel: ")
	if i <= 0 || i > 64 {
		return false
	}
	for j := 0; j < i; j++ {
		if !isHostByte(s[j]) {
			return false
		}
	}
	return true
}

// isHostByte reports whether c can be part of a host name.
func isHostByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}
