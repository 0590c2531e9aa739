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
	cmdStrsetGet       = 1
	cmdLinkStateGet    = 6
	cmdFECGet          = 29
	cmdModuleEEPROMGet = 31
	cmdStatsGet        = 32
)

// Client talks to the ethtool generic netlink family in one network
// namespace. It is not safe for concurrent use.
type Client struct {
	conn   *genetlink.Conn
	family genetlink.Family
	log    *zap.Logger
	// strings caches the global string sets Stats resolves counter
	// names with; they are fixed for the running kernel.
	strings map[uint32][]string
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
	return &Client{conn: conn, family: fam, log: log, strings: map[uint32][]string{}}, nil
}

// Close closes the socket.
func (c *Client) Close() error { return c.conn.Close() }

// LinkState returns the link state of interface ifname.
func (c *Client) LinkState(ifname string) (LinkState, error) {
	attrs, err := c.get(cmdLinkStateGet, linkstateHeader, ifname, 0, nil)
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
	attrs, err := c.get(cmdFECGet, fecHeader, ifname, flagStats, nil)
	if err != nil {
		return FEC{}, fmt.Errorf("ethtoolnl: fec of %s: %w", ifname, err)
	}
	f, err := parseFEC(attrs)
	if err != nil {
		return FEC{}, fmt.Errorf("ethtoolnl: fec of %s: %w", ifname, err)
	}
	return f, nil
}

// Stats returns the standard statistics groups eth-phy, eth-mac,
// eth-ctrl and rmon of interface ifname (ETHTOOL_MSG_STATS_GET, kernel
// 5.13+). Counter names come from the kernel's string sets, fetched once
// per Client (ETHTOOL_MSG_STRSET_GET). A driver without standard
// statistics yields an empty Stats and no error (see Stats.Groups); a
// kernel without the message fails with an error for which
// IsNotSupported is true.
func (c *Client) Stats(ifname string) (Stats, error) {
	attrs, err := c.get(cmdStatsGet, statsHeader, ifname, 0, statsRequest)
	if err != nil {
		return Stats{}, fmt.Errorf("ethtoolnl: stats of %s: %w", ifname, err)
	}
	rs, err := parseStats(attrs)
	if err != nil {
		return Stats{}, fmt.Errorf("ethtoolnl: stats of %s: %w", ifname, err)
	}
	var missing []uint32
	for _, g := range rs.groups {
		if _, ok := c.strings[g.ssID]; !ok && len(g.stats) > 0 {
			missing = append(missing, g.ssID)
		}
	}
	if len(missing) > 0 {
		attrs, err := c.get(cmdStrsetGet, strsetHeader, "", 0, stringSetsRequest(missing))
		if err != nil {
			return Stats{}, fmt.Errorf("ethtoolnl: stats of %s: string sets %v: %w", ifname, missing, err)
		}
		sets, err := parseStringSets(attrs)
		if err != nil {
			return Stats{}, fmt.Errorf("ethtoolnl: stats of %s: %w", ifname, err)
		}
		for _, id := range missing {
			c.strings[id] = sets[id] // nil when the kernel did not answer it: named by index
		}
	}
	return rs.resolve(c.strings), nil
}

// ModuleEEPROM reads one range of the plug-in module's memory of
// interface ifname (ETHTOOL_MSG_MODULE_EEPROM_GET, kernel 5.13+; needs
// CAP_NET_ADMIN in the namespace's user namespace). The kernel falls back
// to the driver's legacy module callbacks itself, so EOPNOTSUPP
// (IsNotSupported) means the driver has no module access at all or the
// kernel predates the message; EIO (IsModuleIO) means the module failed
// the I2C read; ENODEV (IsNoDevice) means the interface is gone.
func (c *Client) ModuleEEPROM(ifname string, req ModuleEEPROMRequest) ([]byte, error) {
	if err := req.validate(); err != nil {
		return nil, fmt.Errorf("ethtoolnl: module eeprom of %s: %w", ifname, err)
	}
	attrs, err := c.get(cmdModuleEEPROMGet, eepromHeader, ifname, 0, req.encode)
	if err != nil {
		return nil, fmt.Errorf("ethtoolnl: module eeprom of %s (%s): %w", ifname, req, err)
	}
	data, err := parseModuleEEPROM(attrs, req.Length)
	if err != nil {
		return nil, fmt.Errorf("ethtoolnl: module eeprom of %s (%s): %w", ifname, req, err)
	}
	return data, nil
}

// get sends one GET request with a request header naming ifname (or no
// device when ifname is empty, for global string sets), then the attributes
// extra adds, and returns the attributes of the single reply.
func (c *Client) get(cmd uint8, headerAttr uint16, ifname string, flags uint32, extra func(*netlink.AttributeEncoder)) ([]byte, error) {
	ae := netlink.NewAttributeEncoder()
	ae.Nested(headerAttr, func(nae *netlink.AttributeEncoder) error {
		if ifname != "" {
			nae.String(headerDevName, ifname)
		}
		if flags != 0 {
			nae.Uint32(headerFlags, flags)
		}
		return nil
	})
	if extra != nil {
		extra(ae)
	}
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
