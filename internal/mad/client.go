package mad

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// A Transport moves whole MADs between this process and a fabric. It does
// not match responses to requests; Client does, by transaction ID.
//
// Send and Recv may be called from different goroutines at the same time;
// Close makes a blocked Recv return.
type Transport interface {
	// Send sends a 256-byte MAD to the given destination LID and QP (0 for
	// SMPs, 1 for GMPs).
	Send(dlid uint16, qp uint32, mad []byte) error
	// Recv waits for the next MAD and copies it into buf (at least
	// MADSize bytes). timedOut is true when the MAD is one of our own
	// requests given back undelivered (the kernel's or ibsim's
	// ETIMEDOUT).
	Recv(buf []byte) (n int, timedOut bool, err error)
	// Close releases the transport.
	Close() error
}

// ClientConfig configures a Client.
type ClientConfig struct {
	// Transport carries the MADs; the Client owns it and closes it.
	Transport Transport
	// Timeout bounds each request when its context has no earlier
	// deadline. Zero means 1 s.
	Timeout time.Duration
}

// Client sends Get requests over a Transport and waits for the matching
// responses. It is safe for concurrent use: requests in flight are told
// apart by the low 32 bits of their transaction IDs, the bits both the
// kernel and ibsim leave alone.
type Client struct {
	cfg     ClientConfig
	log     *zap.Logger
	tid     atomic.Uint32
	mu      sync.Mutex
	pending map[uint32]chan response
	done    chan struct{}
	readErr error
	closed  bool
}

type response struct {
	mad      []byte
	timedOut bool
}

// NewClient returns a Client on cfg.Transport and starts its receiver.
func NewClient(cfg ClientConfig, log *zap.Logger) *Client {
	if cfg.Timeout <= 0 {
		cfg.Timeout = time.Second
	}
	c := &Client{cfg: cfg, log: log, pending: make(map[uint32]chan response), done: make(chan struct{})}
	// Start away from 0 so the IDs do not look like another tool's.
	c.tid.Store(uint32(time.Now().UnixNano()))
	go c.receive()
	return c
}

// receive hands each MAD from the transport to the request waiting for
// its TID, and drops the rest (late answers to abandoned requests).
func (c *Client) receive() {
	defer close(c.done)
	buf := make([]byte, MADSize+64)
	for {
		n, timedOut, err := c.cfg.Transport.Recv(buf)
		if err != nil {
			c.mu.Lock()
			c.readErr = err
			for tid, ch := range c.pending {
				close(ch)
				delete(c.pending, tid)
			}
			c.mu.Unlock()
			return
		}
		if n < 24 {
			continue
		}
		tid := binary.BigEndian.Uint32(buf[12:16])
		c.mu.Lock()
		ch, ok := c.pending[tid]
		if ok {
			delete(c.pending, tid)
		}
		c.mu.Unlock()
		if !ok {
			c.log.Debug("MAD without a waiting request dropped", zap.Uint32("tid", tid))
			continue
		}
		ch <- response{mad: append([]byte(nil), buf[:n]...), timedOut: timedOut}
	}
}

// ErrClosed is returned by requests on a closed Client.
var ErrClosed = errors.New("MAD client closed")

// Do sends req and returns the response's attribute data (from byte 64 of
// the MAD to its end).
func (c *Client) Do(ctx context.Context, req Request) ([]byte, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
		defer cancel()
	}
	tid := c.tid.Add(1)
	mad, err := req.Encode(uint64(tid))
	if err != nil {
		return nil, err
	}
	ch := make(chan response, 1)
	c.mu.Lock()
	if c.closed || c.readErr != nil {
		err := c.readErr
		c.mu.Unlock()
		if err == nil {
			err = ErrClosed
		}
		return nil, fmt.Errorf("%s attribute 0x%04x: %w", req.Route, req.AttrID, err)
	}
	c.pending[tid] = ch
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		delete(c.pending, tid)
		c.mu.Unlock()
	}
	dlid, qp := req.destination()
	if err := c.cfg.Transport.Send(dlid, qp, mad); err != nil {
		forget()
		return nil, fmt.Errorf("sending to %s attribute 0x%04x: %w", req.Route, req.AttrID, err)
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return nil, fmt.Errorf("%s attribute 0x%04x: %w", req.Route, req.AttrID, ErrClosed)
		}
		if r.timedOut {
			return nil, fmt.Errorf("%s attribute 0x%04x: %w (not delivered)", req.Route, req.AttrID, ErrTimeout)
		}
		data, err := checkResponse(req, r.mad)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", req.Route, err)
		}
		return data, nil
	case <-ctx.Done():
		forget()
		return nil, fmt.Errorf("%s attribute 0x%04x: %w (%w)", req.Route, req.AttrID, ErrTimeout, ctx.Err())
	}
}

// Close closes the transport and waits for the receiver to stop.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	err := c.cfg.Transport.Close()
	<-c.done
	return err
}

// perfData returns the 64 bytes of a PerfMgt attribute's data with its
// PortSelect set.
func perfData(port uint8) []byte {
	d := make([]byte, dataSize)
	d[1] = port
	return d
}

// ClassPortInfo reads the Performance Management ClassPortInfo of the
// port with the given LID.
func (c *Client) ClassPortInfo(ctx context.Context, lid uint16) (ClassPortInfo, error) {
	d, err := c.Do(ctx, Request{Class: ClassPerf, AttrID: AttrClassPortInfo, Route: LIDRoute(lid)})
	if err != nil {
		return ClassPortInfo{}, err
	}
	return ParseClassPortInfo(d)
}

// PortCounters reads PortCounters of port (PortSelect) of the node with
// the given LID.
func (c *Client) PortCounters(ctx context.Context, lid uint16, port uint8) (PortCounters, error) {
	d, err := c.Do(ctx, Request{Class: ClassPerf, AttrID: AttrPortCounters, Route: LIDRoute(lid), Data: perfData(port)})
	if err != nil {
		return PortCounters{}, err
	}
	return ParsePortCounters(d)
}

// ResetPortCounters sets to zero the PortCounters counters sel names on
// port of the node with the given LID (a Set of PortCounters, as
// `perfquery -R` sends) and returns the counters as the node answered
// after the reset. Every reader of that port sees the reset: other
// exporters, the subnet manager's PerfMgr, UFM.
func (c *Client) ResetPortCounters(ctx context.Context, lid uint16, port uint8, sel CounterSelect) (PortCounters, error) {
	if sel == 0 {
		return PortCounters{}, errors.New("reset of no counter")
	}
	d, err := c.Do(ctx, Request{Class: ClassPerf, Method: MethodSet, AttrID: AttrPortCounters, Route: LIDRoute(lid), Data: resetData(port, sel)})
	if err != nil {
		return PortCounters{}, err
	}
	return ParsePortCounters(d)
}

// PortCountersExtended reads PortCountersExtended of port of the node
// with the given LID.
func (c *Client) PortCountersExtended(ctx context.Context, lid uint16, port uint8) (PortCountersExtended, error) {
	d, err := c.Do(ctx, Request{Class: ClassPerf, AttrID: AttrPortCountersExtended, Route: LIDRoute(lid), Data: perfData(port)})
	if err != nil {
		return PortCountersExtended{}, err
	}
	return ParsePortCountersExtended(d)
}

// PortRcvErrorDetails reads the optional PortRcvErrorDetails of port of
// the node with the given LID.
func (c *Client) PortRcvErrorDetails(ctx context.Context, lid uint16, port uint8) (PortRcvErrorDetails, error) {
	d, err := c.Do(ctx, Request{Class: ClassPerf, AttrID: AttrPortRcvErrorDetails, Route: LIDRoute(lid), Data: perfData(port)})
	if err != nil {
		return PortRcvErrorDetails{}, err
	}
	return ParsePortRcvErrorDetails(d)
}

// PortXmitDiscardDetails reads the optional PortXmitDiscardDetails of
// port of the node with the given LID.
func (c *Client) PortXmitDiscardDetails(ctx context.Context, lid uint16, port uint8) (PortXmitDiscardDetails, error) {
	d, err := c.Do(ctx, Request{Class: ClassPerf, AttrID: AttrPortXmitDiscardDetails, Route: LIDRoute(lid), Data: perfData(port)})
	if err != nil {
		return PortXmitDiscardDetails{}, err
	}
	return ParsePortXmitDiscardDetails(d)
}

// NodeInfo reads the NodeInfo of the node at the end of route.
func (c *Client) NodeInfo(ctx context.Context, route Route) (NodeInfo, error) {
	d, err := c.Do(ctx, Request{Class: ClassSubnLID, AttrID: AttrNodeInfo, Route: route})
	if err != nil {
		return NodeInfo{}, err
	}
	return ParseNodeInfo(d)
}

// NodeDescription reads the NodeDescription of the node at the end of
// route.
func (c *Client) NodeDescription(ctx context.Context, route Route) (string, error) {
	d, err := c.Do(ctx, Request{Class: ClassSubnLID, AttrID: AttrNodeDescription, Route: route})
	if err != nil {
		return "", err
	}
	return ParseNodeDescription(d)
}

// PortInfo reads the PortInfo of port of the node at the end of route
// (port 0 of a switch is its management port, which holds the switch's
// LID).
func (c *Client) PortInfo(ctx context.Context, route Route, port uint8) (PortInfo, error) {
	d, err := c.Do(ctx, Request{Class: ClassSubnLID, AttrID: AttrPortInfo, AttrMod: uint32(port), Route: route})
	if err != nil {
		return PortInfo{}, err
	}
	return ParsePortInfo(d)
}
