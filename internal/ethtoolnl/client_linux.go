package ethtoolnl

import (
	"errors"
	"fmt"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/internal/netns"
)

// Generic netlink commands (ETHTOOL_MSG_*_GET, user to kernel).
const (
	cmdLinkStateGet = 6
	cmdFECGet       = 29
)

// Client talks to the ethtool generic netlink family in one network
// namespace. It is not safe for concurrent use.
type Client struct {
	conn   *genetlink.Conn
	family genetlink.Family
	log    *zap.Logger
}

// New opens a generic netlink socket in cfg.Netns and resolves the
// ethtool family.
func New(cfg Config, log *zap.Logger) (*Client, error) {
	var conn *genetlink.Conn
	err := netns.Do(cfg.Netns, func() error {
		var err error
		conn, err = genetlink.Dial(nil)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("ethtoolnl: opening generic netlink socket: %w", err)
	}
	fam, err := conn.GetFamily("ethtool")
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("ethtoolnl: resolving the ethtool family: %w", err)
	}
	log.Debug("ethtool netlink family resolved", zap.Uint16("id", fam.ID), zap.Uint32("version", uint32(fam.Version)), zap.String("netns", cfg.Netns))
	return &Client{conn: conn, family: fam, log: log}, nil
}

// Close closes the socket.
func (c *Client) Close() error { return c.conn.Close() }

// LinkState returns the link state of interface ifname.
func (c *Client) LinkState(ifname string) (LinkState, error) {
	attrs, err := c.get(cmdLinkStateGet, linkstateHeader, ifname, 0)
	if err != nil {
		return LinkState{}, fmt.Errorf("ethtoolnl: linkstate of %s: %w", ifname, err)
	}
	ls, err := parseLinkState(attrs)
	if err != nil {
		return LinkState{}, fmt.Errorf("ethtoolnl: linkstate of %s: %w", ifname, err)
	}
	return ls, nil
}

// FEC returns the FEC mode and statistics of interface ifname. Drivers
// without FEC support (veth, most virtual devices) fail with an error for
// which IsNotSupported is true.
func (c *Client) FEC(ifname string) (FEC, error) {
	attrs, err := c.get(cmdFECGet, fecHeader, ifname, flagStats)
	if err != nil {
		return FEC{}, fmt.Errorf("ethtoolnl: fec of %s: %w", ifname, err)
	}
	f, err := parseFEC(attrs)
	if err != nil {
		return FEC{}, fmt.Errorf("ethtoolnl: fec of %s: %w", ifname, err)
	}
	return f, nil
}

// get sends one GET request with a request header naming ifname and
// returns the attributes of the single reply.
func (c *Client) get(cmd uint8, headerAttr uint16, ifname string, flags uint32) ([]byte, error) {
	ae := netlink.NewAttributeEncoder()
	ae.Nested(headerAttr, func(nae *netlink.AttributeEncoder) error {
		nae.String(headerDevName, ifname)
		if flags != 0 {
			nae.Uint32(headerFlags, flags)
		}
		return nil
	})
	body, err := ae.Encode()
	if err != nil {
		return nil, fmt.Errorf("encoding request: %w", err)
	}
	msgs, err := c.conn.Execute(genetlink.Message{
		Header: genetlink.Header{Command: cmd, Version: c.family.Version},
		Data:   body,
	}, c.family.ID, netlink.Request)
	if err != nil {
		var oe *netlink.OpError
		if errors.As(err, &oe) && oe.Message != "" {
			return nil, fmt.Errorf("%w (%s)", err, oe.Message)
		}
		return nil, err
	}
	if len(msgs) != 1 {
		return nil, fmt.Errorf("%d replies, want 1", len(msgs))
	}
	return msgs[0].Data, nil
}
