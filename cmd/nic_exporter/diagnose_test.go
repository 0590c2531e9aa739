package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nic-exporter/nic_exporter/internal/ruleeval"
)

// TestDiagnoseSubcommand runs `nic_exporter diagnose` over the fixture
// bundles of diagnose and checks the exit statuses and help.
func TestDiagnoseSubcommand(t *testing.T) {
	bundles := filepath.Join("..", "..", "diagnose", "testdata", "bundles")
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{filepath.Join(bundles, "ena_healthy")}, 0, "0 finding(s)"},
		{[]string{filepath.Join(bundles, "mlx5_healthy")}, 1, "NICRxOutOfBuffer"},
		{[]string{filepath.Join(bundles, "ena_fault")}, 1, "NICENAWatchdogExpired"},
		{[]string{"--format=json", filepath.Join(bundles, "mlx5_fault")}, 1, `"alert": "NICInfiniBandPortNotLinkUp"`},
		{[]string{"--format=openmetrics", filepath.Join(bundles, "ena_fault")}, 1, "# EOF"},
		{[]string{filepath.Join(bundles, "missing")}, 2, ""},
		{[]string{"--format=xml", filepath.Join(bundles, "ena_fault")}, 2, ""},
		{[]string{"--help"}, 0, "EXIT STATUS"},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		code := runDiagnose(tt.args, &out, &errb)
		if code != tt.code {
			t.Errorf("%v: exit %d, want %d (stderr %q)", tt.args, code, tt.code, errb.String())
		}
		if !strings.Contains(out.String(), tt.want) {
			t.Errorf("%v: stdout lacks %q:\n%s", tt.args, tt.want, out.String())
		}
		if code == 2 && strings.Count(errb.String(), "\n") != 1 {
			t.Errorf("%v: stderr %q, want one line", tt.args, errb.String())
		}
	}
}

// TestDiagnoseAlertRulesFile checks --alert-rules-file: a copy of the
// shipped alerts.yml without NICRxOutOfBuffer loses that finding and
// keeps the others; a bad file or a recording rules file alone is exit 2.
func TestDiagnoseAlertRulesFile(t *testing.T) {
	bundle := filepath.Join("..", "..", "diagnose", "testdata", "bundles", "mlx5_healthy")
	alerts := string(ruleeval.ShippedAlerts)
	start := strings.Index(alerts, "      - alert: NICRxOutOfBuffer\n")
	if start < 0 {
		t.Fatal("no NICRxOutOfBuffer in the shipped alerts.yml")
	}
	end := start + 1 + strings.Index(alerts[start+1:], "      - alert: ")
	dir := t.TempDir()
	without := filepath.Join(dir, "alerts.yml")
	if err := os.WriteFile(without, []byte(alerts[:start]+alerts[end:]), 0o600); err != nil {
		t.Fatal(err)
	}
	records := filepath.Join(dir, "rules.yml")
	if err := os.WriteFile(records, ruleeval.ShippedRecords, 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.yml")
	if err := os.WriteFile(bad, []byte("groups: ["), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := runDiagnose([]string{"--alert-rules-file=" + without, "--recording-rules-file=" + records, bundle}, &out, &errb); code != 1 {
		t.Fatalf("exit %d (stderr %q), want 1", code, errb.String())
	}
	if strings.Contains(out.String(), "NICRxOutOfBuffer") || !strings.Contains(out.String(), "NICPhyDiscards") {
		t.Errorf("without NICRxOutOfBuffer's rule, want its finding gone and NICPhyDiscards kept:\n%s", out.String())
	}
	for _, args := range [][]string{
		{"--alert-rules-file=" + bad, bundle},
		{"--alert-rules-file=" + filepath.Join(dir, "missing.yml"), bundle},
		{"--recording-rules-file=" + records, bundle},
	} {
		out.Reset()
		errb.Reset()
		if code := runDiagnose(args, &out, &errb); code != 2 || strings.Count(errb.String(), "\n") != 1 || out.Len() != 0 {
			t.Errorf("%v: exit %d, stderr %q, stdout %q: want 2, one line and nothing", args, code, errb.String(), out.String())
		}
	}
}

// TestDiagnoseEscapesArgumentErrors checks that an argument a shell glob
// took from a hostile file name ("--" and a terminal escape) is reported
// escaped, in one line.
func TestDiagnoseEscapesArgumentErrors(t *testing.T) {
	var out, errb bytes.Buffer
	code := runDiagnose([]string{"--\x1b[2J\nbundle x: 0 finding(s)"}, &out, &errb)
	if code != 2 || strings.Count(errb.String(), "\n") != 1 || strings.ContainsAny(errb.String(), "\x1b") {
		t.Errorf("exit %d, stderr %q: want 2 and one escaped line", code, errb.String())
	}
}

// TestDiagnoseExporterMetrics runs the whole path an operator runs on a
// host with the daemon: a demo exporter (with its fabric collector) whose
// faults started twenty minutes ago and whose clock runs, `collect`
// taking its /metrics with each of two samples of a healthy demo host,
// and `diagnose` of that bundle. The faults live only in the daemon, so
// their findings must come from metrics.txt, whose families replace the
// ones built from the demo host's files. They are the faults a bundle
// shows only through the daemon's view: the far end of the fabric
// (collect sends no MADs) and the VMA applications' logs, with the
// temperature and VMA statistics faults besides. Each fault's first
// alerts are found, and nothing counted is outside the faults' **Fires:**
// lines of docs/faults.md.
func TestDiagnoseExporterMetrics(t *testing.T) {
	faults := []string{"fabric_congestion", "fabric_symbol_errors", "vma_daemon_down", "vma_hugepages", "nic_overheating", "vma_no_buffers"}
	var sched []string
	for _, f := range faults {
		sched = append(sched, f+"@0s")
	}
	start20 := time.Now().Add(-20 * time.Minute).UTC().Format(time.RFC3339)
	e := start(t, "--demo", "--demo.start="+start20, "--demo.faults="+strings.Join(sched, ","),
		"--collector.fabric", "--collector.fabric.interval=100ms")
	waitMetrics(t, e, "nic_fabric_remote_port_xmit_wait_total{", "nic_vma_buffer_pool_no_buffers_total{", `event="vma_daemon_unreachable"`)
	out := filepath.Join(t.TempDir(), "bundle")
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(binary, "collect", "--demo", "--interval=2s", "--url=http://"+e.addr+"/metrics", "--out="+out)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("collect: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	var rep bytes.Buffer
	if code := runDiagnose([]string{"--format=json", out}, &rep, &stderr); code != 1 {
		t.Fatalf("diagnose exit %d, want 1 (findings): %s\n%s", code, stderr.String(), rep.String())
	}
	var doc struct {
		Bundles []struct {
			Files []struct {
				Name, Kind string
			} `json:"files"`
			Findings []struct {
				Alert, Evidence, View string
			} `json:"findings"`
		} `json:"bundles"`
	}
	if err := json.Unmarshal(rep.Bytes(), &doc); err != nil || len(doc.Bundles) != 1 {
		t.Fatalf("report: %v\n%s", err, rep.String())
	}
	r := doc.Bundles[0]
	kinds := map[string]string{}
	for _, f := range r.Files {
		kinds[f.Name] = f.Kind
	}
	for _, f := range []string{"metrics.txt", "earlier_sample/metrics.txt"} {
		if kinds[f] != "nic_exporter /metrics" {
			t.Errorf("%s read as %q", f, kinds[f])
		}
	}
	allowed := firesOf(t, faults)
	found := map[string]bool{}
	for _, f := range r.Findings {
		found[f.Alert] = true
		// The demo's healthy counters that start at old counts are
		// findings only since boot (docs/support-bundles.md, "The
		// healthy host since boot"), not counted; what counts must be
		// the faults'.
		if !allowed[f.Alert] && f.View != "since_boot_only" {
			t.Errorf("unexpected finding %s (%s): %s", f.Alert, f.View, f.Evidence)
		}
		if allowed[f.Alert] && !strings.Contains(f.Evidence, "metrics.txt") {
			t.Errorf("%s: evidence %q is not from metrics.txt", f.Alert, f.Evidence)
		}
	}
	for _, a := range []string{"NICFabricCongestion", "NICFabricRemoteSymbolErrors", "NICFabricRemoteRcvErrors", "NICAppLogVMAErrors",
		"NICTemperatureHigh", "NICTemperatureCritical", "NICVMANoBuffers", "NICVMADrops"} {
		if !found[a] {
			t.Errorf("no %s finding", a)
		}
	}
}

// firesOf returns the alerts the **Fires:** lines of docs/faults.md give
// for the faults.
func firesOf(t *testing.T, faults []string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "faults.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, f := range faults {
		want[f] = true
	}
	alert := regexp.MustCompile("`(NIC[A-Za-z0-9]+)`")
	out, cur := map[string]bool{}, ""
	for _, l := range strings.Split(string(data), "\n") {
		if name, ok := strings.CutPrefix(l, "### `"); ok {
			cur = strings.TrimSuffix(name, "`")
		}
		if rest, ok := strings.CutPrefix(l, "**Fires:**"); ok && want[cur] {
			for _, m := range alert.FindAllStringSubmatch(rest, -1) {
				out[m[1]] = true
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no Fires lines found in docs/faults.md")
	}
	return out
}
