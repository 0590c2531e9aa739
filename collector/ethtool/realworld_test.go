package ethtool_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/zap"

	dto "github.com/prometheus/client_model/go"

	"github.com/nic-exporter/nic_exporter/collector/ethtool"
	"github.com/nic-exporter/nic_exporter/internal/ethtooldump"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// realworldDir holds the public ethtool dumps of the real-world corpus
// (testdata/realworld/README.md names the source of each).
var realworldDir = filepath.Join("..", "..", "testdata", "realworld", "ethtool")

// numberInName matches a queue, channel, priority, traffic class, class of
// service or lane number in a metric name, in any of the shapes the
// drivers use: rx3_, queue_3, prio3, pri3, priority_3, tc_3, cos3, lane_3.
var numberInName = regexp.MustCompile(`(^|_)(rx|tx|ch|rxq|txq|sq|rq|cq)[0-9]+(_|$)|queue_[0-9]+|(^|_)(prio|pri|priority|tc|cos|lane|vf)_?[0-9]+(_|$)`)

// corpusMeanings are the curated meanings the corpus must show: for each
// driver statistic (by the name the driver prints, old or new) a word of
// the help text its family must carry, and the metric family. A dump
// whose table has the statistic must export it under that family with
// that meaning; the family must be a counter.
var corpusMeanings = map[string]struct{ family, word string }{
	// mlx5, current names (counters.rst).
	"rx_out_of_buffer":  {"nic_ethtool_rx_out_of_buffer_total", "no receive buffer"},
	"rx_discards_phy":   {"nic_ethtool_rx_discards_phy_total", "lack of buffer space"},
	"tx_discards_phy":   {"nic_ethtool_tx_discards_phy_total", "discarded on transmit"},
	"rx_crc_errors_phy": {"nic_ethtool_rx_crc_errors_phy_total", "bad FCS"},
	"rx_symbol_err_phy": {"nic_ethtool_rx_symbol_err_phy_total", "symbol error"},
	// mlx5 names before Linux 4.8 (commit bfe6d8d1d433), same meanings.
	"in_discards":      {"nic_ethtool_in_discards_total", "lack of buffer space"},
	"drop_events":      {"nic_ethtool_drop_events_total", "lack of buffer space"},
	"out_discards":     {"nic_ethtool_out_discards_total", "discarded on transmit"},
	"check_seq_err":    {"nic_ethtool_check_seq_err_total", "bad FCS"},
	"crc_align_errors": {"nic_ethtool_crc_align_errors_total", "bad FCS"},
	"symbol_err":       {"nic_ethtool_symbol_err_total", "symbol error"},
	// ENA reset causes (ena_ethtool.c ena_stats_global_strings).
	"missing_tx_cmpl":           {"nic_ethtool_missing_tx_cmpl_total", "ENA device resets"},
	"os_netdev_wd":              {"nic_ethtool_os_netdev_wd_total", "ENA device resets"},
	"suspected_poll_starvation": {"nic_ethtool_suspected_poll_starvation_total", "ENA device resets"},
	"admin_to":                  {"nic_ethtool_admin_to_total", "ENA device resets"},
	"missing_intr":              {"nic_ethtool_missing_intr_total", "ENA device resets"},
	"device_request_reset":      {"nic_ethtool_device_request_reset_total", "ENA device resets"},
	"missing_admin_interrupt":   {"nic_ethtool_missing_admin_interrupt_total", "ENA device resets"},
	"missing_first_intr":        {"nic_ethtool_missing_first_intr_total", "ENA device resets"},
	// ENA, device level.
	"wd_expired":               {"nic_ethtool_wd_expired_total", "keep-alive"},
	"tx_timeout":               {"nic_ethtool_tx_timeout_total", "netdev watchdog"},
	"bw_in_allowance_exceeded": {"nic_ethtool_bw_in_allowance_exceeded_total", "allowance"},
}

// documented are the conditions the sources of the dumps report (their
// "shows:" headers): the statistic as the driver prints it, and the series
// it must be exported as, with the dump's value, which must not be 0.
var documented = map[string][]struct{ stat, series string }{
	"mlx5_cx6dx_inbox_5.15_xdp.txt": {
		{"rx_out_of_buffer", `nic_ethtool_rx_out_of_buffer_total{device="eth0"}`},
		{"rx_discards_phy", `nic_ethtool_rx_discards_phy_total{device="eth0"}`},
		{"rx_prio0_discards", `nic_ethtool_priority_rx_discards_total{device="eth0",priority="0"}`},
		{"tx_global_pause", `nic_ethtool_tx_global_pause_total{device="eth0"}`},
	},
	"mlx5_cx6dx_inbox_6.5_xdp.txt": {
		{"rx_out_of_buffer", `nic_ethtool_rx_out_of_buffer_total{device="eth0"}`},
		{"rx_discards_phy", `nic_ethtool_rx_discards_phy_total{device="eth0"}`},
		{"rx_buffer_passed_thres_phy", `nic_ethtool_rx_buffer_passed_thres_phy_total{device="eth0"}`},
		{"tx_global_pause", `nic_ethtool_tx_global_pause_total{device="eth0"}`},
	},
	"mlx5_cx4lx_fw14.27_xdp_grep_ethq20.txt": {
		{"rx_xdp_redirect", `nic_ethtool_rx_xdp_redirect_total{device="eth0"}`},
	},
	"mlx5_pci_signal_integrity_grep_netdev2024.txt": {
		{"tx_pci_signal_integrity", `nic_ethtool_tx_pci_signal_integrity_total{device="eth0"}`},
		{"rx_pci_signal_integrity", `nic_ethtool_rx_pci_signal_integrity_total{device="eth0"}`},
	},
	"mlx5_xdp_names_excerpt_ahern_netdev2020.txt": {
		{"rx_xdp_drop", `nic_ethtool_rx_xdp_drop_total{device="eth0"}`},
		{"rx_xdp_redirect", `nic_ethtool_rx_xdp_redirect_total{device="eth0"}`},
	},
	"mlx5_bf2_doca1.2_ktls_grep_dpudevopskit.txt": {
		{"rx_tls_decrypted_packets", `nic_ethtool_rx_tls_decrypted_packets_total{device="eth0"}`},
		{"tx_tls_encrypted_packets", `nic_ethtool_tx_tls_encrypted_packets_total{device="eth0"}`},
	},
	"mlx5_pp_alloc_excerpt_siewior_linux-rdma2025.txt": {
		{"rx_pp_alloc_fast", `nic_ethtool_rx_pp_alloc_fast_total{device="eth0"}`},
	},
	"ena_2.x_sliderule518_device.txt": {
		{"bw_in_allowance_exceeded", `nic_ethtool_bw_in_allowance_exceeded_total{device="eth0"}`},
	},
	"i40e_2.12.6_xxv710_vf_grep_collectd3568.txt": {
		{"vf000.rx_discards", `nic_ethtool_vf_rx_discards_total{device="eth0",vf="0"}`},
	},
}

// corpusDump is one dump of the corpus with the driver it comes from.
type corpusDump struct {
	file   string
	driver string
	dump   *ethtooldump.Dump
}

// loadCorpus parses every ethtool dump of the corpus with the real dump
// parser. A dump without `ethtool -i` gets the driver its file name starts
// with, so the fake source still reports one.
func loadCorpus(t *testing.T) []corpusDump {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(realworldDir, "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("%d ethtool dumps in %s, want the whole corpus", len(files), realworldDir)
	}
	var out []corpusDump
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d, err := ethtooldump.Parse(bytes.NewReader(data))
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if len(d.Names) == 0 {
			t.Errorf("%s: no statistics parsed", f)
			continue
		}
		base := filepath.Base(f)
		driver := d.Driver
		if driver == "" {
			driver, _, _ = strings.Cut(base, "_")
			if driver == "mlx5" {
				driver = "mlx5_core"
			}
		}
		d.Driver = driver
		out = append(out, corpusDump{file: base, driver: driver, dump: d})
	}
	return out
}

// TestRealWorldEthtool runs every public dump of the corpus through the
// real dump parser and the real ethtool collector and checks the names,
// the types, the curated meanings and that every statistic is exported.
func TestRealWorldEthtool(t *testing.T) {
	corpus := loadCorpus(t)
	seen := make(map[string]bool)
	for _, cd := range corpus {
		seen[cd.file] = true
	}
	for f := range documented {
		if !seen[f] {
			t.Errorf("documented dump %s is not in the corpus", f)
		}
	}
	for _, cd := range corpus {
		t.Run(cd.file, func(t *testing.T) {
			src := ethtooldump.NewSource(&ethtooldump.Device{Name: "eth0", Index: 2, Dump: cd.dump})
			c, err := ethtool.New(ethtool.Config{Source: src}, zap.NewNop())
			if err != nil {
				t.Fatal(err)
			}
			snap, errs := pollOnce(t, c, zap.NewNop())
			if len(errs) != 0 {
				t.Errorf("source errors: %v", errs)
			}
			text := snap.String()
			fams := parseFamilies(t, text)
			checkCorpusScrape(t, cd, fams)
			got := series(t, text)
			if n := got[`nic_ethtool_stats{device="eth0"}`]; int(n) != len(cd.dump.Names) {
				t.Errorf("nic_ethtool_stats = %v, want %d", n, len(cd.dump.Names))
			}
			for _, d := range documented[cd.file] {
				i := cd.dump.Index(d.stat)
				if i < 0 || cd.dump.Values[i] == 0 {
					t.Fatalf("the dump has no non-zero %s", d.stat)
				}
				if v, ok := got[d.series]; !ok || v != float64(cd.dump.Values[i]) {
					t.Errorf("documented condition %s = %d not recalled: %s = %v (present %v)", d.stat, cd.dump.Values[i], d.series, v, ok)
				}
			}
			for k, v := range got {
				if strings.HasPrefix(k, "nic_ethtool_stats_skipped{") && v != 0 {
					t.Errorf("%s = %v: every statistic of a real dump must be exported", k, v)
				}
			}
		})
	}
}

// checkCorpusScrape checks the families of one dump's scrape.
func checkCorpusScrape(t *testing.T, cd corpusDump, fams map[string]*dto.MetricFamily) {
	t.Helper()
	for name, f := range fams {
		if numberInName.MatchString(strings.TrimPrefix(name, "nic_ethtool_")) {
			t.Errorf("metric name %s contains a queue, priority, class or lane number", name)
		}
		if !strings.HasPrefix(name, "nic_ethtool_") {
			continue
		}
		counter := strings.HasSuffix(name, "_total")
		switch typ := f.GetType(); {
		case counter && typ != dto.MetricType_COUNTER:
			t.Errorf("%s ends in _total but is a %v", name, typ)
		case !counter && typ == dto.MetricType_COUNTER:
			t.Errorf("%s is a counter without _total", name)
		}
	}
	// Precision: another driver's statistic never gets an mlx5 or ENA
	// meaning because it shares a name.
	for name, f := range fams {
		help := curatedPart(f.GetHelp())
		if cd.driver != "mlx5_core" && strings.Contains(help, "(mlx5") {
			t.Errorf("%s (driver %s) carries an mlx5 meaning: %q", name, cd.driver, help)
		}
		if cd.driver != "ena" && strings.Contains(help, "ENA") {
			t.Errorf("%s (driver %s) carries an ENA meaning: %q", name, cd.driver, help)
		}
	}
	for _, stat := range cd.dump.Names {
		want, ok := corpusMeanings[stat]
		if !ok {
			continue
		}
		f := fams[want.family]
		if f == nil {
			t.Errorf("%s: statistic %s not exported as %s", cd.file, stat, want.family)
			continue
		}
		if f.GetType() != dto.MetricType_COUNTER {
			t.Errorf("%s is a %v, want a counter", want.family, f.GetType())
		}
		if !strings.Contains(f.GetHelp(), want.word) {
			t.Errorf("%s: help of %s lacks the curated meaning (%q): %q", cd.file, want.family, want.word, f.GetHelp())
		}
	}
}

// helpWhere marks where the collector's description of the statistic's
// source starts in a help text, after the curated meaning.
var helpWhere = regexp.MustCompile(`(^| )(Driver statistic|Per-queue driver statistic|Per-priority driver statistic|Per-class driver statistic|Per-VF driver statistic|Per-lane driver statistic) `)

// curatedPart returns the curated meaning of a help text, without the
// collector's description of the statistic's source.
func curatedPart(help string) string {
	if loc := helpWhere.FindStringIndex(help); loc != nil {
		return help[:loc[0]]
	}
	return help
}

// parseFamilies parses a text exposition into its families by name.
func parseFamilies(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("scrape does not parse: %v", err)
	}
	return fams
}

// TestRealWorldEthtoolPromtool lints the scrape of a host with every dump
// of the corpus as one interface with promtool check metrics.
func TestRealWorldEthtoolPromtool(t *testing.T) {
	promtool := testenv.LookPath(t, "promtool")
	corpus := loadCorpus(t)
	devs := make([]*ethtooldump.Device, 0, len(corpus))
	for i, cd := range corpus {
		devs = append(devs, &ethtooldump.Device{Name: "eth" + itoa(i), Index: i + 2, Dump: cd.dump})
	}
	c, err := ethtool.New(ethtool.Config{Source: ethtooldump.NewSource(devs...)}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	snap, _ := pollOnce(t, c, zap.NewNop())
	if snap.Devices() != len(corpus) {
		t.Errorf("devices = %d, want %d", snap.Devices(), len(corpus))
	}
	var names []string
	for _, f := range snap.Families() {
		if numberInName.MatchString(strings.TrimPrefix(f, "nic_ethtool_")) {
			names = append(names, f)
		}
	}
	sort.Strings(names)
	if len(names) != 0 {
		t.Errorf("metric names with a number that belongs in a label: %v", names)
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(snap.String())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out.String())
	}
}

// TestMlx5ChannelTCNames checks the send queue names of mlx5 drivers up
// to Linux 4.8, tx<channel>_<tc>_<stat> (no public dump of them is in the
// corpus; the names here are ours, in the shape of en_ethtool.c of Linux
// 4.4): channel and class become labels in keep mode, every class's queue
// is summed in sum mode, and no number stays in a name.
func TestMlx5ChannelTCNames(t *testing.T) {
	dump := &ethtooldump.Dump{
		Driver: "mlx5_core", Version: "3.0-1 (January 2015)",
		Names:  []string{"tx_packets", "tx0_0_packets", "tx0_1_packets", "tx1_0_packets", "tx1_1_packets", "tx0_0_queue_stopped", "rx0_packets"},
		Values: []uint64{100, 10, 20, 30, 40, 1, 7},
	}
	for _, tc := range []struct {
		mode ethtool.QueueMode
		want map[string]float64
	}{
		{ethtool.QueueKeep, map[string]float64{
			`nic_ethtool_tx_packets_total{device="p3p1"}`:                              100,
			`nic_ethtool_queue_tx_packets_total{device="p3p1",queue="0",tc="0"}`:       10,
			`nic_ethtool_queue_tx_packets_total{device="p3p1",queue="0",tc="1"}`:       20,
			`nic_ethtool_queue_tx_packets_total{device="p3p1",queue="1",tc="0"}`:       30,
			`nic_ethtool_queue_tx_packets_total{device="p3p1",queue="1",tc="1"}`:       40,
			`nic_ethtool_queue_tx_queue_stopped_total{device="p3p1",queue="0",tc="0"}`: 1,
			`nic_ethtool_queue_rx_packets_total{device="p3p1",queue="0"}`:              7,
		}},
		{ethtool.QueueSum, map[string]float64{
			`nic_ethtool_tx_packets_total{device="p3p1"}`:       100,
			`nic_ethtool_queue_tx_packets_total{device="p3p1"}`: 100,
			`nic_ethtool_queue_rx_packets_total{device="p3p1"}`: 7,
		}},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			src := ethtooldump.NewSource(&ethtooldump.Device{Name: "p3p1", Index: 2, Dump: dump})
			c, err := ethtool.New(ethtool.Config{Source: src, QueueMode: tc.mode}, zap.NewNop())
			if err != nil {
				t.Fatal(err)
			}
			snap, _ := pollOnce(t, c, zap.NewNop())
			for _, f := range snap.Families() {
				if numberInName.MatchString(strings.TrimPrefix(f, "nic_ethtool_")) || strings.Contains(f, "_0_") || strings.Contains(f, "_1_") {
					t.Errorf("metric name %s contains a channel or class number", f)
				}
			}
			got := series(t, snap.String())
			for k, want := range tc.want {
				if v, ok := got[k]; !ok || v != want {
					t.Errorf("%s = %v (present %v), want %v", k, v, ok, want)
				}
			}
			if v := got[`nic_ethtool_stats_skipped{device="p3p1",reason="duplicate"}`]; v != 0 {
				t.Errorf("%v statistics skipped as duplicates", v)
			}
		})
	}
}
