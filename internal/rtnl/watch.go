//go:build linux

package rtnl

import (
	"errors"
	"fmt"
	"sync"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/nic-exporter/nic_exporter/internal/netns"
)

// Iface names one interface: its index and name.
type Iface struct {
	Index int
	Name  string
}

// Watcher answers which interfaces a network namespace has. It makes an
// RTM_GETLINK dump only when the answer may have changed: at the first
// call, and after the kernel announced a change of a link on the
// RTNLGRP_LINK multicast group (RTM_NEWLINK for a new, renamed or changed
// link, RTM_DELLINK for a removed one), or lost announcements because the
// socket's queue overflowed (ENOBUFS). A link dump is not cheap: the
// kernel computes every interface's statistics for it (dev_get_stats,
// which on a ConnectX or a veth sums over all queues; kernels before 6.19
// ignore RTEXT_FILTER_SKIP_STATS there), and collectors that only need
// the names made one on every poll. The announcements are drained without
// blocking and never parsed: any of them means "list again". It is safe
// for concurrent use.
type Watcher struct {
	mu     sync.Mutex
	conn   *Conn
	events *netlink.Conn
	ifaces []Iface
	listed bool
	dumps  uint64
}

// NewWatcher opens the two rtnetlink sockets of a Watcher, in the network
// namespace at nsPath (see Dial), the calling process's when empty. The
// event socket joins RTNLGRP_LINK before the first dump, so no change
// falls between the two.
func NewWatcher(nsPath string) (*Watcher, error) {
	cfg := &netlink.Config{Groups: unix.RTMGRP_LINK}
	if nsPath != "" {
		fd, err := netns.Open(nsPath)
		if err != nil {
			return nil, err
		}
		defer unix.Close(fd)
		cfg.NetNS = fd
	}
	events, err := netlink.Dial(unix.NETLINK_ROUTE, cfg)
	if err != nil {
		return nil, fmt.Errorf("opening the rtnetlink link event socket: %w", err)
	}
	conn, err := Dial(nsPath)
	if err != nil {
		events.Close()
		return nil, err
	}
	return &Watcher{conn: conn, events: events}, nil
}

// Close closes both sockets.
func (w *Watcher) Close() error {
	return errors.Join(w.events.Close(), w.conn.Close())
}

// Interfaces returns the interfaces with a name, from the last dump or a
// new one (see Watcher). The caller must not change the slice.
func (w *Watcher) Interfaces() ([]Iface, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	changed := w.drain()
	if w.listed && !changed {
		return w.ifaces, nil
	}
	links, err := w.conn.Links()
	w.dumps++
	if err != nil {
		w.listed = false
		return nil, err
	}
	out := make([]Iface, 0, len(links))
	for _, l := range links {
		if l.Name != "" {
			out = append(out, Iface{Index: l.Index, Name: l.Name})
		}
	}
	w.ifaces, w.listed = out, true
	return out, nil
}

// Dumps returns how many link dumps the Watcher made.
func (w *Watcher) Dumps() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.dumps
}

// drain reads every queued announcement without blocking and reports
// whether there was one, the queue had overflowed, or the socket failed.
func (w *Watcher) drain() bool {
	rc, err := w.events.SyscallConn()
	if err != nil {
		return true
	}
	changed := false
	var buf [8192]byte
	var rerr error
	err = rc.Read(func(fd uintptr) bool {
		for {
			n, _, err := unix.Recvfrom(int(fd), buf[:], unix.MSG_DONTWAIT)
			switch {
			case err == unix.EINTR:
				continue
			case err == unix.EAGAIN:
				return true // nothing more queued; never wait for more
			case err == unix.ENOBUFS:
				changed = true // announcements were lost
				continue
			case err != nil:
				rerr = err
				return true
			case n > 0:
				changed = true
			default:
				return true
			}
		}
	})
	if err != nil || rerr != nil {
		// Whatever went wrong with the announcements, a dump is the
		// answer that cannot be stale.
		return true
	}
	return changed
}
