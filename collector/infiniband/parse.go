package infiniband

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"github.com/nic-exporter/nic_exporter/internal/errclass"
)

// errNoPMA says a counter file answered "N/A (no PMA)": the device has no
// performance management agent (mlx4 virtual functions, iWARP devices), so
// the counter will never have a value. It wraps EOPNOTSUPP so it is
// classified and remembered like a driver that does not support a file.
var errNoPMA = fmt.Errorf("N/A (no PMA): the device has no performance management agent: %w", syscall.EOPNOTSUPP)

// parseIBState parses a port state file, "4: ACTIVE" in state and
// "5: LinkUp" in phys_state, into its number and name.
func parseIBState(s string) (uint64, string, error) {
	num, name, ok := strings.Cut(s, ":")
	if !ok {
		return 0, "", fmt.Errorf("%w: port state %q is not \"<number>: <name>\"", errclass.ErrParse, s)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(num), 10, 8)
	if err != nil {
		return 0, "", fmt.Errorf("%w: port state %q has no number", errclass.ErrParse, s)
	}
	return v, strings.TrimSpace(name), nil
}

// parseIBRate parses a port's rate file, for example "400 Gb/sec (4X NDR)"
// or "2.5 Gb/sec (1X SDR)", into bytes per second.
func parseIBRate(s string) (float64, error) {
	num, rest, ok := strings.Cut(strings.TrimSpace(s), " ")
	if !ok || !strings.HasPrefix(rest, "Gb/sec") {
		return 0, fmt.Errorf("%w: port rate %q is not \"<number> Gb/sec ...\"", errclass.ErrParse, s)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || !(v >= 0 && v <= 1e6) {
		return 0, fmt.Errorf("%w: port rate %q", errclass.ErrParse, s)
	}
	return v * 1e9 / 8, nil
}

// parseIBCounter parses the content of a counters/ or hw_counters/ file: an
// unsigned decimal number, or "N/A (no PMA)", which gives errNoPMA.
func parseIBCounter(s string) (uint64, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "N/A") {
		if strings.Contains(s, "no PMA") {
			return 0, errNoPMA
		}
		return 0, fmt.Errorf("%w: counter value %q: %w", errclass.ErrParse, s, syscall.EOPNOTSUPP)
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: counter value %q is not an unsigned integer", errclass.ErrParse, s)
	}
	return v, nil
}

// parseIBLID parses a LID file, "0x1a", into its number. LIDs are 16 bits
// (32 in extended LID mode).
func parseIBLID(s string) (uint64, error) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "0x") {
		return 0, fmt.Errorf("%w: LID %q is not hexadecimal", errclass.ErrParse, s)
	}
	v, err := strconv.ParseUint(s[2:], 16, 32)
	if err != nil {
		return 0, fmt.Errorf("%w: LID %q", errclass.ErrParse, s)
	}
	return v, nil
}
