package deploy

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nic-exporter/nic_exporter/internal/testenv"
	"github.com/nic-exporter/nic_exporter/nodehealth"
)

const npdConfigFile = "npd/nic-exporter-plugin-monitor.json"

// npdConfig is the custom plugin monitor configuration of
// node-problem-detector, with the fields of its documentation
// (docs/custom_plugin_monitor.md) and its CustomPluginConfig and
// CustomRule types (pkg/custompluginmonitor/types). Decoding is strict:
// a misspelt field, which NPD would ignore, fails the test.
type npdConfig struct {
	Plugin       string `json:"plugin"`
	PluginConfig struct {
		InvokeInterval               string `json:"invoke_interval"`
		Timeout                      string `json:"timeout"`
		MaxOutputLength              int    `json:"max_output_length"`
		Concurrency                  int    `json:"concurrency"`
		MessageChangeConditionUpdate bool   `json:"enable_message_change_based_condition_update"`
		SkipInitialStatus            *bool  `json:"skip_initial_status,omitempty"`
	} `json:"pluginConfig"`
	Source           string `json:"source"`
	MetricsReporting bool   `json:"metricsReporting"`
	Conditions       []struct {
		Type    string `json:"type"`
		Reason  string `json:"reason"`
		Message string `json:"message"`
	} `json:"conditions"`
	Rules []struct {
		Type      string   `json:"type"`
		Condition string   `json:"condition"`
		Reason    string   `json:"reason"`
		Path      string   `json:"path"`
		Args      []string `json:"args"`
		Timeout   string   `json:"timeout"`
	} `json:"rules"`
}

func readNPDConfig(t *testing.T) npdConfig {
	t.Helper()
	b, err := os.ReadFile(npdConfigFile)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var c npdConfig
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("%s: %v", npdConfigFile, err)
	}
	return c
}

// TestNPDConfig checks the example node-problem-detector config against
// the node conditions and NPD's own rules: one permanent rule per node
// condition, with the condition's type and reason, each running
// nic_exporter check --format=npd --condition=TYPE at the path the
// release packages install, within NPD's timeouts (a rule's timeout may
// not exceed the global one, which NPD refuses at startup), with the
// check's message length equal to max_output_length.
func TestNPDConfig(t *testing.T) {
	c := readNPDConfig(t)
	if c.Plugin != "custom" {
		t.Errorf("plugin %q, NPD supports only \"custom\"", c.Plugin)
	}
	global := mustDuration(t, c.PluginConfig.Timeout)
	mustDuration(t, c.PluginConfig.InvokeInterval)
	if c.PluginConfig.MaxOutputLength <= 0 {
		t.Errorf("max_output_length %d", c.PluginConfig.MaxOutputLength)
	}
	defs := nodehealth.Conditions()
	if len(c.Conditions) != len(defs) || len(c.Rules) != len(defs) {
		t.Fatalf("%d conditions and %d rules for %d node conditions", len(c.Conditions), len(c.Rules), len(defs))
	}
	for i, d := range defs {
		if got := c.Conditions[i]; got.Type != d.Type || got.Reason != nodehealth.HealthyReason || got.Message == "" {
			t.Errorf("condition %d: %+v, want type %s, reason %s and a message", i, got, d.Type, nodehealth.HealthyReason)
		}
		r := c.Rules[i]
		if r.Type != "permanent" || r.Condition != d.Type || r.Reason != d.Reason {
			t.Errorf("rule %d: %s %s %s, want permanent %s %s", i, r.Type, r.Condition, r.Reason, d.Type, d.Reason)
		}
		if r.Path != "/usr/bin/nic_exporter" {
			t.Errorf("rule %s: path %q, want the packages' /usr/bin/nic_exporter", d.Type, r.Path)
		}
		if len(r.Args) == 0 || r.Args[0] != "check" {
			t.Errorf("rule %s: args %q do not run the check subcommand", d.Type, r.Args)
		}
		want := map[string]bool{"--format=npd": false, "--condition=" + d.Type: false, "--npd.max-output-length=" + itoa(c.PluginConfig.MaxOutputLength): false}
		var checkTimeout time.Duration
		for _, a := range r.Args {
			if _, ok := want[a]; ok {
				want[a] = true
			}
			if v, ok := strings.CutPrefix(a, "--timeout="); ok {
				checkTimeout = mustDuration(t, v)
			}
		}
		for a, seen := range want {
			if !seen {
				t.Errorf("rule %s: args %q lack %s", d.Type, r.Args, a)
			}
		}
		rt := mustDuration(t, r.Timeout)
		if rt > global {
			t.Errorf("rule %s: timeout %s above the global %s (NPD refuses the config)", d.Type, rt, global)
		}
		if checkTimeout <= 0 || checkTimeout >= rt {
			t.Errorf("rule %s: the check's --timeout %s must be set and below the rule's %s, so the check answers before NPD kills it", d.Type, checkTimeout, rt)
		}
	}
}

// TestNPDConfigRunsCheck runs each rule's command line (the built
// exporter in place of /usr/bin/nic_exporter, the demo exporter's
// address in place of the default) against a demo host with the
// fw_fatal fault: the NICFirmwareFatal rule exits 1 (NonOK) with a
// message within max_output_length, every other rule 0 (OK).
func TestNPDConfigRunsCheck(t *testing.T) {
	c := readNPDConfig(t)
	addr := startDemo(t, "npd-demo", "--demo.faults=fw_fatal@0s", "--health.interval=200ms")
	deadline := time.Now().Add(testenv.HangGuard)
	for _, r := range c.Rules {
		args := make([]string, len(r.Args))
		for i, a := range r.Args {
			if strings.HasPrefix(a, "--url=") {
				a = "--url=http://" + addr
			}
			args[i] = a
		}
		want := 0
		if r.Condition == "NICFirmwareFatal" {
			want = 1
		}
		for {
			cmd := exec.Command(exporterBinary, args...)
			var out bytes.Buffer
			cmd.Stdout = &out
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			msg := strings.TrimSuffix(out.String(), "\n")
			if code == nodehealth.ExitUnknown && time.Now().Before(deadline) {
				// The verdict is unknown until every collector polled.
				time.Sleep(100 * time.Millisecond)
				continue
			}
			if code != want || len(msg) > c.PluginConfig.MaxOutputLength || strings.Contains(msg, "\n") {
				t.Errorf("rule %s: exit %d, message %q (%d bytes); want exit %d and one line of at most %d", r.Condition, code, msg, len(msg), want, c.PluginConfig.MaxOutputLength)
			}
			break
		}
	}
}

func mustDuration(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("%s: %v", npdConfigFile, err)
	}
	return d
}

func itoa(n int) string { return strconv.Itoa(n) }
