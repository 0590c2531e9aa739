package collector

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// readAttr reads a small sysfs attribute and returns it without
// surrounding white space. sysfs attributes are at most one page long. It
// uses the system calls directly with a buffer on the stack: a poll reads
// thousands of attributes, and os.Open plus a heap buffer per file
// dominated the poll's allocations.
func readAttr(path string) (string, error) {
	fd, err := openRetry(path)
	if err != nil {
		return "", &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	var buf [4096]byte
	n := 0
	for n < len(buf) {
		k, err := syscall.Read(fd, buf[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return "", &os.PathError{Op: "read", Path: path, Err: err}
		}
		if k == 0 {
			break
		}
		n += k
	}
	return string(bytes.TrimSpace(buf[:n])), nil
}

func openRetry(path string) (int, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			return fd, err
		}
	}
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
	if perr != nil || !(v >= 0) || math.IsInf(v, 0) {
		return 0, false, fmt.Errorf("%w: PCIe link speed %q", errParse, s)
	}
	return v, true, nil
}
