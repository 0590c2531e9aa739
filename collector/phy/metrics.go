package phy

import "github.com/nic-exporter/nic_exporter/collector/exposition"

// levels are the threshold and flag levels, in label order.
var levels = [4]string{"high_alarm", "high_warning", "low_warning", "low_alarm"}

var (
	// Module (transceiver) series, from the module memory read every
	// Config.ModuleInterval.
	trInfo = exposition.MustNewDesc("nic_transceiver_info",
		"Identity of the pluggable module in the interface's cage, value 1: SFF-8024 identifier, management standard (SFF-8472, SFF-8636, CMIS), connector, media, vendor name, part number, revision and serial number.",
		exposition.Gauge, "device", "identifier", "standard", "connector", "media", "vendor", "part_number", "revision", "serial")
	trTemp = exposition.MustNewDesc("nic_transceiver_temperature_celsius",
		"Module temperature reported by the module's own monitor.",
		exposition.Gauge, "device")
	trVolt = exposition.MustNewDesc("nic_transceiver_supply_voltage_volts",
		"Module supply voltage (Vcc) reported by the module's own monitor.",
		exposition.Gauge, "device")
	trBias = exposition.MustNewDesc("nic_transceiver_laser_bias_current_amperes",
		"Laser bias current of one transmit lane (lane from 0).",
		exposition.Gauge, "device", "lane")
	trTx = exposition.MustNewDesc("nic_transceiver_tx_power_watts",
		"Transmitted optical power of one lane (lane from 0). dBm = 10*log10(watts*1000).",
		exposition.Gauge, "device", "lane")
	trRx = exposition.MustNewDesc("nic_transceiver_rx_power_watts",
		"Received optical power of one lane (lane from 0), average or OMA as the module measures it; 0 for a dark receiver. dBm = 10*log10(watts*1000).",
		exposition.Gauge, "device", "lane")
	trTempThr = exposition.MustNewDesc("nic_transceiver_temperature_threshold_celsius",
		"Module temperature alarm and warning thresholds the module advertises.",
		exposition.Gauge, "device", "level")
	trVoltThr = exposition.MustNewDesc("nic_transceiver_supply_voltage_threshold_volts",
		"Module supply voltage alarm and warning thresholds the module advertises.",
		exposition.Gauge, "device", "level")
	trBiasThr = exposition.MustNewDesc("nic_transceiver_laser_bias_current_threshold_amperes",
		"Laser bias current alarm and warning thresholds the module advertises (the same for every lane).",
		exposition.Gauge, "device", "level")
	trTxThr = exposition.MustNewDesc("nic_transceiver_tx_power_threshold_watts",
		"Transmitted optical power alarm and warning thresholds the module advertises (the same for every lane).",
		exposition.Gauge, "device", "level")
	trRxThr = exposition.MustNewDesc("nic_transceiver_rx_power_threshold_watts",
		"Received optical power alarm and warning thresholds the module advertises (the same for every lane).",
		exposition.Gauge, "device", "level")
	trFlag = exposition.MustNewDesc("nic_transceiver_flag",
		"1 if the module latched the alarm or warning flag of a monitored quantity (temperature, supply_voltage, laser_bias_current, tx_power, rx_power) at a level, else 0; lane is empty for module-wide quantities. Detail series, served at /metrics/detail.",
		exposition.Gauge, "device", "quantity", "level", "lane").AsDetail()
	trLastRead = exposition.MustNewDesc("nic_transceiver_last_read_timestamp_seconds",
		"When the module memory was last read and decoded successfully (Unix time). The module series are as old as this.",
		exposition.Gauge, "device")

	// Link state.
	phyDownEvents = exposition.MustNewDesc("nic_phy_link_down_events_total",
		"Link down events the driver counted since it loaded (ethtool netlink LINKSTATE ext_down_cnt).",
		exposition.Counter, "device")
	phyDownReason = exposition.MustNewDesc("nic_phy_link_down_reason",
		"1 while the link is down and the driver gives a reason (ethtool netlink LINKSTATE extended state and substate, named as ethtool prints them, in snake case).",
		exposition.Gauge, "device", "reason", "substate")

	// FEC.
	phyFECMode = exposition.MustNewDesc("nic_phy_fec_mode_info",
		"Active forward error correction mode (off, rs, baser, llrs), value 1.",
		exposition.Gauge, "device", "mode")
	phyFECCorrected = exposition.MustNewDesc("nic_phy_fec_corrected_blocks_total",
		"FEC codewords (blocks) received with errors the FEC corrected.",
		exposition.Counter, "device")
	phyFECUncorrectable = exposition.MustNewDesc("nic_phy_fec_uncorrectable_blocks_total",
		"FEC codewords (blocks) received with errors the FEC could not correct; each loses frames.",
		exposition.Counter, "device")
	phyFECBits = exposition.MustNewDesc("nic_phy_fec_corrected_bit_errors_total",
		"Bits the FEC corrected. Over the bits received, this is the pre-FEC bit error rate.",
		exposition.Counter, "device")
	phyFECLaneCorrected = exposition.MustNewDesc("nic_phy_fec_lane_corrected_blocks_total",
		"FEC codewords corrected on one lane (lane from 0). Detail series, served at /metrics/detail.",
		exposition.Counter, "device", "lane").AsDetail()
	phyFECLaneUncorrectable = exposition.MustNewDesc("nic_phy_fec_lane_uncorrectable_blocks_total",
		"FEC codewords not correctable on one lane (lane from 0). Detail series, served at /metrics/detail.",
		exposition.Counter, "device", "lane").AsDetail()
	phyFECLaneBits = exposition.MustNewDesc("nic_phy_fec_lane_corrected_bit_errors_total",
		"Bits the FEC corrected on one lane (lane from 0). Detail series, served at /metrics/detail.",
		exposition.Counter, "device", "lane").AsDetail()

	phyFECHist = exposition.MustNewDesc("nic_phy_fec_codewords_total",
		"FEC codewords received with a number of corrected errors in the range of the errors label (\"low-high\", or one number), the driver's FEC histogram bins (ethtool netlink FEC statistics, ETHTOOL_A_FEC_STAT_HIST, on kernels and drivers that report it). A shift towards the higher bins is the margin of the link going. Detail series, served at /metrics/detail.",
		exposition.Counter, "device", "errors").AsDetail()

	// IEEE 802.3 standard counters.
	phySymbolErrors = exposition.MustNewDesc("nic_phy_symbol_errors_total",
		"Symbol errors during carrier (IEEE 802.3 aSymbolErrorDuringCarrier, ethtool group eth-phy).",
		exposition.Counter, "device")
	phyFCSErrors = exposition.MustNewDesc("nic_phy_fcs_errors_total",
		"Frames received with a bad frame check sequence (IEEE 802.3 aFrameCheckSequenceErrors, ethtool group eth-mac).",
		exposition.Counter, "device")
	phyAlignmentErrors = exposition.MustNewDesc("nic_phy_alignment_errors_total",
		"Frames received that are not a whole number of octets and have a bad FCS (IEEE 802.3 aAlignmentErrors, ethtool group eth-mac).",
		exposition.Counter, "device")
	phyStandard = exposition.MustNewDesc("nic_phy_ieee_statistic_total",
		"Every IEEE 802.3 and RFC 2819 standard counter the driver reports (ethtool -S --groups eth-phy eth-mac eth-ctrl rmon), by group and name as ethtool prints them. Detail series, served at /metrics/detail.",
		exposition.Counter, "device", "group", "statistic").AsDetail()
)

// defaultStats maps the standard counters that have a series of their own
// in /metrics.
var defaultStats = map[[2]string]*exposition.Desc{
	{"eth-phy", "SymbolErrorDuringCarrier"}: phySymbolErrors,
	{"eth-mac", "FrameCheckSequenceErrors"}: phyFCSErrors,
	{"eth-mac", "AlignmentErrors"}:          phyAlignmentErrors,
}
