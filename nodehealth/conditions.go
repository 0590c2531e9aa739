package nodehealth

import "time"

// Op is how a rule compares a sample with its threshold.
type Op string

// The comparisons a rule can make. OpRise is not a comparison of one
// value but of two polls: the counter grew since the previous
// evaluation, which stays evidence for the rule's Window, like the
// alert's increase(...[window]) > 0.
const (
	OpEqual    Op = "=="
	OpNotEqual Op = "!="
	OpLess     Op = "<"
	OpGreater  Op = ">"
	OpRise     Op = "rise"
)

// Selector picks the samples of one metric family whose labels have the
// values in Match.
type Selector struct {
	// Metric is the family name, as the exporter serves it.
	Metric string
	// Match holds label values the sample must have.
	Match map[string]string
}

// Join is a second selector that a sample of the rule must find a
// partner in: the sample of Selector whose labels named in On equal the
// rule sample's. It stands for PromQL's "and on (...)" (a Guard) and
// for a comparison with another series "< on (...) group_left" (Than).
type Join struct {
	Selector
	// On lists the labels both samples must share.
	On []string
}

// Guard is a Join whose partner sample must compare with Value by Op,
// such as nic_netdev_admin_up == 1.
type Guard struct {
	Join
	Op    Op
	Value float64
}

// Rule is the evidence of one condition on one device: samples of
// Selector compared by Op with Value (or with the sample of Than), kept
// only where every Guard holds.
type Rule struct {
	Selector
	Op    Op
	Value float64
	// Than, when set, replaces Value with the value of the joined
	// sample (a threshold the device itself advertises).
	Than *Join
	// Window is how long a rise of the counter stays evidence (OpRise).
	Window time.Duration
	// And lists the guards.
	And []Guard
}

// Definition is one node condition: its name, the one reason it is
// reported with, what it means, the alerts of deploy/prometheus/alerts.yml
// it mirrors with their severity, the rule that finds evidence for it,
// and For, how long evidence must hold before the condition is set (the
// alert's "for:").
type Definition struct {
	// Type is the condition's name, in the style of Kubernetes node
	// condition types.
	Type string
	// Reason is the CamelCase reason the condition carries while true.
	Reason string
	// Summary says in a few words what is wrong; the message adds the
	// devices and the evidence.
	Summary string
	// Alerts names the alerts this condition mirrors; the first is
	// the one whose expression Rule reproduces.
	Alerts []string
	// Severity is the severity label of those alerts.
	Severity string
	// For is the alert's "for:": how long evidence must hold before the
	// condition is set.
	For time.Duration
	// Rule finds the evidence.
	Rule Rule
}

// Conditions is the table of node conditions: each mirrors an alert of
// deploy/prometheus/alerts.yml that pages or opens a ticket and means the
// node should take no new work, with the alert's metric, threshold and
// "for:". The deploy tests compare this table with alerts.yml, so a
// change to either that is not made to both fails them.
//
// The set is deliberately small: what takes a node's NIC out of service
// (a dead firmware, a device the hypervisor keeps resetting, a port
// without link, an InfiniBand port that is not up, a PCIe link that caps
// the card, an optic below its alarm level, a card above its critical temperature). Counters of errors that a
// working link also shows from time to time stay alerts only.
func Conditions() []Definition {
	return []Definition{
		{
			Type:     "NICFirmwareFatal",
			Reason:   "FirmwareFatalError",
			Summary:  "the devlink fw_fatal health reporter of a NIC is in error: the firmware stopped and the card passes no traffic",
			Alerts:   []string{"NICDevlinkFwFatalError"},
			Severity: "page",
			Rule: Rule{
				Selector: Selector{Metric: "nic_devlink_health_reporter_healthy", Match: map[string]string{"reporter": "fw_fatal"}},
				Op:       OpEqual,
				Value:    0,
			},
		},
		{
			Type:     "NICWatchdogReset",
			Reason:   "ENAWatchdogExpired",
			Summary:  "the ENA keep-alive watchdog expired and the driver reset the device",
			Alerts:   []string{"NICENAWatchdogExpired"},
			Severity: "page",
			Rule: Rule{
				Selector: Selector{Metric: "nic_ethtool_wd_expired_total"},
				Op:       OpRise,
				Window:   15 * time.Minute,
			},
		},
		{
			Type:     "NICLinkDown",
			Reason:   "CarrierLost",
			Summary:  "an administratively up interface has no carrier",
			Alerts:   []string{"NICLinkDown"},
			Severity: "warning",
			For:      time.Minute,
			Rule: Rule{
				Selector: Selector{Metric: "nic_netdev_carrier"},
				Op:       OpEqual,
				Value:    0,
				And: []Guard{{
					Join:  Join{Selector: Selector{Metric: "nic_netdev_admin_up"}, On: []string{"device"}},
					Op:    OpEqual,
					Value: 1,
				}},
			},
		},
		{
			Type:     "InfiniBandPortDown",
			Reason:   "PhysStateNotLinkUp",
			Summary:  "an InfiniBand port's physical state is not LinkUp",
			Alerts:   []string{"NICInfiniBandPortNotLinkUp"},
			Severity: "warning",
			For:      time.Minute,
			Rule: Rule{
				Selector: Selector{Metric: "nic_infiniband_port_phys_state"},
				Op:       OpNotEqual,
				Value:    5,
				And: []Guard{{
					Join:  Join{Selector: Selector{Metric: "nic_infiniband_port_info", Match: map[string]string{"link_layer": "InfiniBand"}}, On: []string{"device", "port"}},
					Op:    OpEqual,
					Value: 1,
				}},
			},
		},
		{
			Type:     "PCIeLinkDegraded",
			Reason:   "PCIeLinkBelowCapability",
			Summary:  "a NIC's PCIe link trained below its maximum width or speed, capping its throughput",
			Alerts:   []string{"NICPCIeLinkDegraded"},
			Severity: "warning",
			Rule: Rule{
				Selector: Selector{Metric: "nic_pcie_link_degraded"},
				Op:       OpEqual,
				Value:    1,
			},
		},
		{
			Type:     "NICOverheating",
			Reason:   "AboveCriticalTemperature",
			Summary:  "a NIC sensor reads above its critical threshold; the firmware may shut the card down",
			Alerts:   []string{"NICTemperatureCritical"},
			Severity: "warning",
			For:      time.Minute,
			Rule: Rule{
				Selector: Selector{Metric: "nic_hwmon_temperature_celsius"},
				Op:       OpGreater,
				Than:     &Join{Selector: Selector{Metric: "nic_hwmon_temperature_critical_celsius"}, On: []string{"chip", "device", "pci_address", "sensor"}},
			},
		},
		{
			Type:     "TransceiverFailing",
			Reason:   "RxPowerBelowAlarm",
			Summary:  "an optic receives less light than its own low-alarm threshold; FEC failures and link flaps follow",
			Alerts:   []string{"NICTransceiverRxPowerLowAlarm"},
			Severity: "warning",
			Rule: Rule{
				Selector: Selector{Metric: "nic_transceiver_rx_power_watts"},
				Op:       OpLess,
				Than:     &Join{Selector: Selector{Metric: "nic_transceiver_rx_power_threshold_watts", Match: map[string]string{"level": "low_alarm"}}, On: []string{"device"}},
			},
		},
	}
}
