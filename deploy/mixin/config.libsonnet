// The tunables of the nic_exporter mixin. Override any of them without
// forking, e.g.
//   (import 'nic-exporter-mixin/mixin.libsonnet') + {
//     _config+:: { nicExporterSelector: 'job="nic-exporter",cluster="gpu-a"' },
//   }
// Durations are Prometheus durations ('30s', '5m', '1h'); rates are per
// second; counts are per the window the alert names.
{
  _config+:: {
    // The label matchers (without braces) that every vector selector of
    // every alert and recording rule carries: the job(s) that scrape
    // nic_exporter's default /metrics profile, plus any label that scopes
    // a cluster or tenant. Several matchers are separated by commas. The
    // detail job (/metrics/detail) must not match it.
    nicExporterSelector: 'job=~"nic[-_]exporter"',

    // Every alert's runbook_url is this base followed by the alert's name
    // in lower case (the anchor of its section in docs/runbooks.md).
    runbookURLBase: 'https://github.com/nic-exporter/nic_exporter/blob/main/docs/runbooks.md#',

    // The severity label of the alerts that page (a fatal firmware error,
    // an ENA keep-alive watchdog reset); Alertmanager routes it to the
    // pager. Every other alert is "warning" or "info".
    pageSeverity: 'page',

    // nic-exporter: the exporter and its collectors.
    exporterDownFor: '5m',  // up == 0 this long fires NICExporterDown.
    targetsAbsentFor: '15m',  // no up series matches nicExporterSelector this long.
    collectorDownFor: '5m',  // a collector failing every poll this long.
    devicesMissingFor: '15m',  // fewer devices than in devicesMissingWindow, this long.
    devicesMissingWindow: '6h',

    // nic-devlink.
    devlinkTxRxErrors: 2,  // tx/rx reporter errors in 15 minutes above this fire.
    devlinkReporterStuckFor: '15m',  // any reporter unhealthy this long.

    // nic-netdev.
    linkDownFor: '1m',  // carrier down on an admin-up interface this long.
    linkFlaps: 3,  // carrier changes in 10 minutes above this fire.
    // Degrees Celsius below a NIC sensor's critical threshold (hwmon
    // temp<N>_crit) where NICTemperatureHigh fires.
    nicTemperatureMargin: '10',

    // nic-infiniband.
    ibPortNotLinkUpFor: '1m',
    ibPortNotActiveFor: '5m',
    ibSymbolErrors: 10,  // symbol errors in 10 minutes above this fire.
    ibCounterSaturatedFor: '15m',
    // RoCE congestion and RDMA transport health, as shares of a port's
    // packets (nic_infiniband_port_{rcv,xmit}_packets_total).
    roceMinPacketRate: 10000,  // packets per second of the port below which no share is judged.
    roceCongestionPerMillion: 1000,  // ECN-marked packets per million received, or CNPs handled per million sent, above this...
    roceCongestionFor: '15m',  // ...for this long.
    rdmaRetransmitPerMillion: 10,  // retransmission events per million packets sent (or out-of-sequence per million received) above this...
    rdmaRetransmitFor: '15m',  // ...for this long.
    rdmaRNRNakPerMillion: 10,  // RNR NAKs received per million packets sent above this...
    rdmaRNRNakFor: '15m',  // ...for this long.

    // nic-ethtool-ena.
    enaAllowanceExceededRate: 0,  // packets per second queued or dropped over an allowance.
    enaAllowanceExceededFor: '10m',
    enaConntrackAvailableRatio: 0.1,  // available conntrack entries below this share of the day's maximum.
    enaConntrackAllowanceLowFor: '5m',
    enaExpressFallbackRatio: 0.05,  // share of ENA Express eligible packets sent over standard ENA.
    enaExpressMinEligibleRate: 100,  // eligible packets per second below which the share is not judged.
    enaExpressResourceUtilization: 80,  // percent of the SRD connection memory in use.

    // nic-efa (AWS EFA hw_counters; the ratios are per million packets).
    efaRetransPerMillion: 1000,  // SRD retransmitted packets per million sent above this...
    efaRetransFor: '15m',  // ...for this long.
    efaRxDropsPerMillion: 100,  // received packets dropped per million received above this...
    efaRxDropsFor: '15m',  // ...for this long.
    efaMinPacketRate: 1000,  // packets per second (sent, or received) below which a ratio is not judged.
    efaUnresponsiveRemoteEvents: 0,  // unresponsive-peer events in 15 minutes above this fire.
    efaImpairedRemoteConnEvents: 0,  // impaired-connection events in 15 minutes above this fire.

    // nic-ethtool-mlx5.
    rxOutOfBufferRate: 0,  // rx_out_of_buffer drops per second above this...
    rxOutOfBufferFor: '10m',  // ...for this long.
    phyDiscardsRate: 0,  // port discards per second above this...
    phyDiscardsFor: '10m',  // ...for this long.
    phyErrors: 0,  // CRC or symbol errors in 10 minutes above this fire.

    // nic-vma.
    vmaOSFallbackRate: 0,  // packets per second through the kernel on not-offloaded sockets...
    vmaOSFallbackFor: '15m',  // ...for this long.
    vmaDropsRate: 0,  // received packets dropped per second above this...
    vmaDropsFor: '5m',  // ...for this long.
    vmaStatsStaleFor: '10m',
    vmaStatsFilesRejectedFor: '15m',

    // nic-physical-layer.
    transceiverTemperatureFor: '5m',  // module above its own high-warning temperature this long.
    preFECBER: 2.4e-5,  // pre-FEC bit error rate above this (a tenth of the 2.4e-4 RS(544,514) limit)...
    preFECBERFor: '5m',  // ...for this long.

    // nic-pcie-aer.
    pcieAERCorrectableErrors: 60,  // correctable AER errors of a function in an hour above this fire.

    // nic-logs.
    pcieCorrectedErrors: 5,  // corrected PCIe AER records in an hour above this fire.

    // nic-fabric (the opt-in fabric collector: the far end of each local InfiniBand port).
    fabricSymbolErrors: 10,  // symbol errors of the far-end port in 10 minutes above this fire.
    fabricRcvErrors: 10,  // receive errors of the far-end port in 10 minutes above this fire.
    fabricXmitWaitRate: 1e5,  // PortXmitWait ticks per second of the far-end port above this (the tick is device-specific: tune it)...
    fabricCongestionFor: '15m',  // ...for this long.
    fabricEndsDisagreeFor: '5m',  // one end of a cable Active and the other not, this long.

    // nic-firmware.
    // The labels that name a node pool (comma-separated): devices of one
    // board (PSID) should run one firmware version within a pool. A label
    // that your series do not carry makes everything one pool.
    firmwarePoolLabels: 'cluster',
    firmwareSkewFor: '6h',  // more than one running version this long (a rollout takes a while).
    // Firmware versions known to be bad, from your vendor's advisories:
    // each entry has firmware (the running version, exactly as
    // nic_devlink_info's firmware_running label says it), optionally
    // board_id (the PSID) and driver, and a reason for the alert, e.g.
    //   { firmware: '28.39.1002', board_id: 'MT_0000000838', reason: 'link flaps at 400G, fixed in 28.39.2048' }
    knownBadFirmware: [],
    // Driver versions known to be bad: driver and driver_version (as
    // nic_ethtool_info says them) and a reason.
    knownBadDrivers: [],
  },
}
