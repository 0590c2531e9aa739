package collector

import (
	"fmt"
	"regexp"
)

// DeviceFilter selects devices by name with an include and an exclude
// regular expression. Both are anchored: "eth1" does not match "eth10".
// An empty include matches everything; an empty exclude matches nothing.
// Collectors apply it before reading anything of an excluded device.
type DeviceFilter struct {
	include *regexp.Regexp
	exclude *regexp.Regexp
}

// NewDeviceFilter compiles the include and exclude expressions; flag names
// the flag pair in error messages.
func NewDeviceFilter(flag, include, exclude string) (DeviceFilter, error) {
	var f DeviceFilter
	var err error
	if include != "" {
		if f.include, err = regexp.Compile("^(?:" + include + ")$"); err != nil {
			return f, fmt.Errorf("invalid --%s.device-include regular expression %q: %w", flag, include, err)
		}
	}
	if exclude != "" {
		if f.exclude, err = regexp.Compile("^(?:" + exclude + ")$"); err != nil {
			return f, fmt.Errorf("invalid --%s.device-exclude regular expression %q: %w", flag, exclude, err)
		}
	}
	return f, nil
}

// Match reports whether the device named name is selected.
func (f DeviceFilter) Match(name string) bool {
	if f.include != nil && !f.include.MatchString(name) {
		return false
	}
	return f.exclude == nil || !f.exclude.MatchString(name)
}
