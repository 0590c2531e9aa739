package sysfs

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/nic-exporter/nic_exporter/internal/errclass"
)

// ParseUint parses a decimal or 0x-prefixed hexadecimal unsigned value.
func ParseUint(s string) (uint64, error) {
	v, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is not an unsigned integer", errclass.ErrParse, s)
	}
	return v, nil
}

// ParseCounter parses a counter as the kernel prints it: a decimal
// unsigned integer of at most 64 bits, with nothing else. It is the one
// parse of every counter the sysfs collectors export, so NaN, Inf,
// exponents, signs, fractions and garbage are an errclass.ErrParse error for that
// series and never a sample.
func ParseCounter(s string) (uint64, error) {
	if s == "" || s[0] < '0' || s[0] > '9' {
		return 0, fmt.Errorf("%w: %q is not a counter", errclass.ErrParse, s)
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is not a counter", errclass.ErrParse, s)
	}
	return v, nil
}

// ParseInt parses a decimal signed value.
func ParseInt(s string) (int64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is not an integer", errclass.ErrParse, s)
	}
	return v, nil
}

// ParsePCIeSpeed parses the kernel's PCIe link speed strings, such as
// "16.0 GT/s PCIe", "8 GT/s" or "2.5 GT/s", into GT/s. "Unknown" and
// empty values, which virtual functions and some bridges report, give
// ok == false without an error.
func ParsePCIeSpeed(s string) (gts float64, ok bool, err error) {
	if s == "" || strings.HasPrefix(s, "Unknown") {
		return 0, false, nil
	}
	num, _, found := strings.Cut(s, " GT/s")
	if !found {
		return 0, false, fmt.Errorf("%w: PCIe link speed %q", errclass.ErrParse, s)
	}
	v, perr := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if perr != nil || !(v >= 0) || math.IsInf(v, 0) {
		return 0, false, fmt.Errorf("%w: PCIe link speed %q", errclass.ErrParse, s)
	}
	return v, true, nil
}
