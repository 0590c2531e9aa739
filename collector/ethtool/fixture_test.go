package ethtool_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/collectortest"
	"github.com/nic-exporter/nic_exporter/collector/ethtool"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/internal/ethtooldump"
	"github.com/nic-exporter/nic_exporter/internal/ethtoolioctl"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// loadDump reads a recorded dump from testdata.
func loadDump(t testing.TB, file string) *ethtooldump.Dump {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := ethtooldump.Parse(f)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return d
}

// fixtureHost is a ConnectX-7 Ethernet port, an ENA interface and the
// loopback device, from the recorded dumps.
func fixtureHost(t testing.TB) *ethtooldump.Source {
	return ethtooldump.NewSource(
		&ethtooldump.Device{Name: "lo", Index: 1},
		&ethtooldump.Device{Name: "ens5", Index: 2, Dump: loadDump(t, "ena.txt"),
			Link: ethtoolioctl.Link{HasSettings: true, SpeedMbps: 100000, Duplex: 1, HasDetected: true, Detected: true}},
		&ethtooldump.Device{Name: "enp8s0f1np1", Index: 5, Dump: loadDump(t, "mlx5.txt"),
			Link: ethtoolioctl.Link{HasSettings: true, SpeedMbps: 400000, Duplex: 1, Autoneg: 1, HasDetected: true, Detected: true}},
	)
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	collectortest.Golden(t, filepath.Join("testdata", name), got)
}

func itoa(i int) string {
	var b [20]byte
	n := len(b)
	for {
		n--
		b[n] = byte('0' + i%10)
		i /= 10
		if i == 0 {
			return string(b[n:])
		}
	}
}

// queueNumberInName matches what must never appear in a metric name: a
// driver's queue, channel, priority or lane number.
var queueNumberInName = regexp.MustCompile(`(^|_)(rx|tx|ch)[0-9]+_|queue_[0-9]+|prio[0-9]+|lane_[0-9]+`)

func TestEthtoolFixtures(t *testing.T) {
	statFilter, err := collector.NewNameFilter("collector.ethtool.stat",
		`.*_phy|rx_prio.*|wd_expired|.*allowance.*|queue_.*`,
		`rx_[0-9]+_to_.*|conntrack_allowance_exceeded`)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cfg  ethtool.Config
	}{
		{"keep.prom", ethtool.Config{QueueMode: ethtool.QueueKeep}},
		{"sum.prom", ethtool.Config{QueueMode: ethtool.QueueSum}},
		{"drop_filtered.prom", ethtool.Config{
			QueueMode:  ethtool.QueueDrop,
			StatFilter: statFilter,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := fixtureHost(t)
			tc.cfg.Source = src
			c, err := ethtool.New(tc.cfg, zap.NewNop())
			if err != nil {
				t.Fatal(err)
			}
			snap, errs := pollOnce(t, c, zap.NewNop())
			if len(errs) != 0 {
				t.Errorf("source errors: %v", errs)
			}
			if snap.Devices() != 2 {
				t.Errorf("devices = %d, want 2 (lo has no ethtool statistics)", snap.Devices())
			}
			text := snap.String()
			got := series(t, text)
			for _, fam := range snap.Families() {
				if queueNumberInName.MatchString(fam) {
					t.Errorf("metric name %s contains a queue number", fam)
				}
			}
			golden(t, tc.name, text)

			// Spot checks against the dumps, independent of the golden file.
			ena, mlx := loadDump(t, "ena.txt"), loadDump(t, "mlx5.txt")
			val := func(d *ethtooldump.Dump, stat string) float64 {
				i := d.Index(stat)
				if i < 0 {
					t.Fatalf("no %s in the dump", stat)
				}
				return float64(d.Values[i])
			}
			checks := map[string]float64{
				`nic_ethtool_wd_expired_total{device="ens5"}`:                            val(ena, "wd_expired"),
				`nic_ethtool_bw_in_allowance_exceeded_total{device="ens5"}`:              val(ena, "bw_in_allowance_exceeded"),
				`nic_ethtool_conntrack_allowance_available{device="ens5"}`:               val(ena, "conntrack_allowance_available"),
				`nic_ethtool_rx_discards_phy_total{device="enp8s0f1np1"}`:                val(mlx, "rx_discards_phy"),
				`nic_ethtool_priority_rx_bytes_total{device="enp8s0f1np1",priority="0"}`: val(mlx, "rx_prio0_bytes"),
				`nic_ethtool_lane_rx_err_phy_total{device="enp8s0f1np1",lane="1"}`:       val(mlx, "rx_err_lane_1_phy"),
				`nic_ethtool_info{bus_info="0000:08:00.1",device="enp8s0f1np1",driver="mlx5_core",driver_version="6.17.0-bpf-next",firmware_version="28.39.1002 (MT_0000000838)"}`: 1,
				`nic_ethtool_info{bus_info="0000:00:05.0",device="ens5",driver="ena",driver_version="6.8.0-1016-aws",firmware_version=""}`:                                         1,
				`nic_ethtool_link_speed_bytes_per_second{device="enp8s0f1np1"}`:                                                                                                    400e9 / 8,
			}
			switch cfgMode := tc.cfg.QueueMode; cfgMode {
			case ethtool.QueueKeep:
				checks[`nic_ethtool_rx_out_of_buffer_total{device="enp8s0f1np1"}`] = val(mlx, "rx_out_of_buffer")
				checks[`nic_ethtool_queue_tx_cnt_total{device="ens5",queue="3"}`] = val(ena, "queue_3_tx_cnt")
				checks[`nic_ethtool_queue_ch_events_total{device="enp8s0f1np1",queue="2"}`] = val(mlx, "ch2_events")
				checks[`nic_ethtool_queue_tx_xmit_more_total{device="enp8s0f1np1",queue="1"}`] = val(mlx, "tx1_xmit_more")
			case ethtool.QueueSum:
				var sum float64
				for q := 0; q < 4; q++ {
					sum += val(mlx, "rx"+itoa(q)+"_packets")
				}
				checks[`nic_ethtool_queue_rx_packets_total{device="enp8s0f1np1"}`] = sum
			case ethtool.QueueDrop:
				for k := range got {
					if strings.HasPrefix(k, "nic_ethtool_queue_") || strings.HasPrefix(k, "nic_ethtool_rx_1024") ||
						strings.HasPrefix(k, "nic_ethtool_conntrack_allowance_exceeded") || strings.HasPrefix(k, "nic_ethtool_rx_vport") {
						t.Errorf("filtered or dropped series exported: %s", k)
					}
				}
			}
			for k, want := range checks {
				if v, ok := got[k]; !ok || v != want {
					t.Errorf("%s = %v (present %v), want %v", k, v, ok, want)
				}
			}
		})
	}
}

// TestEthtoolFixturesPromtool lints a scrape of the fixture host with
// promtool check metrics.
func TestEthtoolFixturesPromtool(t *testing.T) {
	promtool := testenv.LookPath(t, "promtool")
	c, err := ethtool.New(ethtool.Config{Source: fixtureHost(t)}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	snap, _ := pollOnce(t, c, zap.NewNop())
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(snap.String())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out.String())
	}
}

// TestEthtoolFixtureTableOnce checks that the string table of unchanged
// devices is fetched once and the values once per poll.
func TestEthtoolFixtureTableOnce(t *testing.T) {
	src := fixtureHost(t)
	c, err := ethtool.New(ethtool.Config{Source: src}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		pollOnce(t, c, zap.NewNop())
	}
	if n := src.Calls("StatNames"); n != 2 {
		t.Errorf("StatNames called %d times in 3 polls of 2 devices, want 2", n)
	}
	if n := src.Calls("Stats"); n != 6 {
		t.Errorf("Stats called %d times in 3 polls of 2 devices, want 6", n)
	}
	// An excluded device is never asked anything.
	src2 := fixtureHost(t)
	f, err := collector.NewNameFilter("collector.ethtool.device", "", "ens.*")
	if err != nil {
		t.Fatal(err)
	}
	c2, err := ethtool.New(ethtool.Config{Source: src2, Filter: f}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	snap, _ := pollOnce(t, c2, zap.NewNop())
	if strings.Contains(snap.String(), `device="ens5"`) {
		t.Error("excluded ens5 exported")
	}
	if n := src2.Calls("DriverInfo"); n != 2 { // lo and enp8s0f1np1
		t.Errorf("DriverInfo called %d times, want 2: the excluded device must not be read", n)
	}
}

// TestEthtoolOverlappingPolls runs polls of one collector at the same
// time, as the Runner does when it abandons a stuck poll and starts the
// next one on schedule. Under the race detector (make race) it fails if
// the collector's state between polls is not guarded.
func TestEthtoolOverlappingPolls(t *testing.T) {
	c, err := ethtool.New(ethtool.Config{Source: fixtureHost(t), QueueMode: ethtool.QueueSum}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	const polls = 8
	snaps := make(chan string, polls)
	var wg sync.WaitGroup
	for i := 0; i < polls; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := exposition.NewBuilder()
			if err := c.Update(context.Background(), collector.NewPoll(b, nil)); err != nil {
				t.Error(err)
				return
			}
			snaps <- b.Snapshot().String()
		}()
	}
	wg.Wait()
	close(snaps)
	var first string
	for s := range snaps {
		if first == "" {
			first = s
			continue
		}
		if s != first {
			t.Fatal("overlapping polls of an unchanged host exported different series")
		}
	}
	if !strings.Contains(first, "nic_ethtool_") {
		t.Fatalf("no ethtool series in the overlapping polls:\n%.500s", first)
	}
}
