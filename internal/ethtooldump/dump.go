// Package ethtooldump reads recorded `ethtool -i` and `ethtool -S` output
// and serves it like the kernel's ethtool interface (ethtoolioctl.Source),
// so fixture tests and the demo host run the real ethtool collector on
// recorded devices.
package ethtooldump

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Dump is one interface's recorded ethtool output.
type Dump struct {
	Driver          string
	Version         string
	FirmwareVersion string
	BusInfo         string
	// Names and Values are the statistics in driver order.
	Names  []string
	Values []uint64
}

// maxStats is the most statistics the kernel's ioctl interface passes.
const maxStats = 32768

// Parse reads the concatenated output of `ethtool -i DEV` and
// `ethtool -S DEV`. Lines starting with "#" are comments (fixtures name
// their sources there). Statistic lines are "name: value"; a name may
// itself contain ": " (bnx2x prints "[0]: rx_bytes: 5"), so the value is
// what follows the last ": ".
func Parse(r io.Reader) (*Dump, error) {
	d := &Dump{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	inStats := false
	line := 0
	for sc.Scan() {
		line++
		raw := sc.Text()
		t := strings.TrimSpace(raw)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if t == "NIC statistics:" {
			inStats = true
			continue
		}
		if !inStats {
			key, val, ok := strings.Cut(t, ":")
			if !ok {
				return nil, fmt.Errorf("line %d: no colon in %q", line, t)
			}
			val = strings.TrimSpace(val)
			switch key {
			case "driver":
				d.Driver = val
			case "version":
				d.Version = val
			case "firmware-version":
				d.FirmwareVersion = val
			case "bus-info":
				d.BusInfo = val
			}
			continue
		}
		i := strings.LastIndex(t, ":")
		if i < 0 {
			return nil, fmt.Errorf("line %d: no colon in %q", line, t)
		}
		val := strings.TrimSpace(t[i+1:])
		// Keep the name as the driver wrote it, leading spaces aside.
		name := strings.TrimLeft(raw, " \t")
		name = name[:strings.LastIndex(name, ":")]
		v, err := strconv.ParseUint(val, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: statistic %q: value %q is not an unsigned integer", line, name, val)
		}
		if len(d.Names) >= maxStats {
			return nil, fmt.Errorf("line %d: more than %d statistics", line, maxStats)
		}
		d.Names = append(d.Names, name)
		d.Values = append(d.Values, v)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !inStats && d.Driver == "" {
		return nil, errors.New("neither driver information nor statistics found")
	}
	return d, nil
}

// Index returns the position of the named statistic, or -1.
func (d *Dump) Index(name string) int {
	for i, n := range d.Names {
		if n == name {
			return i
		}
	}
	return -1
}
