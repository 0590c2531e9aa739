package main

import (
	"bufio"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// series is one sample of a scrape: its name, labels and value.
type series struct {
	name   string
	labels map[string]string
	value  float64
}

var labelPair = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)

// parseScrape returns the samples of a text-format scrape.
func parseScrape(t *testing.T, scrape string) []series {
	t.Helper()
	var out []series
	sc := bufio.NewScanner(strings.NewReader(scrape))
	sc.Buffer(make([]byte, 0, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("scrape line %q: %v", line, err)
		}
		s := series{name: line[:i], labels: map[string]string{}, value: v}
		if j := strings.IndexByte(line, '{'); j >= 0 && j < i {
			s.name = line[:j]
			for _, m := range labelPair.FindAllStringSubmatch(line[j:i], -1) {
				s.labels[m[1]] = m[2]
			}
		}
		out = append(out, s)
	}
	return out
}

// pciCard returns the card of a PCI function address: domain, bus and
// device without the function ("0000:08:00.1" is on card "0000:08:00").
func pciCard(addr string) string {
	addr = strings.TrimPrefix(addr, "pci/")
	if i := strings.LastIndexByte(addr, '.'); i >= 0 {
		return addr[:i]
	}
	return addr
}

// TestDemoIdentityAgreesPerCard scrapes the demo and checks that every
// source naming a PCI function (devlink info, `ethtool -i`, the RDMA core)
// reports one firmware version, one board id (PSID) and one serial
// number per card, as on a real host where the firmware runs on the card:
// the ConnectX-7's InfiniBand function 0000:08:00.0 and Ethernet function
// 0000:08:00.1 are one card.
func TestDemoIdentityAgreesPerCard(t *testing.T) {
	e := start(t, "--demo", "--demo.elapsed=10m")
	scrape, _ := e.get(t, "/metrics", nil)
	// card -> field -> value -> the series that said so.
	seen := map[string]map[string]map[string][]string{}
	add := func(card, field, value, from string) {
		if seen[card] == nil {
			seen[card] = map[string]map[string][]string{}
		}
		if seen[card][field] == nil {
			seen[card][field] = map[string][]string{}
		}
		seen[card][field][value] = append(seen[card][field][value], from)
	}
	sources := map[string]map[string]bool{}
	for _, s := range parseScrape(t, scrape) {
		var addr string
		switch s.name {
		case "nic_devlink_info":
			addr = s.labels["device"]
			from := s.name + " " + addr
			add(pciCard(addr), "firmware", s.labels["firmware_running"], from)
			add(pciCard(addr), "firmware", s.labels["firmware_stored"], from)
			add(pciCard(addr), "board id", s.labels["board_id"], from)
			add(pciCard(addr), "serial", s.labels["serial_number"], from)
		case "nic_ethtool_info":
			addr = s.labels["bus_info"]
			from := s.name + " " + s.labels["device"]
			// mlx5 prints "28.45.4028 (MT_0000000838)": firmware (PSID).
			fw, psid, hasPSID := strings.Cut(s.labels["firmware_version"], " (")
			add(pciCard(addr), "firmware", fw, from)
			if hasPSID {
				add(pciCard(addr), "board id", strings.TrimSuffix(psid, ")"), from)
			}
		case "nic_infiniband_info":
			addr = s.labels["pci_address"]
			from := s.name + " " + s.labels["device"]
			add(pciCard(addr), "firmware", s.labels["firmware_version"], from)
			add(pciCard(addr), "board id", s.labels["board_id"], from)
		default:
			continue
		}
		if sources[pciCard(addr)] == nil {
			sources[pciCard(addr)] = map[string]bool{}
		}
		sources[pciCard(addr)][s.name] = true
	}
	// The ConnectX-7 must be seen by all three sources, or the check
	// below compares nothing.
	if n := len(sources["0000:08:00"]); n != 3 {
		t.Fatalf("the ConnectX-7 (0000:08:00) appears in %d of devlink, ethtool and InfiniBand info: %v", n, sources["0000:08:00"])
	}
	if len(sources["0000:00:05"]) == 0 {
		t.Errorf("the ENA device (0000:00:05) appears in no info series")
	}
	for _, card := range sortedStrings(seen) {
		for field, values := range seen[card] {
			if len(values) != 1 {
				t.Errorf("card %s has %d %s values: %v", card, len(values), field, values)
			}
		}
	}
	if fw := seen["0000:08:00"]["firmware"]; len(fw) == 1 && fw[""] != nil {
		t.Errorf("the ConnectX-7 reports an empty firmware version: %v", fw)
	}
}

func sortedStrings[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestDemoTrafficAgrees checks that the netdev statistics and the driver
// statistics of the same port describe the same traffic. It scrapes two
// demo hosts frozen one minute apart (10 and 11 minutes after the start)
// and compares the per-second rates of the two scrapes, with the
// tolerances of the real drivers:
//   - mlx5 builds the netdev statistics from its software counters, so
//     rx/tx_bytes and rx/tx_packets equal them; the vport counters and
//     the phy packet counters count the same frames (plus a few control
//     frames): within 0.1 %.
//   - The phy byte counters (rx/tx_bytes_phy) count frames as on the wire,
//     FCS and VLAN tag included: at least the netdev rate and at most 5 %
//     above it (the demo adds 8 bytes a frame, 0.1 % at its frame size;
//     minimum-size frames would add up to 12 %).
//   - ENA's netdev statistics are the sums of its per-queue counters
//     (the default profile's nic_ethtool_queue_*_total): within 0.1 %.
//
// The 0.1 % covers only the rounding of counters to integers.
func TestDemoTrafficAgrees(t *testing.T) {
	const window = 60.0 // seconds between the two demo instants
	scrapes := make([]map[string]float64, 2)
	for i, elapsed := range []string{"10m", "11m"} {
		e := start(t, "--demo", "--demo.elapsed="+elapsed)
		body, _ := e.get(t, "/metrics", nil)
		scrapes[i] = map[string]float64{}
		for _, s := range parseScrape(t, body) {
			if d := s.labels["device"]; d != "" && len(s.labels) == 1 {
				scrapes[i][s.name+"/"+d] = s.value
			}
		}
	}
	rate := func(name, dev string) float64 {
		t.Helper()
		k := name + "/" + dev
		a, okA := scrapes[0][k]
		b, okB := scrapes[1][k]
		if !okA || !okB {
			t.Fatalf("%s{device=%q} missing from the demo scrape", name, dev)
		}
		if b <= a {
			t.Fatalf("%s{device=%q} does not advance: %v then %v", name, dev, a, b)
		}
		return (b - a) / window
	}
	for _, tc := range []struct {
		dev, netdev, ethtool string
		lo, hi               float64 // allowed ethtool/netdev ratio
	}{
		{"enp8s0f1np1", "rx_bytes", "rx_bytes", 0.999, 1.001},
		{"enp8s0f1np1", "tx_bytes", "tx_bytes", 0.999, 1.001},
		{"enp8s0f1np1", "rx_packets", "rx_packets", 0.999, 1.001},
		{"enp8s0f1np1", "tx_packets", "tx_packets", 0.999, 1.001},
		{"enp8s0f1np1", "rx_bytes", "rx_vport_unicast_bytes", 0.999, 1.001},
		{"enp8s0f1np1", "tx_bytes", "tx_vport_unicast_bytes", 0.999, 1.001},
		{"enp8s0f1np1", "rx_packets", "rx_packets_phy", 0.999, 1.001},
		{"enp8s0f1np1", "tx_packets", "tx_packets_phy", 0.999, 1.001},
		{"enp8s0f1np1", "rx_bytes", "rx_bytes_phy", 1, 1.05},
		{"enp8s0f1np1", "tx_bytes", "tx_bytes_phy", 1, 1.05},
		{"ens5", "rx_bytes", "queue_rx_bytes", 0.999, 1.001},
		{"ens5", "tx_bytes", "queue_tx_bytes", 0.999, 1.001},
		{"ens5", "rx_packets", "queue_rx_cnt", 0.999, 1.001},
		{"ens5", "tx_packets", "queue_tx_cnt", 0.999, 1.001},
	} {
		n := rate("nic_netdev_"+tc.netdev+"_total", tc.dev)
		d := rate("nic_ethtool_"+tc.ethtool+"_total", tc.dev)
		if r := d / n; r < tc.lo || r > tc.hi || math.IsNaN(r) {
			t.Errorf("%s: ethtool %s rate %.4g/s is %.4f times netdev %s %.4g/s, want %.3f to %.3f", tc.dev, tc.ethtool, d, r, tc.netdev, n, tc.lo, tc.hi)
		}
	}
}
