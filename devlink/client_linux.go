//go:build linux

package devlink

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// client is the Linux implementation on generic netlink connections.
type client struct {
	family genetlink.Family
	group  uint32 // id of the "config" multicast group; 0 if absent
	// polls carries every request but diagnose and dump; captures
	// carries those, so that a poll never waits behind a large dump.
	polls, captures *lane
	// dialEvents opens the connection Watch listens on.
	dialEvents func() (eventConn, error)
	// clock reads the clocks that place the kernel's older dump
	// timestamps in wall-clock time.
	clock func() kernelClock
}

// lane is one request connection. Its requests run one at a time, each
// with its deadline.
type lane struct {
	dial   func() (*genetlink.Conn, error)
	mu     sync.Mutex
	conn   *genetlink.Conn // nil until the first request, and after one was abandoned
	closed bool
}

// eventConn is the part of a genetlink.Conn that Watch uses.
type eventConn interface {
	JoinGroup(group uint32) error
	Receive() ([]genetlink.Message, []netlink.Message, error)
	SetReadDeadline(t time.Time) error
	Close() error
}

func newClient(dial func() (*genetlink.Conn, error)) (*client, error) {
	conn, err := dial()
	if err != nil {
		return nil, errorf("opening generic netlink", err)
	}
	c, err := initClient(conn, dial, func() (eventConn, error) {
		ec, err := dial()
		if err != nil {
			return nil, err
		}
		// Health events come in bursts (error, then healthy a moment
		// later, for every reporter of a failing device): a larger
		// buffer makes overruns rarer. Best effort.
		_ = ec.SetReadBuffer(1 << 20)
		return ec, nil
	})
	if err != nil {
		conn.Close()
		return nil, err
	}
	return c, nil
}

// initClient resolves the devlink family on conn, which becomes the poll
// connection; dial opens the capture connection and replaces abandoned
// ones. Tests hand in connections to a fake kernel.
func initClient(conn *genetlink.Conn, dial func() (*genetlink.Conn, error), dialEvents func() (eventConn, error)) (*client, error) {
	f, err := conn.GetFamily(unix.DEVLINK_GENL_NAME)
	if err != nil {
		// A missing family is ENOENT, which satisfies os.ErrNotExist.
		return nil, errorf("resolving the generic netlink family", err)
	}
	c := &client{
		family:     f,
		polls:      &lane{dial: dial, conn: conn},
		captures:   &lane{dial: dial},
		dialEvents: dialEvents,
		clock:      readKernelClock,
	}
	for _, g := range f.Groups {
		if g.Name == unix.DEVLINK_GENL_MCGRP_CONFIG_NAME {
			c.group = g.ID
		}
	}
	return c, nil
}

// Close closes both request connections, after the requests in flight on
// them end.
func (c *client) Close() error {
	return errors.Join(c.polls.close(), c.captures.close())
}

func (l *lane) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.conn == nil {
		return nil
	}
	err := l.conn.Close()
	l.conn = nil
	return err
}

// execute sends one request on l and returns the replies, honouring
// ctx's deadline. Errors keep the errno so errors.Is works with
// os.ErrNotExist, os.ErrPermission and errors.ErrUnsupported.
func (c *client) execute(ctx context.Context, l *lane, op string, cmd uint8, flags netlink.HeaderFlags, encode func(*netlink.AttributeEncoder)) ([]genetlink.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, errorf(op, err)
	}
	var data []byte
	if encode != nil {
		ae := netlink.NewAttributeEncoder()
		encode(ae)
		var err error
		if data, err = ae.Encode(); err != nil {
			return nil, errorf(op, err)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, errorf(op, net.ErrClosed)
	}
	if l.conn == nil {
		conn, err := l.dial()
		if err != nil {
			return nil, errorf(op, fmt.Errorf("opening a netlink socket: %w", err))
		}
		l.conn = conn
	}
	conn := l.conn
	if d, ok := ctx.Deadline(); ok {
		// Best effort: a socket without deadlines (a test's fake) or a
		// closed one (which fails the request anyway) refuses it.
		if err := conn.SetDeadline(d); err == nil {
			defer conn.SetDeadline(time.Time{})
		}
	}
	msgs, err := conn.Execute(genetlink.Message{
		Header: genetlink.Header{Command: cmd, Version: c.family.Version},
		Data:   data,
	}, c.family.ID, netlink.Request|flags)
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// The rest of the abandoned reply may still be queued on the
			// socket and would be taken for the reply to the next
			// request: the next one opens a fresh socket.
			conn.Close()
			l.conn = nil
			if ctx.Err() != nil {
				err = ctx.Err()
			}
		}
		return nil, errorf(op, err)
	}
	return msgs, nil
}

// errorf wraps err with the operation that failed.
func errorf(op string, err error) error {
	return fmt.Errorf("devlink: %s: %w", op, err)
}

// dump runs a dump request and decodes each reply with parse.
func dump[T any](ctx context.Context, c *client, op string, cmd uint8, parse func([]byte) (T, error)) ([]T, error) {
	msgs, err := c.execute(ctx, c.polls, op, cmd, netlink.Dump, nil)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(msgs))
	for _, m := range msgs {
		v, err := parse(m.Data)
		if err != nil {
			return nil, errorf(op, err)
		}
		out = append(out, v)
	}
	return out, nil
}

func (c *client) Devices(ctx context.Context) ([]Device, error) {
	return dump(ctx, c, "listing devices", unix.DEVLINK_CMD_GET, parseDevice)
}

func (c *client) Ports(ctx context.Context) ([]Port, error) {
	return dump(ctx, c, "listing ports", unix.DEVLINK_CMD_PORT_GET, parsePort)
}

func (c *client) HealthReporters(ctx context.Context) ([]HealthReporter, error) {
	return dump(ctx, c, "listing health reporters", unix.DEVLINK_CMD_HEALTH_REPORTER_GET, c.reporterParser())
}

// single decodes the one reply of a request.
func single[T any](msgs []genetlink.Message, op string, parse func([]byte) (T, error)) (T, error) {
	var zero T
	if len(msgs) != 1 {
		return zero, errorf(op, fmt.Errorf("%d replies, want 1", len(msgs)))
	}
	v, err := parse(msgs[0].Data)
	if err != nil {
		return zero, errorf(op, err)
	}
	return v, nil
}

func (c *client) Info(ctx context.Context, h Handle) (Info, error) {
	op := "reading info of " + h.String()
	msgs, err := c.execute(ctx, c.polls, op, unix.DEVLINK_CMD_INFO_GET, 0, func(ae *netlink.AttributeEncoder) {
		encodeHandle(ae, h)
	})
	if err != nil {
		return Info{}, err
	}
	return single(msgs, op, parseInfo)
}

func (c *client) HealthReporter(ctx context.Context, id ReporterID) (HealthReporter, error) {
	op := "reading health reporter " + id.String()
	msgs, err := c.execute(ctx, c.polls, op, unix.DEVLINK_CMD_HEALTH_REPORTER_GET, 0, func(ae *netlink.AttributeEncoder) {
		encodeReporterID(ae, id)
	})
	if err != nil {
		return HealthReporter{}, err
	}
	return single(msgs, op, c.reporterParser())
}

// fmsg runs a diagnose or dump request on the capture connection and
// decodes the output.
func (c *client) fmsg(ctx context.Context, op string, cmd uint8, flags netlink.HeaderFlags, id ReporterID) (Object, error) {
	msgs, err := c.execute(ctx, c.captures, op, cmd, flags, func(ae *netlink.AttributeEncoder) {
		encodeReporterID(ae, id)
	})
	if err != nil {
		return nil, err
	}
	payloads := make([][]byte, len(msgs))
	for i, m := range msgs {
		payloads[i] = m.Data
	}
	o, err := decodeFmsg(payloads)
	if err != nil {
		return nil, errorf(op, err)
	}
	return o, nil
}

// reporterParser returns a parser of the health reporter messages of one
// reply. It reads the clocks that place older kernels' dump timestamps
// once, at the first message, so after the kernel took any dump the reply
// reports.
func (c *client) reporterParser() func([]byte) (HealthReporter, error) {
	var now *kernelClock
	return func(b []byte) (HealthReporter, error) {
		if now == nil {
			n := c.clock()
			now = &n
		}
		return parseReporter(b, *now)
	}
}

func (c *client) Diagnose(ctx context.Context, id ReporterID) (Object, error) {
	return c.fmsg(ctx, "diagnosing "+id.String(), unix.DEVLINK_CMD_HEALTH_REPORTER_DIAGNOSE, 0, id)
}

func (c *client) Dump(ctx context.Context, id ReporterID) (Object, error) {
	return c.fmsg(ctx, "dumping "+id.String(), unix.DEVLINK_CMD_HEALTH_REPORTER_DUMP_GET, netlink.Dump, id)
}

func (c *client) SetHealthReporter(ctx context.Context, id ReporterID, s HealthReporterSettings) error {
	_, err := c.execute(ctx, c.polls, "setting "+id.String(), unix.DEVLINK_CMD_HEALTH_REPORTER_SET, netlink.Acknowledge, func(ae *netlink.AttributeEncoder) {
		encodeReporterID(ae, id)
		if s.GracefulPeriod != nil {
			ae.Uint64(unix.DEVLINK_ATTR_HEALTH_REPORTER_GRACEFUL_PERIOD, uint64(s.GracefulPeriod.Milliseconds()))
		}
		if s.AutoRecover != nil {
			ae.Uint8(unix.DEVLINK_ATTR_HEALTH_REPORTER_AUTO_RECOVER, boolByte(*s.AutoRecover))
		}
		if s.AutoDump != nil {
			ae.Uint8(unix.DEVLINK_ATTR_HEALTH_REPORTER_AUTO_DUMP, boolByte(*s.AutoDump))
		}
	})
	return err
}

func (c *client) Recover(ctx context.Context, id ReporterID) error {
	_, err := c.execute(ctx, c.polls, "recovering "+id.String(), unix.DEVLINK_CMD_HEALTH_REPORTER_RECOVER, netlink.Acknowledge, func(ae *netlink.AttributeEncoder) {
		encodeReporterID(ae, id)
	})
	return err
}

func boolByte(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

func (c *client) Watch(ctx context.Context, fn func(Event)) error {
	if c.group == 0 {
		return errorf("watching events", fmt.Errorf("family has no %q multicast group: %w", unix.DEVLINK_GENL_MCGRP_CONFIG_NAME, os.ErrNotExist))
	}
	ec, err := c.dialEvents()
	if err != nil {
		return errorf("opening the event socket", err)
	}
	defer ec.Close()
	if err := ec.JoinGroup(c.group); err != nil {
		return errorf("joining the config multicast group", err)
	}
	// Cancellation interrupts a blocked Receive through the deadline.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-ctx.Done():
			_ = ec.SetReadDeadline(time.Now())
		case <-stop:
		}
	}()
	for {
		msgs, _, err := ec.Receive()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, syscall.ENOBUFS) {
			fn(Event{Kind: EventOverrun})
			continue
		}
		if err != nil {
			return errorf("receiving events", err)
		}
		for _, m := range msgs {
			if ev, ok := decodeEvent(m, c.clock()); ok {
				fn(ev)
			}
		}
	}
}

// decodeEvent turns one notification, received when the clocks read
// now, into an Event. Notifications of other kinds (parameters, regions,
// traps) and undecodable ones are dropped: the next poll reads the state
// anyway.
func decodeEvent(m genetlink.Message, now kernelClock) (Event, bool) {
	switch m.Header.Command {
	case unix.DEVLINK_CMD_HEALTH_REPORTER_RECOVER:
		r, err := parseReporter(m.Data, now)
		if err != nil {
			return Event{}, false
		}
		return Event{Kind: EventHealth, Reporter: &r}, true
	case unix.DEVLINK_CMD_NEW, unix.DEVLINK_CMD_DEL:
		d, err := parseDevice(m.Data)
		if err != nil {
			return Event{}, false
		}
		k := EventDeviceNew
		if m.Header.Command == unix.DEVLINK_CMD_DEL {
			k = EventDeviceDel
		}
		return Event{Kind: k, Device: &d}, true
	case unix.DEVLINK_CMD_PORT_NEW, unix.DEVLINK_CMD_PORT_DEL:
		p, err := parsePort(m.Data)
		if err != nil {
			return Event{}, false
		}
		k := EventPortNew
		if m.Header.Command == unix.DEVLINK_CMD_PORT_DEL {
			k = EventPortDel
		}
		return Event{Kind: k, Port: &p}, true
	}
	return Event{}, false
}
