//go:build linux

package devlink

import (
	"context"
	"fmt"
	"time"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// LastDumpBothWays reads a reporter and returns the time of its stored
// dump twice: from the kernel's wall-clock timestamp, and placed from the
// older jiffies-based one alone, as for kernels that send only that. It
// lets the kernel test compare the two on a kernel that sends both.
func LastDumpBothWays(ctx context.Context, c *Client, id ReporterID) (fromNs, fromMsecs *time.Time, err error) {
	op := "reading health reporter " + id.String()
	msgs, err := c.c.execute(ctx, c.c.polls, op, unix.DEVLINK_CMD_HEALTH_REPORTER_GET, 0, func(ae *netlink.AttributeEncoder) {
		encodeReporterID(ae, id)
	})
	if err != nil {
		return nil, nil, err
	}
	if len(msgs) != 1 {
		return nil, nil, fmt.Errorf("%s: %d replies, want 1", op, len(msgs))
	}
	_, ts, err := decodeReporter(msgs[0].Data)
	if err != nil {
		return nil, nil, err
	}
	now := c.c.clock()
	return dumpTimestamps{realNs: ts.realNs}.wallClock(now), dumpTimestamps{msecs: ts.msecs}.wallClock(now), nil
}
