package nodehealth

import (
	"fmt"
	"strings"
)

// Output formats of Report.
const (
	// FormatText is for people: a summary line, then one line per true
	// condition with its message.
	FormatText = "text"
	// FormatNHC is for an LBNL NHC check (check_cmd_output): one line,
	// "OK" or the reason.
	FormatNHC = "nhc"
	// FormatNPD is for a node-problem-detector custom plugin: one line
	// of at most the plugin's max_output_length characters.
	FormatNPD = "npd"
)

// Formats lists the output formats.
func Formats() []string { return []string{FormatText, FormatNHC, FormatNPD} }

// Exit statuses of Report, which are node-problem-detector's: 0 OK,
// 1 NonOK, 2 Unknown (k8s.io/node-problem-detector
// pkg/custompluginmonitor/types: OK, NonOK, Unknown).
const (
	ExitOK        = 0
	ExitUnhealthy = 1
	ExitUnknown   = 2
)

// DefaultNPDMaxOutput is node-problem-detector's default
// max_output_length: it cuts a plugin's output to this many bytes for the
// condition's message.
const DefaultNPDMaxOutput = 80

// Report renders the verdict v, or the error that kept it from being
// read, in format, and returns the text and the exit status. maxLen
// bounds the one line of FormatNPD (0 means DefaultNPDMaxOutput).
func Report(v *Verdict, err error, format string, maxLen int) (string, int) {
	code := ExitUnknown
	line := ""
	switch {
	case err != nil:
		line = "UNKNOWN: " + err.Error()
	case v.Status == VerdictOK:
		code, line = ExitOK, "OK: "+v.Reason
	case v.Status == VerdictUnhealthy:
		code, line = ExitUnhealthy, "UNHEALTHY: "+v.Reason
	default:
		line = "UNKNOWN: " + v.Reason
	}
	line = strings.Join(strings.Fields(line), " ")
	switch format {
	case FormatNPD:
		if maxLen <= 0 {
			maxLen = DefaultNPDMaxOutput
		}
		// NPD shows the message as the condition's; its OK message
		// comes from the monitor config, so the status word is
		// dropped, and the message cut to what NPD keeps, on a
		// character boundary.
		_, msg, _ := strings.Cut(line, ": ")
		return cut(msg, maxLen) + "\n", code
	case FormatNHC:
		if code == ExitOK {
			return "OK\n", code
		}
		return line + "\n", code
	}
	var b strings.Builder
	b.WriteString(line + "\n")
	if err == nil {
		for _, c := range v.Conditions {
			if c.Status == StatusTrue {
				fmt.Fprintf(&b, "  %s (%s, %s): %s\n", c.Type, c.Reason, c.Severity, c.Message)
			}
		}
	}
	return b.String(), code
}

// cut returns s cut to at most n bytes, on a character boundary, with
// "..." at the end when it was cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 3 {
		return strings.ToValidUTF8(s[:n], "")
	}
	return strings.ToValidUTF8(s[:n-3], "") + "..."
}
