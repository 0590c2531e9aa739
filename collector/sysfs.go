package collector

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// readAttr reads a small sysfs attribute and returns it without the
// trailing newline. sysfs attributes are at most one page long.
func readAttr(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var buf [4096]byte
	n, err := io.ReadFull(f, buf[:])
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	return string(bytes.TrimSpace(buf[:n])), nil
}

// parseUint parses a decimal or 0x-prefixed hexadecimal unsigned value.
func parseUint(s string) (uint64, error) {
	v, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is not an unsigned integer", errParse, s)
	}
	return v, nil
}

// parseInt parses a decimal signed value.
func parseInt(s string) (int64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is not an integer", errParse, s)
	}
	return v, nil
}

// isNotExist reports whether err says a file or device is gone.
func isNotExist(err error) bool {
	return errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENODEV) || errors.Is(err, syscall.ENXIO)
}

// parsePCIeSpeed parses the kernel's PCIe link speed strings, such as
// "16.0 GT/s PCIe", "8 GT/s" or "2.5 GT/s", into GT/s. "Unknown" and
// empty values, which virtual functions and some bridges report, give
// ok == false without an error.
func parsePCIeSpeed(s string) (gts float64, ok bool, err error) {
	if s == "" || strings.HasPrefix(s, "Unknown") {
		return 0, false, nil
	}
	num, _, found := strings.Cut(s, " GT/s")
	if !found {
		return 0, false, fmt.Errorf("%w: PCIe link speed %q", errParse, s)
	}
	v, perr := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if perr != nil || v < 0 {
		return 0, false, fmt.Errorf("%w: PCIe link speed %q", errParse, s)
	}
	return v, true, nil
}
