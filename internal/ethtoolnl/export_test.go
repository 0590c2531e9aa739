//go:build linux

package ethtoolnl

import (
	"encoding/binary"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
)

// RawStats returns the attributes of a STATS_GET reply, for tests that
// record real kernel replies as testdata.
func (c *Client) RawStats(ifname string) ([]byte, error) {
	return c.get(cmdStatsGet, statsHeader, ifname, 0, statsRequest)
}

// RawStringSets returns the attributes of a STRSET_GET reply for ids.
func (c *Client) RawStringSets(ids ...uint32) ([]byte, error) {
	return c.get(cmdStrsetGet, strsetHeader, "", 0, stringSetsRequest(ids))
}

// Update reports whether the test run was asked to rewrite testdata.
func Update() bool { return *update }

// SetFEC sets the FEC mode of ifname (ETHTOOL_MSG_FEC_SET with a compact
// ETHTOOL_A_FEC_MODES bitset holding the one mode bit), for tests that
// drive netdevsim's FEC parameters.
func (c *Client) SetFEC(ifname string, mode FECMode) error {
	const (
		cmdFECSet = 30
		fecModes  = 2
	)
	value := make([]byte, 16) // link mode bits 0-127, u32 words, native endian
	binary.NativeEndian.PutUint32(value[4*(mode/32):], 1<<(mode%32))
	_, err := c.set(cmdFECSet, fecHeader, ifname, func(ae *netlink.AttributeEncoder) {
		ae.Nested(fecModes, func(n *netlink.AttributeEncoder) error {
			n.Flag(bitsetNoMask, true)
			n.Uint32(bitsetSize, 128)
			n.Bytes(bitsetValue, value)
			return nil
		})
		ae.Uint8(fecAuto, 0)
	})
	return err
}

// set sends one SET request and waits for its acknowledgement.
func (c *Client) set(cmd uint8, headerAttr uint16, ifname string, extra func(*netlink.AttributeEncoder)) ([]genetlink.Message, error) {
	ae := netlink.NewAttributeEncoder()
	ae.Nested(headerAttr, func(n *netlink.AttributeEncoder) error {
		n.String(headerDevName, ifname)
		return nil
	})
	extra(ae)
	body, err := ae.Encode()
	if err != nil {
		return nil, err
	}
	return c.conn.Execute(genetlink.Message{
		Header: genetlink.Header{Command: cmd, Version: c.family.Version},
		Data:   body,
	}, c.family.ID, netlink.Request|netlink.Acknowledge)
}
