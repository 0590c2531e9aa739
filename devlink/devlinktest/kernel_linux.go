//go:build linux

package devlinktest

import (
	"errors"
	"fmt"
	"iter"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/genetlink/genltest"
	"github.com/mdlayher/netlink"
	"github.com/mdlayher/netlink/nlenc"
	"golang.org/x/sys/unix"
)

// Family returns the devlink family as the fake kernel announces it: the
// kernel's name and version, ID 26 and the "config" multicast group with
// ID 9 (a real kernel assigns both IDs at boot).
func Family() genetlink.Family {
	return genetlink.Family{
		ID:      26,
		Version: unix.DEVLINK_GENL_VERSION,
		Name:    unix.DEVLINK_GENL_NAME,
		Groups:  []genetlink.MulticastGroup{{ID: 9, Name: unix.DEVLINK_GENL_MCGRP_CONFIG_NAME}},
	}
}

// Func answers one devlink request: greq is the generic netlink message,
// nreq the netlink message around it (its flags say whether the request is
// a dump or asks for an acknowledgement). It returns the replies, or an
// error: an Errno is sent to the client as a netlink error message, any
// other error is returned to the client as the socket's read error.
//
// It is genltest's Func, so genltest.CheckRequest can wrap one. A Kernel
// calls it from as many goroutines as there are connections with a
// request in flight.
type Func = genltest.Func

// Errno is an error a Func returns to make the fake kernel answer with a
// netlink error message carrying that errno, as the kernel does.
type Errno syscall.Errno

// Error returns the errno's text.
func (e Errno) Error() string { return syscall.Errno(e).Error() }

// A Kernel is a fake kernel serving the devlink family. Its methods may be
// called concurrently.
type Kernel struct {
	serve Func

	mu     sync.Mutex
	opened int
	closed int
}

// NewKernel returns a fake kernel that answers the generic netlink
// controller's request for the devlink family with Family and every other
// request with fn.
func NewKernel(fn Func) *Kernel {
	return &Kernel{serve: genltest.ServeFamily(Family(), fn)}
}

// Dial opens a connection to the kernel. It never fails; its signature is
// that of the dial function devlink.NewWithDial takes.
func (k *Kernel) Dial() (*genetlink.Conn, error) {
	k.mu.Lock()
	k.opened++
	k.mu.Unlock()
	return genetlink.NewConn(netlink.NewConn(&socket{k: k}, pid)), nil
}

// Conns returns how many connections Dial opened and how many of them are
// still open.
func (k *Kernel) Conns() (opened, open int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.opened, k.opened - k.closed
}

// pid is the port ID of every fake connection.
const pid = 4242

// errNothingQueued is the read error of a connection with no reply
// queued, where a real socket would wait for a notification.
var errNothingQueued = errors.New("devlinktest: nothing to read: the fake kernel sends no notifications")

// socket is one connection's netlink socket. netlink.Conn sends and
// receives on it one request at a time, but may close it meanwhile.
type socket struct {
	k      *Kernel
	queued []netlink.Message // replies not read yet
	err    error             // read error of the last request
	closed atomic.Bool
}

func (s *socket) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.k.mu.Lock()
	s.k.closed++
	s.k.mu.Unlock()
	return nil
}

func (s *socket) Send(m netlink.Message) error { return s.SendMessages([]netlink.Message{m}) }

func (s *socket) SendMessages(msgs []netlink.Message) error {
	if s.closed.Load() {
		return os.ErrClosed
	}
	for _, m := range msgs {
		replies, err := s.k.answer(m)
		s.queued = append(s.queued, replies...)
		s.err = err
	}
	return nil
}

func (s *socket) Receive() ([]netlink.Message, error) {
	var out []netlink.Message
	for m, err := range s.ReceiveIter() {
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// ReceiveIter yields one read's worth of messages: all queued replies,
// except that a multi-part reply is read in two or more pieces, as the
// kernel splits large dumps over several datagrams.
func (s *socket) ReceiveIter() iter.Seq2[netlink.Message, error] {
	return func(yield func(netlink.Message, error) bool) {
		if s.closed.Load() {
			yield(netlink.Message{}, os.ErrClosed)
			return
		}
		if err := s.err; err != nil {
			s.queued, s.err = nil, nil
			yield(netlink.Message{}, err)
			return
		}
		if len(s.queued) == 0 {
			yield(netlink.Message{}, errNothingQueued)
			return
		}
		n := len(s.queued)
		if s.queued[0].Header.Flags&netlink.Multi != 0 && n > 1 {
			n = (n + 1) / 2
		}
		batch := s.queued[:n]
		s.queued = s.queued[n:]
		for _, m := range batch {
			if !yield(m, nil) {
				return
			}
		}
	}
}

// answer serves one request and frames the replies as the kernel would.
func (k *Kernel) answer(req netlink.Message) ([]netlink.Message, error) {
	var greq genetlink.Message
	if err := greq.UnmarshalBinary(req.Data); err != nil {
		return nil, fmt.Errorf("devlinktest: decoding request: %w", err)
	}
	replies, err := k.serve(greq, req)
	var e Errno
	if errors.As(err, &e) {
		return []netlink.Message{errorMessage(req, int32(e))}, nil
	}
	if err != nil {
		return nil, err
	}
	header := netlink.Header{Type: req.Header.Type, Sequence: req.Header.Sequence, PID: req.Header.PID}
	out := make([]netlink.Message, 0, len(replies)+1)
	for _, r := range replies {
		b, err := r.MarshalBinary()
		if err != nil {
			return nil, fmt.Errorf("devlinktest: encoding reply: %w", err)
		}
		out = append(out, netlink.Message{Header: header, Data: b})
	}
	// Devlink sends diagnose output like a dump (devlink_fmsg_snd), so
	// that it can span several messages.
	multi := req.Header.Flags&netlink.Dump != 0 ||
		req.Header.Type == netlink.HeaderType(Family().ID) && greq.Header.Command == unix.DEVLINK_CMD_HEALTH_REPORTER_DIAGNOSE
	switch {
	case multi:
		for i := range out {
			out[i].Header.Flags |= netlink.Multi
		}
		done := header
		done.Type, done.Flags = netlink.Done, netlink.Multi
		out = append(out, netlink.Message{Header: done, Data: nlenc.Int32Bytes(0)})
	case len(out) == 0 && req.Header.Flags&netlink.Acknowledge != 0:
		out = append(out, errorMessage(req, 0))
	}
	return out, nil
}

// errorMessage is the kernel's NLMSG_ERROR reply to req: the negative
// errno (0 for an acknowledgement), then the request.
func errorMessage(req netlink.Message, errno int32) netlink.Message {
	// The request was sent through netlink.Conn, which set its length,
	// so it encodes; if not, the error carries the errno alone, as with
	// the kernel's NLM_F_CAPPED.
	b, _ := req.MarshalBinary()
	return netlink.Message{
		Header: netlink.Header{Type: netlink.Error, Sequence: req.Header.Sequence, PID: req.Header.PID},
		Data:   append(nlenc.Int32Bytes(-errno), b...),
	}
}
