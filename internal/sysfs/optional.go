package sysfs

import "errors"

// Optional is a value that may be missing: an attribute the device does
// not have, or one that could not be read or parsed.
type Optional struct {
	V  float64
	OK bool
}

// ErrVanished says a device, or the part of it being read, disappeared
// while it was read; the collector then leaves the device out of the poll
// without reporting an error.
var ErrVanished = errors.New("device vanished during the poll")

// Adder is what AddOpt writes to: *collector.Poll implements it with D
// an *exposition.Desc. It is generic so that this package, which only
// reads files, does not depend on the exposition layer above it.
type Adder[D any] interface {
	Add(d D, value float64, labelValues ...string)
}

// AddOpt adds a sample of d with o's value if o is present.
func AddOpt[D any](a Adder[D], d D, o Optional, labelValues ...string) {
	if o.OK {
		a.Add(d, o.V, labelValues...)
	}
}
