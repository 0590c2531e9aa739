package demo

// A card is one adapter of the reference host. Every source that reports
// a firmware version, board id (PSID) or serial number for one of its PCI
// functions takes it from here, so devlink info, `ethtool -i` and the RDMA
// core's sysfs agree as they do on a real host: the firmware runs on the
// card, not on a function.
type card struct {
	// functions are the PCI addresses of the card's functions.
	functions []string
	// firmware is the running (and stored) firmware version, empty if the
	// driver reports none.
	firmware string
	// psid is the board id (mlx5: the PSID); serial the VPD serial number.
	psid, serial string
}

// cx7 is the dual-port ConnectX-7 (MT4129): function 0 runs the
// InfiniBand port (mlx5_0, ibp8s0f0), function 1 the Ethernet port
// (mlx5_1, enp8s0f1np1). Firmware 28.45.4028 as in the ibstat dump of
// geerlingguy/sbc-reviews#92; PSID MT_0000000838 as in the dumps of
// leptonai/gpud#943.
var cx7 = card{
	functions: []string{"0000:08:00.0", "0000:08:00.1"},
	firmware:  "28.45.4028",
	psid:      "MT_0000000838",
	serial:    "MT2347X01938",
}

// ethtoolFirmware returns the firmware-version line `ethtool -i` shows for
// one of the card's functions; mlx5 appends the PSID in parentheses
// (mlx5e_ethtool_get_drvinfo).
func (c card) ethtoolFirmware() string {
	if c.psid == "" {
		return c.firmware
	}
	return c.firmware + " (" + c.psid + ")"
}
