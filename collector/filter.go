package collector

import (
	"fmt"
	"regexp"
)

// NameFilter selects names with an include and an exclude regular
// expression: device names, process names, file paths, driver statistic
// names. Both are anchored: "eth1" does not match "eth10". An empty
// include matches everything; an empty exclude matches nothing, so the
// zero NameFilter selects every name. Collectors apply it before reading
// anything of an excluded name.
type NameFilter struct {
	include *regexp.Regexp
	exclude *regexp.Regexp
}

// NewNameFilter compiles the include and exclude expressions. flag is the
// stem of the flag pair, such as "collector.netdev.device" for
// --collector.netdev.device-include and -exclude; it names the flag in
// error messages.
func NewNameFilter(flag, include, exclude string) (NameFilter, error) {
	var f NameFilter
	var err error
	if include != "" {
		if f.include, err = regexp.Compile("^(?:" + include + ")$"); err != nil {
			return f, fmt.Errorf("invalid --%s-include regular expression %q: %w", flag, include, err)
		}
	}
	if exclude != "" {
		if f.exclude, err = regexp.Compile("^(?:" + exclude + ")$"); err != nil {
			return f, fmt.Errorf("invalid --%s-exclude regular expression %q: %w", flag, exclude, err)
		}
	}
	return f, nil
}

// Match reports whether name is selected.
func (f NameFilter) Match(name string) bool {
	if f.include != nil && !f.include.MatchString(name) {
		return false
	}
	return f.exclude == nil || !f.exclude.MatchString(name)
}
