package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// startVictoriaMetrics runs a single-node VictoriaMetrics in dir on a free
// local port, scraping the scrape_configs of promscrape (none if empty),
// and returns its base URL once it is ready. Samples are visible to
// queries as soon as they are stored (-search.latencyOffset=0s; the
// default hides the last 30 s, which delays every alert of vmalert by as
// much) and file_sd files are read every second (the default is 5 min).
func startVictoriaMetrics(t *testing.T, dir, promscrape string) string {
	t.Helper()
	vm := testenv.LookPath(t, "victoria-metrics")
	addr := freeAddr(t)
	args := []string{"-storageDataPath=" + filepath.Join(dir, "vm"), "-httpListenAddr=" + addr,
		"-search.latencyOffset=0s", "-search.disableCache", "-loggerLevel=WARN"}
	if promscrape != "" {
		file := filepath.Join(dir, "promscrape.yml")
		if err := os.WriteFile(file, []byte(promscrape), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-promscrape.config="+file, "-promscrape.fileSDCheckInterval=1s")
	}
	p := startProcess(t, "victoria-metrics", vm, args...)
	waitHTTP(t, p, "http://"+addr+"/health")
	return "http://" + addr
}

// startVMAlertEngine is the catalogue's engine in VictoriaMetrics:
// VictoriaMetrics scrapes the exporters and stores the samples, vmalert
// evaluates the rule files over it every second, writes the alerts' state
// (ALERTS) and the recording rules' results back into it, and sends the
// alerts to a real Alertmanager with the shipped routing (vmalert needs a
// notifier). ALERTS is queried in VictoriaMetrics.
func startVMAlertEngine(t *testing.T, dir, targetsFile, alerts, rules string) promAPI {
	t.Helper()
	vmalert := testenv.LookPath(t, "vmalert")
	base := startVictoriaMetrics(t, dir, fmt.Sprintf(`global:
  scrape_interval: 3s
  scrape_timeout: 3s
scrape_configs:
  - job_name: nic_exporter
    file_sd_configs:
      - files: [%q]
`, targetsFile))
	_, hookAddr := startWebhook(t)
	amAddr := startAlertmanager(t, alertmanagerConfig(t, hookAddr, true))
	addr := freeAddr(t)
	p := startProcess(t, "vmalert", vmalert, "-rule="+alerts, "-rule="+rules,
		"-datasource.url="+base, "-remoteWrite.url="+base, "-remoteWrite.flushInterval=1s",
		"-notifier.url=http://"+amAddr, "-evaluationInterval=1s", "-httpListenAddr="+addr,
		"-loggerLevel=WARN")
	waitHTTP(t, p, "http://"+addr+"/-/healthy")
	return promAPI{base: base}
}

// TestFaultCatalogueInVMAlert is TestFaultCatalogueInStack with
// VictoriaMetrics and vmalert in place of Prometheus: the shipped rules,
// as they are but for the "for:" divided by forScale, fire exactly the
// catalogue's alerts on every fault and none on the healthy host.
func TestFaultCatalogueInVMAlert(t *testing.T) {
	t.Parallel() // see TestMain
	runCatalogue(t, startVMAlertEngine)
}

// TestAgentRemoteWriteToVictoriaMetrics runs the fleet path of
// deploy/README.md, "Scaling out to large fleets", on loopback: a
// Prometheus agent (--enable-feature=agent, the 2.x flag; --agent in 3.x)
// scrapes a demo exporter as job nic_exporter and remote-writes to a
// single-node VictoriaMetrics, where the demo host's series are queried
// back with their job and instance and the agent's own labels intact.
func TestAgentRemoteWriteToVictoriaMetrics(t *testing.T) {
	t.Parallel() // see TestMain
	prometheus := testenv.LookPath(t, "prometheus")
	dir := t.TempDir()
	vm := startVictoriaMetrics(t, dir, "")
	exporter := startExporter(t, "exporter-demo", "")
	cfg := fmt.Sprintf(`global:
  scrape_interval: 2s
  scrape_timeout: 2s
  external_labels:
    cluster: gpu-a
scrape_configs:
  - job_name: nic_exporter
    static_configs:
      - targets: [%q]
remote_write:
  - url: %s/api/v1/write
    queue_config:
      batch_send_deadline: 1s
`, exporter, vm)
	cfgFile := filepath.Join(dir, "agent.yml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	agent := startProcess(t, "prometheus-agent", prometheus, "--enable-feature=agent", "--config.file="+cfgFile,
		"--storage.agent.path="+filepath.Join(dir, "wal"), "--web.listen-address="+addr)
	waitHTTP(t, agent, "http://"+addr+"/-/ready")

	api := promAPI{base: vm}
	want := fmt.Sprintf(`nic_ethtool_wd_expired_total{job="nic_exporter", instance=%q, cluster="gpu-a", device="ens5"}`, exporter)
	waitFor(t, want+" in VictoriaMetrics", stackWait, func() error {
		res, err := api.query(want, false)
		if err != nil {
			return err
		}
		if len(res) != 1 {
			return fmt.Errorf("%d series", len(res))
		}
		return nil
	})
	// The agent's up series of the target, which NICExporterDown and
	// NICExporterTargetsAbsent read in the central store, arrives too,
	// possibly in a later remote-write batch than the demo's series.
	up := fmt.Sprintf(`up{job="nic_exporter", instance=%q, cluster="gpu-a"}`, exporter)
	waitFor(t, up+" in VictoriaMetrics", stackWait, func() error {
		res, err := api.query(up, false)
		if err != nil {
			return err
		}
		if len(res) != 1 {
			return fmt.Errorf("up of the demo host in VictoriaMetrics: %v", res)
		}
		return nil
	})
}
