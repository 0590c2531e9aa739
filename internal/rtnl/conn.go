//go:build linux

package rtnl

import (
	"fmt"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/nic-exporter/nic_exporter/internal/netns"
)

// ErrNotNamespace says a path given as a network namespace is not a
// namespace file (see internal/netns).
var ErrNotNamespace = netns.ErrNotNamespace

// Conn is an rtnetlink socket in one network namespace. It is safe for
// concurrent use (github.com/mdlayher/netlink serialises requests).
type Conn struct {
	c *netlink.Conn
}

// Dial opens an rtnetlink socket. With nsPath empty it belongs to the
// calling process's network namespace; otherwise nsPath names a namespace
// file (/run/netns/NAME, /proc/PID/ns/net) and the socket is opened inside
// it (netlink.Config.NetNS), so every later dump reads that namespace
// whatever namespace the calling thread is in.
func Dial(nsPath string) (*Conn, error) {
	cfg := &netlink.Config{}
	if nsPath != "" {
		fd, err := netns.Open(nsPath)
		if err != nil {
			return nil, err
		}
		defer unix.Close(fd)
		cfg.NetNS = fd
	}
	c, err := netlink.Dial(unix.NETLINK_ROUTE, cfg)
	if err != nil {
		return nil, fmt.Errorf("opening the rtnetlink socket: %w", err)
	}
	return &Conn{c: c}, nil
}

// Close closes the socket.
func (c *Conn) Close() error {
	return c.c.Close()
}

// Links returns every interface of the namespace, with its state and
// statistics, from one RTM_GETLINK dump: one kernel request per call, so
// all values of one interface were read at the same moment.
func (c *Conn) Links() ([]Link, error) {
	msgs, err := c.dump()
	if err != nil {
		return nil, err
	}
	out := make([]Link, 0, len(msgs))
	for _, m := range msgs {
		if m.Header.Type != rtmNewlink {
			continue
		}
		l, err := ParseLink(m.Data)
		if err != nil {
			return nil, fmt.Errorf("parsing the link dump: %w", err)
		}
		out = append(out, l)
	}
	return out, nil
}

// dump sends RTM_GETLINK with NLM_F_DUMP and returns the reply messages.
func (c *Conn) dump() ([]netlink.Message, error) {
	req := netlink.Message{
		Header: netlink.Header{
			Type:  rtmGetlink,
			Flags: netlink.Request | netlink.Dump,
		},
		// struct ifinfomsg with ifi_family AF_UNSPEC: every interface.
		Data: make([]byte, sizeofIfInfomsg),
	}
	msgs, err := c.c.Execute(req)
	if err != nil {
		return nil, fmt.Errorf("RTM_GETLINK dump: %w", err)
	}
	return msgs, nil
}
