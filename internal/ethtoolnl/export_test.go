//go:build linux

package ethtoolnl

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
