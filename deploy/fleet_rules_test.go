package deploy

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// TestFleetRulesYieldZero runs the shipped recording rules in a real
// Prometheus against two demo hosts: the full one (devlink, ethtool with
// mlx5 and ENA, InfiniBand, VMA, logs) and a bare one that serves only
// netdev (as a host without devlink, ENA, VMA or InfiniBand does). Every
// recording rule must yield a series for both hosts, and 0 for the bare
// one, so the fleet dashboard can tell "healthy" from "not reporting".
func TestFleetRulesYieldZero(t *testing.T) {
	t.Parallel() // see TestMain
	prometheus := testenv.LookPath(t, "prometheus")
	dir := t.TempDir()

	full := startDemo(t, "exporter-full")
	bare := startDemo(t, "exporter-bare", "--no-collector.devlink", "--no-collector.infiniband",
		"--no-collector.vma", "--no-collector.ethtool", "--no-collector.kmsg", "--no-collector.applog")

	rules, _ := filepath.Abs(rulesFile)
	cfg := fmt.Sprintf(`global:
  scrape_interval: 2s
  scrape_timeout: 2s
  evaluation_interval: 1s
rule_files: [%q]
scrape_configs:
  - job_name: nic_exporter
    static_configs:
      - targets: [%q, %q]
`, rules, full, bare)
	addr := startPrometheus(t, prometheus, dir, cfg)
	prom := promAPI{base: "http://" + addr, start: time.Now()}

	// The bare host really lacks the sources the rules read.
	waitFor(t, "a scrape of the bare host", stackWait, func() error {
		res, err := prom.query(fmt.Sprintf(`nic_exporter_build_info{instance=%q}`, bare), false)
		if err != nil {
			return err
		}
		if len(res) != 1 {
			return fmt.Errorf("%d build_info series of the bare host", len(res))
		}
		return nil
	})
	res, err := prom.query(fmt.Sprintf(`count by (__name__) ({instance=%q, __name__=~"nic_(devlink|ethtool|infiniband|vma)_.+"})`, bare), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 0 {
		t.Fatalf("the bare demo host serves %d devlink, ethtool, InfiniBand or VMA families, want none", len(res))
	}

	checks := make(map[string]func() error)
	for _, name := range sortedKeys(recordingRules(t)) {
		// Only the fleet rules (level "instance", one series per host)
		// promise a value for every host; per-device rules such as the
		// physical layer's pre-FEC BER have series only where a device
		// has the inputs.
		if !strings.HasPrefix(name, "instance:") {
			continue
		}
		checks[name+" for both hosts, 0 for the bare one"] = func() error {
			res, err := prom.query(name, false)
			if err != nil {
				return err
			}
			if got := instances(res); !got[full] || !got[bare] {
				return fmt.Errorf("series for %v, want the full host %s and the bare host %s", got, full, bare)
			}
			res, err = prom.query(fmt.Sprintf(`%s{instance=%q} == 0`, name, bare), false)
			if err != nil {
				return err
			}
			if len(res) != 1 {
				return fmt.Errorf("the bare host's value is not 0")
			}
			return nil
		}
	}
	waitAll(t, stackWait, checks)
}

// startDemo runs nic_exporter --demo with extra flags and returns its
// address.
func startDemo(t *testing.T, name string, flags ...string) string {
	t.Helper()
	addr := freeAddr(t)
	args := append([]string{"--web.listen-address=" + addr, "--demo", "--log.level=warn"}, flags...)
	p := startProcess(t, name, exporterBinary, args...)
	waitHTTP(t, p, "http://"+addr+"/readyz")
	return addr
}
