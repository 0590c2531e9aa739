//go:build linux

package devlink

import (
	"time"

	"golang.org/x/sys/unix"
)

// kernelClock is one reading of the clocks that place a dump timestamp
// of the kernel's jiffies clock (DEVLINK_ATTR_HEALTH_REPORTER_DUMP_TS) in
// wall-clock time.
type kernelClock struct {
	wall time.Time
	// msecs is jiffies_to_msecs(jiffies) as the kernel would compute it
	// at wall.
	msecs uint32
	// ok is false when the monotonic clock could not be read.
	ok bool
}

// initialJiffiesMsecs is INITIAL_JIFFIES in ms: the kernel starts jiffies
// 300 s before their 32-bit wrap, so that wrap bugs show early
// (include/linux/jiffies.h).
const initialJiffiesMsecs = -300_000

// readKernelClock reads the wall clock and derives the kernel's
// jiffies_to_msecs(jiffies) from CLOCK_MONOTONIC, which like jiffies
// counts from boot and stops in suspend. The derivation holds for kernels
// built with HZ 100, 250 or 1000, which divide 1000 and so keep
// jiffies_to_msecs a plain multiplication; with HZ 300 the 32-bit
// truncation shifts it.
func readKernelClock() kernelClock {
	var ts unix.Timespec
	wall := time.Now().Round(0) // the wall clock alone: results are compared with the kernel's
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return kernelClock{wall: wall}
	}
	return kernelClock{wall: wall, msecs: uint32(ts.Nano()/1e6 + initialJiffiesMsecs), ok: true}
}
