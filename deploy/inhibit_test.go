package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/nic-exporter/nic_exporter/deploy/internal/promstack"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// inhibitStack is a real Alertmanager with the shipped configuration,
// inhibit rules included, that delivers to the test's webhook.
type inhibitStack struct {
	am   string // base URL
	addr string // host:port
	hook *promstack.Webhook
}

// startInhibitAlertmanager starts Alertmanager with the shipped file, the
// receivers pointed at a webhook of the test and short group timings,
// except the first group_wait of tickets: 5 s, so that a warning and the
// page that inhibits it, which Prometheus evaluates in different groups
// up to a second apart, are both in Alertmanager before the warning's
// group is sent (the shipped 30 s does the same in production).
func startInhibitAlertmanager(t *testing.T) *inhibitStack {
	t.Helper()
	hook, hookAddr := startWebhook(t)

	var cfg map[string]any
	if err := yaml.Unmarshal(alertmanagerConfig(t, hookAddr, true), &cfg); err != nil {
		t.Fatal(err)
	}
	if rules, _ := cfg["inhibit_rules"].([]any); len(rules) == 0 {
		t.Fatalf("%s has no inhibit_rules", alertmanagerFile)
	}
	cfg["route"].(map[string]any)["group_wait"] = "5s"
	b, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	addr := startAlertmanager(t, b)
	return &inhibitStack{am: "http://" + addr, addr: addr, hook: hook}
}

// startPrometheus runs a real Prometheus with the shipped alert rules,
// scraping targets every 2 s as job nic_exporter and sending its alerts
// to the stack's Alertmanager.
func (s *inhibitStack) startPrometheus(t *testing.T, targets ...string) promAPI {
	t.Helper()
	prometheus := testenv.LookPath(t, "prometheus")
	dir := t.TempDir()
	alerts, _ := filepath.Abs(alertsFile)
	quoted := make([]string, len(targets))
	for i, a := range targets {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	cfg := fmt.Sprintf(`global:
  scrape_interval: 2s
  scrape_timeout: 2s
  evaluation_interval: 1s
rule_files: [%q]
alerting:
  alertmanagers:
    - static_configs:
        - targets: [%q]
scrape_configs:
  - job_name: nic_exporter
    static_configs:
      - targets: [%s]
`, alerts, s.addr, strings.Join(quoted, ", "))
	addr := startPrometheus(t, prometheus, dir, cfg)
	return promAPI{base: "http://" + addr, start: time.Now()}
}

// firesFor returns a check that alert name fires for instance in prom.
func firesFor(prom promAPI, name, instance string) func() error {
	return func() error {
		res, err := prom.query(fmt.Sprintf(`ALERTS{alertname=%q, alertstate="firing", instance=%q}`, name, instance), false)
		if err != nil {
			return err
		}
		if len(res) == 0 {
			return fmt.Errorf("not firing")
		}
		return nil
	}
}

// amAlert is an alert as Alertmanager's API v2 lists it.
type amAlert struct {
	Labels map[string]string `json:"labels"`
	Status struct {
		State       string   `json:"state"`
		InhibitedBy []string `json:"inhibitedBy"`
	} `json:"status"`
}

// alerts returns the alerts Alertmanager holds for an instance.
func (s *inhibitStack) alerts(instance string) ([]amAlert, error) {
	v := url.Values{"filter": {fmt.Sprintf("instance=%q", instance)}}
	resp, err := http.Get(s.am + "/api/v2/alerts?" + v.Encode())
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out []amAlert
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("GET /api/v2/alerts: HTTP %d: %w", resp.StatusCode, err)
	}
	return out, nil
}

// delivered returns, by receiver path (/pager, /tickets), the names of the
// firing alerts of instance the webhook received.
func (s *inhibitStack) delivered(instance string) map[string]map[string]bool {
	got := map[string]map[string]bool{"/pager": {}, "/tickets": {}}
	for _, n := range s.hook.Received() {
		path := n.Path
		if n.Labels["instance"] == instance && n.Status == "firing" {
			if got[path] == nil {
				got[path] = make(map[string]bool)
			}
			got[path][n.Labels["alertname"]] = true
		}
	}
	return got
}

// waitSuppressed waits until Alertmanager holds each alert of names for
// instance and reports every one of them inhibited.
func (s *inhibitStack) waitSuppressed(t *testing.T, instance string, names []string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%v of %s inhibited in Alertmanager", names, instance), stackWait, func() error {
		list, err := s.alerts(instance)
		if err != nil {
			return err
		}
		seen := make(map[string]bool)
		for _, a := range list {
			name := a.Labels["alertname"]
			if !contains(names, name) {
				continue
			}
			if a.Status.State != "suppressed" || len(a.Status.InhibitedBy) == 0 {
				return fmt.Errorf("%s %v is %s, not inhibited", name, a.Labels, a.Status.State)
			}
			seen[name] = true
		}
		for _, n := range names {
			if !seen[n] {
				return fmt.Errorf("%s not in Alertmanager yet", n)
			}
		}
		return nil
	})
}

// fwFatalInhibited are the warnings that the demo faults fw, fw_fatal and
// mlx5_cmd_timeout set off next to the page NICDevlinkFwFatalError, on
// the same devices, and that the inhibit rules mute.
var fwFatalInhibited = []string{"NICDevlinkFwError", "NICKernelLogFirmwareError", "NICKernelLogCommandErrors"}

// controlWarnings are the warnings of fwFatalInhibited that the control
// host, with fw and mlx5_cmd_timeout but no fw_fatal, fires (the
// firmware's kernel log records come with fw_fatal only).
var controlWarnings = []string{"NICDevlinkFwError", "NICKernelLogCommandErrors"}

// TestInhibitFirmwareFatal runs the shipped rules in a real Prometheus
// against two demo hosts and routes their alerts through the shipped
// Alertmanager configuration. The firmware host has a fatal firmware error
// (fw_fatal) with a firmware syndrome (fw) and firmware command timeouts
// (mlx5_cmd_timeout) on the same devices: its page is delivered and the
// warnings fire in Prometheus but are inhibited. The control host has
// the syndrome and the command timeouts without the fatal error: their
// warnings are delivered.
func TestInhibitFirmwareFatal(t *testing.T) {
	t.Parallel() // see TestMain
	s := startInhibitAlertmanager(t)
	fatal := startExporter(t, "exporter-fw-fatal", "fw_fatal@6s,fw@6s,mlx5_cmd_timeout@6s")
	control := startExporter(t, "exporter-control", "fw@6s,mlx5_cmd_timeout@6s")
	prom := s.startPrometheus(t, fatal, control)

	// The warnings fire in Prometheus for both hosts: what keeps those of
	// the firmware host from the tickets is the inhibition.
	checks := make(map[string]func() error)
	for _, name := range append([]string{"NICDevlinkFwFatalError"}, fwFatalInhibited...) {
		for _, host := range []string{fatal, control} {
			if host == control && !contains(controlWarnings, name) {
				continue
			}
			checks[name+" fires for "+host] = firesFor(prom, name, host)
		}
	}
	waitAll(t, stackWait, checks)
	if t.Failed() {
		return
	}

	s.waitSuppressed(t, fatal, fwFatalInhibited)
	waitFor(t, "the page of the firmware host and the tickets of the control host", stackWait, func() error {
		if got := s.delivered(fatal); !got["/pager"]["NICDevlinkFwFatalError"] {
			return fmt.Errorf("the pager has %v of the firmware host", sortedKeys(got["/pager"]))
		}
		got := s.delivered(control)
		for _, name := range controlWarnings {
			if !got["/tickets"][name] {
				return fmt.Errorf("tickets have %v of the control host, want %v", sortedKeys(got["/tickets"]), controlWarnings)
			}
		}
		return nil
	})
	// Past the tickets' group_wait and a group_interval more, nothing of
	// the inhibited warnings has reached the tickets.
	time.Sleep(7 * time.Second)
	got := s.delivered(fatal)
	for _, name := range fwFatalInhibited {
		if got["/tickets"][name] {
			t.Errorf("%s of the firmware host reached the tickets next to its page", name)
		}
	}
	if got := s.delivered(control); len(got["/pager"]) != 0 {
		t.Errorf("the control host paged: %v", sortedKeys(got["/pager"]))
	}
	for _, n := range s.hook.Received() {
		t.Logf("received at %s: %s %s instance=%s device=%s", n.Receiver, n.Status, n.Labels["alertname"], n.Labels["instance"], n.Labels["device"])
	}
}

// TestInhibitENAWatchdog runs the shipped rules in a real Prometheus
// against two demo hosts and routes their alerts through the shipped
// Alertmanager configuration. The watchdog host's ENA interface misses
// its keep-alives and is reset (wd_expired): the page
// NICENAWatchdogExpired and the kernel log warning NICKernelLogENAReset of
// the same reset fire in Prometheus on the same device, and the host
// sends one notification, the page. The control host's ENA device times
// out register reads (ena_reg_read_timeout): its NICKernelLogENAReset is
// a ticket. On both, every ENA kernel log series names a device that the
// ethtool collector names too (one device label across collectors).
func TestInhibitENAWatchdog(t *testing.T) {
	t.Parallel() // see TestMain
	s := startInhibitAlertmanager(t)
	wd := startExporter(t, "exporter-wd-expired", "wd_expired@6s")
	control := startExporter(t, "exporter-control", "ena_reg_read_timeout@6s")
	prom := s.startPrometheus(t, wd, control)

	waitAll(t, stackWait, map[string]func() error{
		"NICENAWatchdogExpired fires for " + wd:     firesFor(prom, "NICENAWatchdogExpired", wd),
		"NICKernelLogENAReset fires for " + wd:      firesFor(prom, "NICKernelLogENAReset", wd),
		"NICKernelLogENAReset fires for " + control: firesFor(prom, "NICKernelLogENAReset", control),
	})
	if t.Failed() {
		return
	}
	// The kernel log series of both hosts, every event of the reset's
	// lines included, name devices the ethtool collector names.
	for _, q := range []string{
		`nic_kernel_log_events_total{driver="ena"} unless on (instance, device) nic_ethtool_info{driver="ena"}`,
		`ALERTS{alertname="NICKernelLogENAReset"} unless on (instance, device) ALERTS{alertname="NICENAWatchdogExpired"}`,
	} {
		res, err := prom.query(q, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if q[:5] == "ALERT" && r.Metric["instance"] == control {
				continue // no watchdog reset there
			}
			t.Errorf("%s: %v", q, r.Metric)
		}
	}
	res, err := prom.query(fmt.Sprintf(`count(nic_kernel_log_events_total{driver="ena", instance=%q})`, wd), false)
	if err != nil || len(res) == 0 {
		t.Fatalf("no ENA kernel log series for %s: %v", wd, err)
	}

	s.waitSuppressed(t, wd, []string{"NICKernelLogENAReset"})
	waitFor(t, "the page of the watchdog host and the ticket of the control host", stackWait, func() error {
		if got := s.delivered(wd); !got["/pager"]["NICENAWatchdogExpired"] {
			return fmt.Errorf("the pager has %v of the watchdog host", sortedKeys(got["/pager"]))
		}
		if got := s.delivered(control); !got["/tickets"]["NICKernelLogENAReset"] {
			return fmt.Errorf("tickets have %v of the control host", sortedKeys(got["/tickets"]))
		}
		return nil
	})
	// Past the tickets' group_wait and a group_interval more, the watchdog
	// host has sent one page and nothing else.
	time.Sleep(7 * time.Second)
	got := s.delivered(wd)
	if len(got["/tickets"]) != 0 || len(got["/pager"]) != 1 {
		t.Errorf("the watchdog host sent pager %v, tickets %v; want the page NICENAWatchdogExpired only", sortedKeys(got["/pager"]), sortedKeys(got["/tickets"]))
	}
	if got := s.delivered(control); len(got["/pager"]) != 0 {
		t.Errorf("the control host paged: %v", sortedKeys(got["/pager"]))
	}
	for _, n := range s.hook.Received() {
		t.Logf("received at %s: %s %s instance=%s device=%s event=%s", n.Receiver, n.Status, n.Labels["alertname"], n.Labels["instance"], n.Labels["device"], n.Labels["event"])
	}
}

// TestInhibitExporterDown posts alerts to the shipped Alertmanager's API
// with the labels the rules give them: on one host NICExporterDown with
// warnings of its collectors and a page, on another the same warnings
// without NICExporterDown. The down host's warnings are inhibited, its
// page and the other host's warnings are delivered.
func TestInhibitExporterDown(t *testing.T) {
	t.Parallel() // see TestMain
	s := startInhibitAlertmanager(t)
	const down, up = "down:21180", "up:21180"
	warnings := []string{"NICExporterCollectorDown", "NICExporterDevicesMissing", "NICVMAStatsStale"}
	type alert struct {
		Labels       map[string]string `json:"labels"`
		Annotations  map[string]string `json:"annotations"`
		StartsAt     time.Time         `json:"startsAt"`
		EndsAt       time.Time         `json:"endsAt"`
		GeneratorURL string            `json:"generatorURL"`
	}
	now := time.Now()
	var posted []alert
	add := func(labels map[string]string) {
		labels["job"] = "nic_exporter"
		posted = append(posted, alert{Labels: labels, Annotations: map[string]string{"summary": labels["alertname"] + " on " + labels["instance"]},
			StartsAt: now, EndsAt: now.Add(10 * time.Minute), GeneratorURL: "http://prometheus.invalid/graph"})
	}
	add(map[string]string{"alertname": "NICExporterDown", "instance": down, "severity": "warning"})
	add(map[string]string{"alertname": "NICDevlinkFwFatalError", "instance": down, "severity": "page", "device": "pci/0000:08:00.0", "reporter": "fw_fatal", "pci_address": "0000:08:00.0"})
	for _, host := range []string{down, up} {
		add(map[string]string{"alertname": "NICExporterCollectorDown", "instance": host, "severity": "warning", "collector": "vma"})
		add(map[string]string{"alertname": "NICExporterDevicesMissing", "instance": host, "severity": "warning", "collector": "netdev"})
		add(map[string]string{"alertname": "NICVMAStatsStale", "instance": host, "severity": "warning", "pid": "4242", "comm": "md_feed"})
	}
	body, err := json.Marshal(posted)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(s.am+"/api/v2/alerts", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /api/v2/alerts: HTTP %d", resp.StatusCode)
	}

	s.waitSuppressed(t, down, warnings)
	waitFor(t, "the down host's NICExporterDown and page, the other host's warnings", stackWait, func() error {
		got := s.delivered(down)
		if !got["/tickets"]["NICExporterDown"] || !got["/pager"]["NICDevlinkFwFatalError"] {
			return fmt.Errorf("down host: tickets %v, pager %v", sortedKeys(got["/tickets"]), sortedKeys(got["/pager"]))
		}
		got = s.delivered(up)
		for _, name := range warnings {
			if !got["/tickets"][name] {
				return fmt.Errorf("other host: tickets %v, want %v", sortedKeys(got["/tickets"]), warnings)
			}
		}
		return nil
	})
	time.Sleep(3 * time.Second)
	got := s.delivered(down)
	for _, name := range warnings {
		if got["/tickets"][name] {
			t.Errorf("%s of the host whose exporter is down reached the tickets", name)
		}
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestInhibitedAlertsSayByWhat checks that the runbook section of every
// alert that an inhibit rule names as a target (alertname=~"...") has an
// **Inhibited** paragraph naming the rule's source alert, so whoever
// misses a ticket finds why.
func TestInhibitedAlertsSayByWhat(t *testing.T) {
	b, err := os.ReadFile(alertmanagerFile)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		InhibitRules []struct {
			SourceMatchers []string `json:"source_matchers"`
			TargetMatchers []string `json:"target_matchers"`
			Equal          []string `json:"equal"`
		} `json:"inhibit_rules"`
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(runbooksFile)
	if err != nil {
		t.Fatal(err)
	}
	sections := make(map[string]string)
	for _, p := range strings.Split(string(doc), "\n## ")[1:] {
		head, body, _ := strings.Cut(p, "\n")
		sections[head] = body
	}
	alerts := alertRules(t)
	named := 0
	for _, r := range cfg.InhibitRules {
		if len(r.Equal) == 0 {
			t.Errorf("inhibit rule %v has no equal: it would mute the targets of every host", r.SourceMatchers)
		}
		var source string
		for _, m := range r.SourceMatchers {
			if v, ok := strings.CutPrefix(m, `alertname="`); ok {
				source = strings.TrimSuffix(v, `"`)
			}
		}
		if _, ok := alerts[source]; !ok {
			t.Errorf("inhibit rule source %v names no alert of %s", r.SourceMatchers, alertsFile)
		}
		for _, m := range r.TargetMatchers {
			v, ok := strings.CutPrefix(m, `alertname=~"`)
			if !ok {
				continue
			}
			for _, name := range strings.Split(strings.TrimSuffix(v, `"`), "|") {
				named++
				if _, ok := alerts[name]; !ok {
					t.Errorf("inhibit rule target %s is no alert of %s", name, alertsFile)
				}
				body := sections[name]
				i := strings.Index(body, "**Inhibited**")
				if i < 0 || !strings.Contains(body[i:], source) {
					t.Errorf("%s: the runbook section of %s does not say it is inhibited by %s", runbooksFile, name, source)
				}
			}
		}
	}
	if named == 0 {
		t.Errorf("%s: no inhibit rule names its target alerts", alertmanagerFile)
	}
}
