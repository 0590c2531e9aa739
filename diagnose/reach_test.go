package diagnose

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/nic-exporter/nic_exporter/internal/ruleeval"
	"github.com/nic-exporter/nic_exporter/vmastats"
	"github.com/nic-exporter/nic_exporter/vmastats/vmastatstest"
	"github.com/nic-exporter/nic_exporter/xliostats"
	"github.com/nic-exporter/nic_exporter/xliostats/xliostatstest"
)

// The bundles of the reachability table are built from the formats
// diagnose reads, with lines of real outputs: the kernel log lines come
// from the kmsg corpus (testdata/realworld/kmsg/kmsg_lines.tsv) and
// internal/logrules/rules_test.go, which name their sources; the ibstat
// and devlink health layouts are those of the fixtures in
// testdata/bundles/mlx5_fault; statistic names are the drivers'.

// reachUptime is the /proc/uptime of every reachability bundle: ten
// minutes, so a counter's average since boot is high enough for the
// rate thresholds with small counts.
const reachUptime = "600.00 1150.00\n"

// ethtoolS is an ethtool -i/-S file of driver with the statistics given
// as "name: value" lines.
func ethtoolS(driver string, stats ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "driver: %s\nversion: 6.8.0\nfirmware-version: 1.0\nbus-info: 0000:00:05.0\nNIC statistics:\n", driver)
	for _, s := range stats {
		b.WriteString("     " + s + "\n")
	}
	return b.String()
}

// devlinkHealth is devlink health show text for one reporter of
// pci/0000:08:00.0.
func devlinkHealth(reporter, state string, errors int) string {
	return fmt.Sprintf("pci/0000:08:00.0:\n  reporter %s\n    state %s error %d recover 0 auto_dump true\n", reporter, state, errors)
}

// ibstat is one InfiniBand port as ibstat prints it.
func ibstat(state, phys string) string {
	return "CA 'mlx5_0'\n\tCA type: MT4129\n\tNumber of ports: 1\n\tFirmware version: 28.39.1002\n\tPort 1:\n" +
		"\t\tState: " + state + "\n\t\tPhysical state: " + phys + "\n\t\tRate: 400\n\t\tLink layer: InfiniBand\n"
}

// kernelLog repeats a kernel log line n times with timestamps.
func kernelLog(line string, n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "[  %d.%06d] %s\n", 100+i, i, line)
	}
	return b.String()
}

// twoSamples is a collect bundle's manifest with the earlier sample ten
// seconds before the later one, ten minutes after boot.
const twoSamples = `{"tool": "nic_exporter collect", "samples": [` +
	`{"dir": "earlier_sample", "time": "2026-01-02T03:04:05Z", "uptime_seconds": 590},` +
	`{"dir": "", "time": "2026-01-02T03:04:15Z", "uptime_seconds": 600}]}`

// netdevSysfs is netdev_sysfs.txt of an up interface eth0 with the
// carrier changes given.
func netdevSysfs(changes int) string {
	return fmt.Sprintf("eth0/operstate:up\neth0/carrier:1\neth0/carrier_changes:%d\neth0/flags:0x1003\n", changes)
}

// exporterMetrics is the exporter's /metrics as collect --url writes it
// (metrics.txt): each argument is a sample line and its family's type,
// "SAMPLE TYPE", with the labels of docs/metrics.md and
// cmd/nic_exporter/testdata/demo.prom (the demo daemon's scrape).
func exporterMetrics(samples ...string) string {
	var b strings.Builder
	for _, s := range samples {
		i := strings.LastIndex(s, " ")
		line, typ := s[:i], s[i+1:]
		name := line[:strings.IndexAny(line, "{ ")]
		fmt.Fprintf(&b, "# HELP %s A family of the exporter.\n# TYPE %s %s\n%s\n", name, name, typ, line)
	}
	return b.String()
}

// counters is an RDMA counters file as collect writes it: "name:value"
// lines.
func counters(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

// modulePatch marks a files value that reachBundle replaces with the
// module dump of the demo_collect bundle (a CMIS OSFP module as the demo
// host's phy source gives it) with hex rows patched: "OLD ROW => NEW ROW".
const modulePatch = "module dump with row patched: "

// Rows of that dump: page 0x00's first row (bytes 14-15 the temperature,
// 0x3440 = 52.25 C; 72 C is above the module's 70 C high warning) and
// page 0x11's row 0xb0 (bytes 0xba-0xbb lane 1's receive power in 0.1 uW,
// 0x207e = -0.8 dBm; 0x03e8 = -10 dBm is below the -9 dBm low warning,
// 0x0064 = -20 dBm below the -12 dBm low alarm).
const (
	moduleTempRow = "00: 19 40 04 07 00 00 00 00 00 00 00 00 00 00 34 40"
	moduleRxRow   = "b0: 61 a8 00 00 00 00 00 00 00 00 20 7e 1e 52 1d a2"
)

// hwmonSysfs is collect's hwmon_sysfs.txt of one mlx5 function behind
// eth0 whose ASIC sensor reads the temperature given in millidegrees,
// against mlx5's 105 °C critical threshold (the demo host's layout).
func hwmonSysfs(milli int) string {
	const dir = "bus/pci/devices/0000:08:00.0/"
	return fmt.Sprintf("%shwmon/hwmon2/name:mlx5\n%shwmon/hwmon2/temp1_crit:105000\n%shwmon/hwmon2/temp1_input:%d\n"+
		"%shwmon/hwmon2/temp1_label:asic\n%snet/eth0/ifindex:2\n", dir, dir, dir, milli, dir, dir)
}

// vmaStats is a libvma 9.8.84 statistics file (vmastatstest's sample: a
// UDP and an established TCP socket, one CQ, two buffer pools) with every
// drop, "no buffers" and OS-path count zero, then edit applied. The
// encoder writes the layout of libvma's vma_stats.h; vmastats' golden
// test checks its decoder against files the real library wrote.
func vmaStats(edit func(*vmastats.Stats)) string {
	s := vmastatstest.Sample(vmastats.LayoutB)
	for i := range s.CQs {
		s.CQs[i].RxPktDrop = 0
	}
	for i := range s.BufferPools {
		s.BufferPools[i].NoBuffers = 0
	}
	for i := range s.Sockets {
		s.Sockets[i].Counters = [vmastats.NumCounters]uint32{}
		s.Sockets[i].Counters[vmastats.RxPackets] = 1000
	}
	edit(s)
	b, err := vmastatstest.Encode(s)
	if err != nil {
		panic("encoding the reachability bundle's libvma file: " + err.Error())
	}
	return string(b)
}

// xlioStats is a libxlio 3.70.2 statistics file (as DOCA ships it, with
// UTLS) with two socket slots, an rx buffer pool, a CQ and one TCP socket
// in slot 0, with the values given for them (xliostatstest writes the
// file through the layout table the decoder reads; a test checks its
// empty file byte for byte against ones real libxlio wrote).
func xlioStats(pool, cq, sock map[string]uint64) string {
	f, err := xliostatstest.NewFile("8acf4c5e11413c1da2c7f27b2ec26476", true, [4]uint16{3, 70, 2, 0}, 2)
	if err != nil {
		panic("writing the reachability bundle's libxlio file: " + err.Error())
	}
	set := func(array string, v map[string]uint64) {
		if err := errors.Join(f.Enable(array, 0), f.SetAll(array, 0, v)); err != nil {
			panic("writing the reachability bundle's libxlio file: " + err.Error())
		}
	}
	set("bpool_inst_arr", merge(map[string]uint64{"is_rx": 1, "n_buffer_pool_size": 4096}, pool))
	set("cq_inst_arr", merge(map[string]uint64{"n_rx_packet_count": 1000}, cq))
	set("skt_inst_arr", merge(map[string]uint64{"fd": 9, "inode": 5120002, "socket_type": xliostats.SockStream, "tcp_state": 4,
		"sa_family": 2, "b_is_offloaded": 1, "n_rx_packets": 1000}, sock))
	return string(f.B)
}

func merge(a, b map[string]uint64) map[string]uint64 {
	for k, v := range b {
		a[k] = v
	}
	return a
}

// noHandshake is a collect manifest that says the statistics file name
// was read without the reader handshake.
func noHandshake(name string, pid int) string {
	return fmt.Sprintf(`{"tool": "nic_exporter collect", "files": [{"name": %q, "source": "/tmp/%s", "process": {"pid": %d, "comm": "md_feed", "reader_handshake": false}}]}`,
		name, filepath.Base(name), pid)
}

// reachable is the table alert -> bundle format -> bundle: for each
// alert of alerts.yml whose series a bundle format diagnose reads can
// carry, a bundle that shows it.
var reachable = []struct {
	alert, format string
	files         map[string]string
}{
	{"NICExporterCollectorDown", "exporter /metrics (collect --url)", map[string]string{"metrics.txt": exporterMetrics("nic_exporter_collector_up{collector=\"devlink\"} 0 gauge")}},
	{"NICDevlinkEvidenceCaptured", "exporter /metrics (collect --url)", map[string]string{"metrics.txt": exporterMetrics("nic_devlink_health_captures_total{device=\"pci/0000:08:00.0\",port=\"\",netdev=\"\",reporter=\"fw_fatal\"} 1 counter")}},
	{"NICVMAStatsFilesRejected", "exporter /metrics (collect --url)", map[string]string{"metrics.txt": exporterMetrics("nic_vma_files{state=\"refused\"} 1 gauge")}},
	{"NICXLIOStatsFilesRejected", "exporter /metrics (collect --url)", map[string]string{"metrics.txt": exporterMetrics("nic_xlio_files{state=\"unsupported\"} 1 gauge")}},
	{"NICAppLogVMAErrors", "exporter /metrics (collect --url)", map[string]string{"metrics.txt": exporterMetrics("nic_app_log_events_total{file=\"/log/vma/md_feed-4242.log\",event=\"vma_rx_buffers_exhausted\"} 7 counter")}},
	{"NICFabricRemoteSymbolErrors", "exporter /metrics (collect --url)", map[string]string{"metrics.txt": exporterMetrics("nic_fabric_remote_port_symbol_error_total{device=\"mlx5_0\",port=\"1\",remote_guid=\"0x0002c90300a1b2c3\",remote_node=\"switch-7\",remote_port=\"12\"} 65535 counter")}},
	{"NICFabricRemoteLinkErrorRecovery", "exporter /metrics (collect --url)", map[string]string{"metrics.txt": exporterMetrics("nic_fabric_remote_port_link_error_recovery_total{device=\"mlx5_0\",port=\"1\",remote_guid=\"0x0002c90300a1b2c3\",remote_node=\"switch-7\",remote_port=\"12\"} 3 counter")}},
	{"NICFabricRemoteLinkDowned", "exporter /metrics (collect --url)", map[string]string{"metrics.txt": exporterMetrics("nic_fabric_remote_port_link_downed_total{device=\"mlx5_0\",port=\"1\",remote_guid=\"0x0002c90300a1b2c3\",remote_node=\"switch-7\",remote_port=\"12\"} 2 counter")}},
	{"NICFabricRemoteRcvErrors", "exporter /metrics (collect --url)", map[string]string{"metrics.txt": exporterMetrics("nic_fabric_remote_port_rcv_errors_total{device=\"mlx5_0\",port=\"1\",remote_guid=\"0x0002c90300a1b2c3\",remote_node=\"switch-7\",remote_port=\"12\"} 400 counter")}},
	{"NICFabricCongestion", "exporter /metrics (collect --url)", map[string]string{"metrics.txt": exporterMetrics("nic_fabric_remote_port_xmit_wait_total{device=\"mlx5_0\",port=\"1\",remote_guid=\"0x0002c90300a1b2c3\",remote_node=\"switch-7\",remote_port=\"12\"} 4294967295 counter")}},
	{"NICFabricLinkEndsDisagree", "exporter /metrics (collect --url)", map[string]string{"metrics.txt": exporterMetrics("nic_fabric_remote_port_state{device=\"mlx5_0\",port=\"1\",remote_guid=\"0x0002c90300a1b2c3\",remote_node=\"switch-7\",remote_port=\"12\"} 1 gauge", "nic_fabric_local_port_state{device=\"mlx5_0\",port=\"1\"} 4 gauge")}},
	{"NICDevlinkFwFatalError", "devlink health show", map[string]string{"devlink_health.txt": devlinkHealth("fw_fatal", "error", 1)}},
	{"NICDevlinkFwError", "devlink health show", map[string]string{"devlink_health.txt": devlinkHealth("fw", "healthy", 1)}},
	{"NICDevlinkVnicError", "devlink health show", map[string]string{"devlink_health.txt": devlinkHealth("vnic", "healthy", 2)}},
	{"NICDevlinkTxRxErrors", "devlink health show", map[string]string{"devlink_health.txt": devlinkHealth("tx", "healthy", 3)}},
	{"NICDevlinkReporterStuck", "devlink health show", map[string]string{"devlink_health.txt": devlinkHealth("port", "error", 3)}},
	{"NICLinkDown", "ethtool DEV", map[string]string{"ethtool_eth0.txt": "Settings for eth0:\n\tSpeed: Unknown!\n\tDuplex: Unknown! (255)\n\tLink detected: no\n"}},
	{"NICFECUncorrectableBlocks", "ethtool -I --show-fec", map[string]string{"ethtool_--show-fec_eth0.txt": "FEC parameters for eth0:\nActive FEC encoding: RS\nStatistics:\n  corrected_blocks: 256\n  uncorrectable_blocks: 145\n"}},
	{"NICLinkDownWithReason", "ethtool DEV (ethtool 5.8+)", map[string]string{"ethtool_eth0.txt": "Settings for eth0:\n\tSpeed: Unknown!\n\tLink detected: no (Autoneg, No partner detected)\n"}},
	{"NICPCIeLinkDegraded", "lspci -vvv", map[string]string{"lspci.txt": "b3:00.0 Ethernet controller: Mellanox Technologies MT2910 Family [ConnectX-7]\n\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM not supported\n\t\tLnkSta:\tSpeed 16GT/s (downgraded), Width x16\n"}},
	{"NICPCIeAERUncorrectable", "lspci -vvv", map[string]string{"lspci.txt": "b3:00.0 Ethernet controller: Mellanox Technologies MT2910 Family [ConnectX-7]\n\t\tDevSta:\tCorrErr- NonFatalErr+ FatalErr- UnsupReq- AuxPwr- TransPend-\n\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM not supported\n\t\tLnkSta:\tSpeed 32GT/s, Width x16\n"}},
	{"NICInfiniBandPortNotLinkUp", "ibstat", map[string]string{"ibstat.txt": ibstat("Down", "Polling")}},
	{"NICInfiniBandPortNotActive", "ibstat", map[string]string{"ibstat.txt": ibstat("Initializing", "LinkUp")}},
	{"NICENAWatchdogExpired", "ethtool -S (ena)", map[string]string{"ethtool_-S_eth0": ethtoolS("ena", "wd_expired: 1")}},
	{"NICENATxTimeout", "ethtool -S (ena)", map[string]string{"ethtool_-S_eth0": ethtoolS("ena", "tx_timeout: 1")}},
	{"NICENAAdminQueuePaused", "ethtool -S (ena)", map[string]string{"ethtool_-S_eth0": ethtoolS("ena", "admin_q_pause: 1")}},
	{"NICENAResets", "ethtool -S (ena)", map[string]string{"ethtool_-S_eth0": ethtoolS("ena", "missing_tx_cmpl: 1")}},
	{"NICENAMissingTxCompletions", "ethtool -S (ena)", map[string]string{"ethtool_-S_eth0": ethtoolS("ena", "queue_0_tx_missed_tx: 2")}},
	{"NICENAAllocationFailures", "ethtool -S (ena)", map[string]string{"ethtool_-S_eth0": ethtoolS("ena", "queue_0_rx_page_alloc_fail: 2")}},
	{"NICENAAllowanceExceeded", "ethtool -S (ena)", map[string]string{"ethtool_-S_eth0": ethtoolS("ena", "pps_allowance_exceeded: 40")}},
	{"NICENAExpressFallback", "ethtool -S (ena)", map[string]string{"ethtool_-S_eth0": ethtoolS("ena", "ena_srd_mode: 1", "ena_srd_eligible_tx_pkts: 1000000", "ena_srd_tx_pkts: 500000", "ena_srd_resource_utilization: 10")}},
	{"NICENAExpressResourcesHigh", "ethtool -S (ena)", map[string]string{"ethtool_-S_eth0": ethtoolS("ena", "ena_srd_mode: 1", "ena_srd_resource_utilization: 95")}},
	{"NICRxOutOfBuffer", "ethtool -S (mlx5)", map[string]string{"ethtool_-S_eth0": ethtoolS("mlx5_core", "rx_out_of_buffer: 1000")}},
	{"NICPFCPauseStorm", "ethtool -S (mlx5)", map[string]string{"ethtool_-S_eth0": ethtoolS("mlx5_core", "tx_pause_storm_error_events: 1")}},
	{"NICPhyDiscards", "ethtool -S (mlx5)", map[string]string{"ethtool_-S_eth0": ethtoolS("mlx5_core", "rx_discards_phy: 5000")}},
	{"NICPhyErrors", "ethtool -S (mlx5)", map[string]string{"ethtool_-S_eth0": ethtoolS("mlx5_core", "rx_symbol_err_phy: 7")}},
	{"NICModuleEvent", "ethtool -S (mlx5)", map[string]string{"ethtool_-S_eth0": ethtoolS("mlx5_core", "module_unplug: 1")}},
	{"NICPreFECBERHigh", "ethtool -S (mlx5)", map[string]string{"ethtool_-S_eth0": ethtoolS("mlx5_core", "rx_bits_phy: 6000000000000", "rx_corrected_bits_phy: 600000000")}},
	{"NICLinkFlapping", "netdev_sysfs.txt, two samples", map[string]string{"manifest.json": twoSamples,
		"earlier_sample/netdev_sysfs.txt": netdevSysfs(2), "netdev_sysfs.txt": netdevSysfs(8)}},
	{"NICPCIeAERCorrectableHigh", "pci_sysfs.txt", map[string]string{"pci_sysfs.txt": "0000:08:00.1/aer_dev_correctable:RxErr 100\n0000:08:00.1/aer_dev_correctable:TOTAL_ERR_COR 100\n"}},
	{"NICTransceiverRxPowerLow", "ethtool -m (collect)", map[string]string{"ethtool_-m_eth0.txt": modulePatch + moduleRxRow + " => b0: 61 a8 00 00 00 00 00 00 00 00 03 e8 1e 52 1d a2"}},
	{"NICTransceiverRxPowerLowAlarm", "ethtool -m (collect)", map[string]string{"ethtool_-m_eth0.txt": modulePatch + moduleRxRow + " => b0: 61 a8 00 00 00 00 00 00 00 00 00 64 1e 52 1d a2"}},
	{"NICTransceiverTemperatureHigh", "ethtool -m (collect)", map[string]string{"ethtool_-m_eth0.txt": modulePatch + moduleTempRow + " => 00: 19 40 04 07 00 00 00 00 00 00 00 00 00 00 48 00"}},
	{"NICTemperatureHigh", "hwmon_sysfs.txt (collect)", map[string]string{"hwmon_sysfs.txt": hwmonSysfs(96000)}},
	{"NICTemperatureCritical", "hwmon_sysfs.txt (collect)", map[string]string{"hwmon_sysfs.txt": hwmonSysfs(106000)}},
	{"NICInfiniBandSymbolErrors", "ib_counters (collect)", map[string]string{"ib_counters_mlx5_0_1.txt": counters("link_downed:0", "symbol_error:50")}},
	{"NICInfiniBandLinkDowned", "ib_counters (collect)", map[string]string{"ib_counters_mlx5_0_1.txt": counters("link_downed:1", "symbol_error:0")}},
	{"NICInfiniBandCounterSaturated", "ib_counters (collect)", map[string]string{"ib_counters_mlx5_0_1.txt": counters("symbol_error:65535")}},
	{"NICInfiniBandRNRRetriesExceeded", "hw_counters (collect)", map[string]string{"hw_counters_mlx5_0_1.txt": counters("req_rnr_retries_exceeded:1")}},
	{"NICInfiniBandTransportRetriesExceeded", "hw_counters (collect)", map[string]string{"hw_counters_mlx5_0_1.txt": counters("req_transport_retries_exceeded:1")}},
	{"NICInfiniBandRemoteAccessErrors", "hw_counters (collect)", map[string]string{"hw_counters_mlx5_0_1.txt": counters("req_remote_access_errors:1")}},
	{"NICRoCECongestion", "ib_counters + hw_counters (collect)", map[string]string{"ib_counters_mlx5_1_1.txt": counters("port_rcv_packets:12000000"),
		"hw_counters_mlx5_1_1.txt": counters("np_ecn_marked_roce_packets:100000")}},
	{"NICRDMARetransmissions", "ib_counters + hw_counters (collect)", map[string]string{"ib_counters_mlx5_1_1.txt": counters("port_xmit_packets:12000000"),
		"hw_counters_mlx5_1_1.txt": counters("implied_nak_seq_err:0", "local_ack_timeout_err:1000", "packet_seq_err:0")}},
	{"NICRDMAReceiverNotReady", "ib_counters + hw_counters (collect)", map[string]string{"ib_counters_mlx5_1_1.txt": counters("port_xmit_packets:12000000"),
		"hw_counters_mlx5_1_1.txt": counters("rnr_nak_retry_err:1000")}},
	{"NICEFARetransmissions", "hw_counters (collect, efa)", map[string]string{"hw_counters_rdmap0s6_1.txt": counters("tx_pkts:12000000", "retrans_pkts:100000")}},
	{"NICEFARxDrops", "hw_counters (collect, efa)", map[string]string{"hw_counters_rdmap0s6_1.txt": counters("rx_pkts:12000000", "rx_drops:10000")}},
	{"NICEFARemoteUnresponsive", "hw_counters (collect, efa)", map[string]string{"hw_counters_rdmap0s6_1.txt": counters("unresponsive_remote_events:1")}},
	{"NICEFARemoteConnectionImpaired", "hw_counters (collect, efa)", map[string]string{"hw_counters_rdmap0s6_1.txt": counters("impaired_remote_conn_events:1")}},
	{"NICEFARDMAWorkRequestErrors", "hw_counters (collect, efa)", map[string]string{"hw_counters_rdmap0s6_1.txt": counters("rdma_read_wr_err:1")}},
	{"NICKernelLogFirmwareError", "kernel log", map[string]string{"dmesg_mlx5.txt": kernelLog("mlx5_core 0000:01:00.0: poll_health:795:(pid 0): Fatal error 1 detected", 1)}},
	{"NICKernelLogCommandErrors", "kernel log", map[string]string{"dmesg_mlx5.txt": kernelLog("mlx5_core 0000:01:00.2: mlx5_cmd_check:782:(pid 4328): 2RST_QP(0x50a) op_mod(0x0) failed, status bad resource state(0x9), syndrome (0x7ea02d)", 1)}},
	{"NICKernelLogCQErrors", "kernel log", map[string]string{"dmesg_mlx5.txt": kernelLog("mlx5_core 0000:08:00.0: cq_err_event_notifier:517:(pid 0): CQ error on CQN 0x487, syndrome 0x1", 1)}},
	{"NICKernelLogHardwareEvent", "kernel log", map[string]string{"dmesg_mlx5.txt": kernelLog("mlx5_core 0000:5c:00.0: mlx5_port_module_event:1131:(pid 0): Port module event[error]: module 0, Cable error, High Temperature", 1)}},
	{"NICKernelLogTxTimeout", "kernel log", map[string]string{"dmesg.txt": kernelLog("NETDEV WATCHDOG: enp0s2 (ena): transmit queue 0 timed out", 1)}},
	{"NICKernelLogENAReset", "kernel log", map[string]string{"dmesg.txt": kernelLog("ena 0000:00:05.0 eth0: Trigger reset is on", 1)}},
	{"NICKernelLogPCIeUncorrectable", "kernel log", map[string]string{"dmesg.txt": kernelLog("pcieport 0000:00:01.1: AER: Uncorrectable (Non-Fatal) error message received from 0000:08:00.1", 1)}},
	{"NICKernelLogPCIeCorrected", "kernel log", map[string]string{"dmesg.txt": kernelLog("pcieport 0000:00:1d.0: AER: Corrected error received: 0000:07:00.0", 6)}},
	{"NICKernelLogDeviceInitFailed", "kernel log", map[string]string{"dmesg.txt": kernelLog("mlx5_core.eth: probe of mlx5_core.eth.1 failed with error -22", 1)}},
	{"NICKernelLogRDMAErrors", "kernel log", map[string]string{"dmesg.txt": kernelLog("infiniband rocep7s0f1: Fatal error (1) on MAD QP (1)", 1)}},
	{"NICVMANoBuffers", "vmastat.PID (collect)", map[string]string{"vma/vmastat.4242": vmaStats(func(s *vmastats.Stats) { s.BufferPools[0].NoBuffers = 20 })}},
	{"NICVMADrops", "vmastat.PID (collect)", map[string]string{"vma/vmastat.4242": vmaStats(func(s *vmastats.Stats) { s.CQs[0].RxPktDrop = 5000 })}},
	{"NICVMAOSFallback", "vmastat.PID (collect)", map[string]string{"vma/vmastat.4242": vmaStats(func(s *vmastats.Stats) {
		s.Sockets[1].Offloaded = false
		s.Sockets[1].Counters[vmastats.TxOSPackets] = 5000
	})}},
	{"NICVMAStatsStale", "vmastat.PID + manifest.json (collect)", map[string]string{"vma/vmastat.4242": vmaStats(func(*vmastats.Stats) {}),
		"manifest.json": noHandshake("vma/vmastat.4242", 4242)}},
	{"NICXLIONoBuffers", "xliostat.PID (collect)", map[string]string{"xlio/xliostat.4343": xlioStats(map[string]uint64{"n_buffer_pool_no_bufs": 20}, nil, nil)}},
	{"NICXLIODrops", "xliostat.PID (collect)", map[string]string{"xlio/xliostat.4343": xlioStats(nil, map[string]uint64{"n_rx_sw_pkt_drops": 5000}, nil)}},
	{"NICXLIOOSFallback", "xliostat.PID (collect)", map[string]string{"xlio/xliostat.4343": xlioStats(nil, nil, map[string]uint64{"b_is_offloaded": 0, "n_tx_os_packets": 5000})}},
	{"NICXLIOStatsStale", "xliostat.PID + manifest.json (collect)", map[string]string{"xlio/xliostat.4343": xlioStats(nil, nil, nil),
		"manifest.json": noHandshake("xlio/xliostat.4343", 4343)}},
	{"NICKernelLogIOMMUFault", "kernel log", map[string]string{"dmesg.txt": kernelLog("mlx5_core 0000:c1:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x002f address=0x24d08000 flags=0x0000]", 1)}},
}

// unreachable lists the alerts of alerts.yml no bundle format diagnose
// reads can show, and why. docs/diagnose.md has the same list.
var unreachable = map[string]string{
	"NICExporterDown":             "about the exporter's scrape: a bundle is read as one successful scrape (up 1)",
	"NICExporterTargetsAbsent":    "about the exporter's scrape: a bundle is read as one successful scrape (up 1)",
	"NICExporterDevicesMissing":   "compares the exporter's device count with its 6-hour maximum: the exporter's /metrics in a bundle is its own maximum",
	"NICENAConntrackAllowanceLow": "compares a level with its 1-day maximum: one snapshot is its own maximum, and collect's two samples are seconds apart",
	"NICFirmwareSkew":             "compares firmware versions across the hosts of a pool: one bundle is one host",
	"NICFirmwareKnownBad":         "the known-bad list is empty in the shipped rules, and nic_devlink_info is not exported from bundles (mlxfwmanager is an inventory)",
	"NICDriverKnownBad":           "the known-bad list is empty in the shipped rules",
}

// reachBundle builds the bundle of a table row, with reachUptime.
func reachBundle(t *testing.T, files map[string]string) *Bundle {
	t.Helper()
	all := map[string]string{"proc_uptime": reachUptime}
	for k, v := range files {
		if patch, ok := strings.CutPrefix(v, modulePatch); ok {
			v = patchedModule(t, patch)
		}
		all[k] = v
	}
	return bundleOf(t, all)
}

// patchedModule returns the demo_collect bundle's module dump with one
// hex row replaced ("OLD => NEW"), without its comment lines, which
// describe the unpatched values.
func patchedModule(t *testing.T, patch string) string {
	t.Helper()
	old, repl, ok := strings.Cut(patch, " => ")
	if !ok {
		t.Fatalf("bad patch %q", patch)
	}
	data, err := os.ReadFile(filepath.Join("testdata", "bundles", "demo_collect", "ethtool_-m_enp8s0f1np1.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	n := 0
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "#") {
			continue
		}
		if l == old && n == 0 {
			l, n = repl, 1
		}
		out = append(out, l)
	}
	if n == 0 {
		t.Fatalf("no row %q in the module dump", old)
	}
	return strings.Join(out, "\n")
}

func alertsOf(r *Report) map[string]bool {
	out := map[string]bool{}
	for _, f := range r.Findings {
		out[f.Alert] = true
	}
	return out
}

// withoutRule returns alerts.yml with the alerting rule name cut out.
func withoutRule(t *testing.T, alerts []byte, name string) []byte {
	t.Helper()
	s := string(alerts)
	start := strings.Index(s, "      - alert: "+name+"\n")
	if start < 0 {
		t.Fatalf("no rule %s", name)
	}
	end := len(s)
	for _, next := range []string{"      - alert: ", "\n  - name: "} {
		if i := strings.Index(s[start+1:], next); i >= 0 && start+1+i < end {
			end = start + 1 + i
		}
	}
	return []byte(s[:start] + s[end:])
}

// TestEveryAlertReachable checks the table: every alert of alerts.yml
// is in reachable or unreachable, not both; each reachable alert is a
// finding of its bundle, with the rule's severity and runbook and a file
// of the bundle as evidence; and with that rule deleted from a copy of
// alerts.yml, the same bundle has no finding of it.
func TestEveryAlertReachable(t *testing.T) {
	shipped := alertRules(t)
	byName := map[string]*ruleeval.Rule{}
	for _, a := range shipped.Alerts() {
		byName[a.Name] = a
	}
	listed := map[string]bool{}
	for _, row := range reachable {
		if listed[row.alert] {
			t.Errorf("%s is listed twice", row.alert)
		}
		listed[row.alert] = true
		if _, ok := unreachable[row.alert]; ok {
			t.Errorf("%s is both reachable and unreachable", row.alert)
		}
	}
	for name := range unreachable {
		listed[name] = true
		if byName[name] == nil {
			t.Errorf("unreachable %s is not an alert of alerts.yml", name)
		}
	}
	var missing []string
	for name := range byName {
		if !listed[name] {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("alerts of alerts.yml in neither table (add a bundle to reachable or a reason to unreachable): %v", missing)
	}
	e := rules(t)
	for _, row := range reachable {
		t.Run(row.alert, func(t *testing.T) {
			rule := byName[row.alert]
			if rule == nil {
				t.Fatalf("%s is not an alert of alerts.yml", row.alert)
			}
			r := NewAnalyzer(e, shipped, nil).Analyze(reachBundle(t, row.files))
			var found *Finding
			for i, f := range r.Findings {
				if f.Alert == row.alert {
					found = &r.Findings[i]
					break
				}
			}
			if found == nil {
				t.Fatalf("%s: no finding from its %s bundle; findings %v, files %+v", row.alert, row.format, alertsOf(r), r.Files)
			}
			if found.Severity != rule.Labels["severity"] || found.Runbook != rule.Annotations["runbook_url"] {
				t.Errorf("finding severity %q runbook %q, the rule's %q %q", found.Severity, found.Runbook, rule.Labels["severity"], rule.Annotations["runbook_url"])
			}
			inBundle := false
			for name := range row.files {
				inBundle = inBundle || strings.HasPrefix(found.Evidence, name+":")
			}
			if !inBundle {
				t.Errorf("evidence %q names no file of the bundle", found.Evidence)
			}
			cut, err := ruleeval.Load(ruleeval.Config{Alerts: withoutRule(t, ruleeval.ShippedAlerts, row.alert), Records: ruleeval.ShippedRecords}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(cut.Alerts()) != len(shipped.Alerts())-1 {
				t.Fatalf("deleting %s left %d of %d rules", row.alert, len(cut.Alerts()), len(shipped.Alerts()))
			}
			if alertsOf(NewAnalyzer(e, cut, nil).Analyze(reachBundle(t, row.files)))[row.alert] {
				t.Errorf("%s is still a finding with its rule deleted", row.alert)
			}
		})
	}
}

// TestReachabilityDocumented checks that docs/diagnose.md lists every
// row of both tables as the test has it.
func TestReachabilityDocumented(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "docs", "diagnose.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	for _, row := range reachable {
		if want := fmt.Sprintf("| `%s` | %s |\n", row.alert, row.format); !strings.Contains(doc, want) {
			t.Errorf("docs/diagnose.md lacks the row %q", want)
		}
	}
	for name, why := range unreachable {
		if want := fmt.Sprintf("| `%s` | %s |\n", name, why); !strings.Contains(doc, want) {
			t.Errorf("docs/diagnose.md lacks the row %q", want)
		}
	}
}
