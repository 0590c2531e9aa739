package diagnose

import (
	"archive/tar"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// hostileText is what a hostile bundle puts in names and fields: a
// screen clear, an erase of the line above, a window title, hidden text,
// a carriage return, the 8-bit CSI raw and as UTF-8, DEL, a bidi
// override, and a newline followed by a forged "all clear".
const hostileText = "\x1b[2J\x1b[1A\x1b[2K\x1b]0;pwned\x07\x1b[8mhidden\x1b[0m\rover\x9b1A\u009b2K\x7f\u202eftp\nbundle FORGED: 0 finding(s)"

// checkTerminalSafe fails if out holds a control character other than
// the line ends, a bidi control, or a line the writer did not start.
func checkTerminalSafe(t *testing.T, what, out string, lineOK func(string) bool) {
	t.Helper()
	checkNoControls(t, what, out, '\n')
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if !lineOK(l) || strings.HasPrefix(l, "bundle FORGED") {
			t.Errorf("%s: forged line %q", what, l)
		}
	}
}

// checkNoControls fails if s is not UTF-8 or holds a control character
// other than allowed, or a bidi control.
func checkNoControls(t *testing.T, what, s string, allowed rune) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Errorf("%s: invalid UTF-8 (a raw 8-bit control):\n%q", what, s)
	}
	for i, r := range s {
		if r == allowed {
			continue
		}
		if r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f || bidi(r) || r == '\u2028' || r == '\u2029' {
			t.Errorf("%s: control character %U at byte %d:\n%q", what, r, i, s)
			return
		}
	}
}

// TestTextOutputEscapesControls runs the text output over bundles whose
// member names, ibstat CA names, mlxfwmanager fields and directory
// symbolic link names carry terminal escapes and newlines, and checks
// that stdout and stderr hold them escaped, one line per record.
func TestTextOutputEscapesControls(t *testing.T) {
	ibstat := "CA '" + strings.ReplaceAll(hostileText, "\n", `\n`) + "'\n\tCA type: MT4129\n\tPort 1:\n\t\tState: Down\n\t\tPhysical state: Polling\n\t\tLink layer: InfiniBand\n"
	fw := "Device #1:\n----------\n  Device Type:      ConnectX5" + strings.ReplaceAll(hostileText, "\n", "") + "\n  Part Number:      MNV303212A\r\x1b[2K\n" +
		"  PSID:             MT_" + strings.ReplaceAll(hostileText, "\n", "") + "\n  PCI Device Name:  pci0:6:0:0\n  Versions:         Current        Available\n     FW             16.24.4020\x1b[31m     N/A\x9b\n\n  Status:           No matching image found\n"
	reg := func(name, data string) member { return member{tar.Header{Name: name, Typeflag: tar.TypeReg}, data} }
	tgz := archive(t, []member{
		{tar.Header{Name: "b/", Typeflag: tar.TypeDir, Mode: 0o755}, ""},
		reg("b/ibstat"+hostileText, ibstat),
		reg("b/firmware.txt", fw),
		reg("b/notes"+hostileText, "just text\n"),
	})
	stdoutLine := func(l string) bool { return strings.HasPrefix(l, "bundle ") || strings.HasPrefix(l, "  ") }
	out, errs, code := run(t, "text", tgz)
	if code != ExitFindings || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	checkTerminalSafe(t, "archive stdout", out, stdoutLine)
	if n := strings.Count(out, "\nbundle ") + 1; !strings.HasPrefix(out, "bundle ") || n != 1 {
		t.Errorf("%d bundle lines, want 1:\n%s", n, out)
	}
	for _, want := range []string{`file ibstat\x1b[2J\x1b[1A\x1b[2K\x1b]0;pwned\a`, `PSID MT_\x1b[2J`, `\u202eftp`, `\u009b2K`, `\r`} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks the escaped %s:\n%s", want, out)
		}
	}

	// A directory bundle: a file name with the same text, and a
	// symbolic link out of the bundle whose name is reported on stderr.
	dir := filepath.Join(t.TempDir(), "bundle")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ibstat"+hostileText), []byte(ibstat), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("ibstat"+hostileText, filepath.Join(dir, "inside"+hostileText)); err != nil {
		t.Fatal(err)
	}
	out, errs, code = run(t, "text", dir)
	if code != ExitFindings || errs != "" {
		t.Fatalf("directory: exit %d, stderr %q", code, errs)
	}
	checkTerminalSafe(t, "directory stdout", out, stdoutLine)
	if err := os.Symlink("/etc/hostname", filepath.Join(dir, "outside"+hostileText)); err != nil {
		t.Fatal(err)
	}
	out, errs, code = run(t, "text", dir)
	if code != ExitUnreadable || out != "" {
		t.Fatalf("link out: exit %d, stdout %q", code, out)
	}
	checkTerminalSafe(t, "stderr", errs, func(l string) bool { return strings.HasPrefix(l, "nic_exporter diagnose: ") })
	if strings.Count(errs, "\n") != 1 || !strings.Contains(errs, `outside\x1b[2J`) || !strings.Contains(errs, "points out of the bundle") {
		t.Errorf("stderr %q, want one line naming the escaped link", errs)
	}
}

// bidi reports the Unicode bidirectional formatting characters (Unicode
// Standard Annex #9, table 1), which reorder what a terminal shows.
func bidi(r rune) bool {
	return r == '\u061c' || r == '\u200e' || r == '\u200f' || r >= '\u202a' && r <= '\u202e' || r >= '\u2066' && r <= '\u2069'
}

func TestEscape(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"mlx5_0 port 1: ok", "mlx5_0 port 1: ok"},
		{"a\nb\r\tc\x00\x1b[2J\x7f", `a\nb\r\tc\x00\x1b[2J\x7f`},
		{"csi \u009b and raw \x9b", `csi \u009b and raw \x9b`},
		{"\u202eevil\u2066\u2028", `\u202eevil\u2066\u2028`},
		{`already "\x1b" quoted, é and 日本 kept`, `already "\x1b" quoted, é and 日本 kept`},
	} {
		if got := Escape(tt.in); got != tt.want {
			t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzEscape checks that nothing a terminal acts on survives Escape.
func FuzzEscape(f *testing.F) {
	f.Add(hostileText)
	f.Add("plain")
	f.Fuzz(func(t *testing.T, s string) {
		checkNoControls(t, "Escape", Escape(s), -1)
	})
}
