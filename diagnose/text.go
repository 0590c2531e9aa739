package diagnose

import (
	"bytes"
	"fmt"
	"strings"
)

// fileText is the part of a file that is analysed.
type fileText struct {
	data  []byte
	lines int
	// note says what of the file was not analysed, or is empty.
	note string
}

// analysedText returns the part of data that is analysed within lim, of
// which left lines and leftBytes bytes remain for the bundle: at most
// lim.MaxFileLines and left lines, each of at most lim.MaxLineBytes bytes,
// and at most leftBytes bytes kept. A longer line is kept as an empty
// line, so the lines after it keep their numbers in the evidence. The
// file is scanned once in place; the text kept is a copy only when a line
// was blanked.
func analysedText(data []byte, lim Limits, left, leftBytes int) fileText {
	max := min(lim.MaxFileLines, left)
	var (
		n, long, firstLong int
		kept               int    // bytes of the text kept
		blanked            []byte // the text kept, once a line is blanked
		off                int
		outOfBytes         bool
	)
	for off < len(data) && n < max {
		next := len(data)
		end := next
		if i := bytes.IndexByte(data[off:], '\n'); i >= 0 {
			end, next = off+i, off+i+1
		}
		size := next - off
		if end-off > lim.MaxLineBytes {
			size = 1 // kept as an empty line
		}
		if kept+size > leftBytes {
			outOfBytes = true
			break
		}
		kept += size
		n++
		switch {
		case end-off > lim.MaxLineBytes:
			long++
			if firstLong == 0 {
				firstLong = n
			}
			if blanked == nil {
				blanked = append(make([]byte, 0, off+1), data[:off]...)
			}
			blanked = append(blanked, '\n')
		case blanked != nil:
			blanked = append(blanked, data[off:next]...)
		}
		off = next
	}
	ft := fileText{lines: n}
	if blanked != nil {
		ft.data = blanked
	} else {
		ft.data = data[:off:off]
	}
	var notes []string
	if long > 0 {
		notes = append(notes, fmt.Sprintf("%d line(s) longer than %d bytes not analysed (line %d first)", long, lim.MaxLineBytes, firstLong))
	}
	if off < len(data) {
		switch {
		case outOfBytes && n == 0:
			notes = append(notes, fmt.Sprintf("not analysed: the bundle's %d bytes of text are analysed", lim.MaxBundleTextBytes))
		case outOfBytes:
			notes = append(notes, fmt.Sprintf("cut for analysis after line %d: the bundle's %d bytes of text are analysed", n, lim.MaxBundleTextBytes))
		case n == 0:
			notes = append(notes, fmt.Sprintf("not analysed: the bundle's %d lines are analysed", lim.MaxBundleLines))
		case n < lim.MaxFileLines:
			notes = append(notes, fmt.Sprintf("cut for analysis after line %d: the bundle's %d lines are analysed", n, lim.MaxBundleLines))
		default:
			notes = append(notes, fmt.Sprintf("cut for analysis after line %d: more than %d lines", n, lim.MaxFileLines))
		}
	}
	ft.note = strings.Join(notes, "; ")
	return ft
}

// lines splits data into lines without their line ends.
func lines(data []byte) []string {
	s := string(bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n")))
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
