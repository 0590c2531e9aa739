package diagnose

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/ethtool"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/internal/ethtooldump"
	"github.com/nic-exporter/nic_exporter/internal/logrules"
)

// samples returns the sample lines of a text exposition without the
// instance label and timestamps, sorted.
func samples(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		l = strings.Replace(l, `instance="BUNDLE",`, "", 1)
		l = strings.Replace(l, `{instance="BUNDLE"}`, "", 1)
		l = strings.TrimSuffix(l, " "+fmt.Sprint(fixedNow.UnixMilli()))
		out = append(out, l)
	}
	sort.Strings(out)
	return out
}

func bundleOf(t *testing.T, files map[string]string) *Bundle {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		p := filepath.Join(dir, "BUNDLE", filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := Open(filepath.Join(dir, "BUNDLE"), DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	b.Source = "BUNDLE"
	return b
}

// TestCorpusAgreesWithCollectors runs diagnose over every real dump and
// kernel log line of the fidelity corpus and checks that it exports what
// the daemon's collectors export on the same inputs, and that its
// findings name exactly the kernel log events the kmsg collector counts.
func TestCorpusAgreesWithCollectors(t *testing.T) {
	e := rules(t)
	alerts := alertRules(t)
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "realworld", "ethtool", "*.txt"))
	if len(files) < 10 {
		t.Fatalf("only %d ethtool corpus files", len(files))
	}
	for _, p := range files {
		t.Run(filepath.Base(p), func(t *testing.T) {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			r := NewAnalyzer(e, alerts, nil).Analyze(bundleOf(t, map[string]string{"sos_commands/networking/ethtool_-S_eth0": string(data)}))
			if len(r.Files) != 1 || r.Files[0].Kind != KindEthtoolDump || r.Files[0].Note != "" {
				t.Fatalf("files: %+v", r.Files)
			}
			var got bytes.Buffer
			if err := writeExposition(&got, []*Report{r}, e, fixedNow, zap.NewNop(), exposition.Text); err != nil {
				t.Fatal(err)
			}
			// The daemon's collector over the same dump.
			d, err := ethtooldump.Parse(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			c, err := ethtool.New(ethtool.Config{Source: ethtooldump.NewSource(&ethtooldump.Device{Name: "eth0", Index: 1, Dump: d})}, zap.NewNop())
			if err != nil {
				t.Fatal(err)
			}
			b := exposition.NewBuilder()
			if err := c.Update(context.Background(), collector.NewPoll(b, collector.NewSourceErrors(zap.NewNop(), 0))); err != nil {
				t.Fatal(err)
			}
			var want bytes.Buffer
			if _, err := b.Snapshot().WriteTo(&want, exposition.Text); err != nil {
				t.Fatal(err)
			}
			g, w := samples(got.String()), samples(want.String())
			if strings.Join(g, "\n") != strings.Join(w, "\n") || len(w) == 0 {
				t.Errorf("diagnose exports %d samples, the collector %d; first of diagnose %q", len(g), len(w), g)
			}
		})
	}

	// Kernel log: every corpus line, with the prefixes it was printed with.
	tsv, err := os.ReadFile(filepath.Join("..", "testdata", "realworld", "kmsg", "kmsg_lines.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	// alerted reports whether an alert of alerts.yml reads the event's
	// kernel log series and fires on any increase (> 0); one with a
	// higher threshold, such as NICKernelLogPCIeCorrected's more than 5
	// an hour, need not fire on the corpus' few lines.
	anyIncrease := regexp.MustCompile(`\]\) > 0(\s|$)`)
	alerted := func(event string) bool {
		for _, a := range alerts.Alerts() {
			if a.Selects(map[string]string{"__name__": "nic_kernel_log_events_total", "job": "nic_exporter", "event": event}) && anyIncrease.MatchString(a.Expr) {
				return true
			}
		}
		return false
	}
	expect := map[string]bool{} // device|event of lines the corpus names an alerted event for
	for i, row := range strings.Split(strings.TrimSuffix(string(tsv), "\n"), "\n") {
		cols := strings.Split(row, "\t")
		if i == 0 || len(cols) < 4 {
			continue
		}
		log.WriteString(cols[0] + "\n")
		if m, ok := e.Match(logrules.StripPrefix(cols[0])); ok && m.Rule.Event == cols[1] {
			if alerted(cols[1]) {
				expect[cols[3]+"|"+cols[1]] = true
			}
		}
	}
	r := NewAnalyzer(e, alerts, nil).Analyze(bundleOf(t, map[string]string{"dmesg_mlx5.txt": log.String()}))
	findings := map[string]bool{}
	for _, f := range r.Findings {
		if ev, ok := f.Labels["event"]; ok {
			findings[f.Labels["device"]+"|"+ev] = true
		}
	}
	var om bytes.Buffer
	if err := writeExposition(&om, []*Report{r}, e, fixedNow, zap.NewNop(), exposition.Text); err != nil {
		t.Fatal(err)
	}
	counted := map[string]bool{}
	for _, s := range samples(om.String()) {
		if !strings.HasPrefix(s, "nic_kernel_log_events_total{") {
			continue
		}
		var driver, device, event string
		if _, err := fmt.Sscanf(strings.NewReplacer(`"`, " ", ",", " ", "{", " ", "}", " ").Replace(s),
			"nic_kernel_log_events_total driver= %s device= %s event= %s", &driver, &device, &event); err != nil {
			// device may be empty
			continue
		}
		if alerted(event) {
			counted[device+"|"+event] = true
		}
	}
	if len(expect) == 0 {
		t.Fatal("no corpus line with an alerted event")
	}
	for k := range expect {
		if !findings[k] {
			t.Errorf("corpus expects %s; diagnose has no such finding", k)
		}
	}
	for k := range counted {
		if !findings[k] {
			t.Errorf("kmsg collector counts %s; diagnose has no such finding", k)
		}
	}
	for k := range findings {
		if !counted[k] {
			t.Errorf("diagnose finds %s; the kmsg collector does not count it", k)
		}
	}
}

// TestSeveralInterfaces checks that the sosreport files of two
// interfaces of different drivers become two devices.
func TestSeveralInterfaces(t *testing.T) {
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join("..", "testdata", "realworld", "ethtool", p))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	e := rules(t)
	alerts := alertRules(t)
	r := NewAnalyzer(e, alerts, nil).Analyze(bundleOf(t, map[string]string{
		"sos_commands/networking/ethtool_-S_eth0": read("ena_2.x_ubuntu5.4-aws_qmar1.txt"),
		"sos_commands/networking/ethtool_-S_ens8": read("mlx5_cx4_ubuntu18.04_4.15_ethq8.txt"),
	}))
	var out bytes.Buffer
	if err := writeExposition(&out, []*Report{r}, e, fixedNow, zap.NewNop(), exposition.Text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`nic_ethtool_wd_expired_total{instance="BUNDLE",device="eth0"} 0`, `nic_ethtool_info{instance="BUNDLE",device="ens8",driver="mlx5_core",`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %s in:\n%s", want, out.String())
		}
	}
}

// TestNICOnlyRulesUseLspci checks that a PCIe error that a root port
// logs (a real line of the corpus, minisforum-docs/MS-02-Ultra#10) is a
// finding without lspci, and none when the bundle's lspci shows the
// function to be a bridge (the lspci line is hand-written), in the
// findings and in the kmsg collector's series alike.
func TestNICOnlyRulesUseLspci(t *testing.T) {
	const line = "Sep 22 09:59:09 pve kernel: pcieport 0000:80:1b.4: AER: Uncorrectable (Non-Fatal) error message received from 0000:80:1b.4\n"
	e := rules(t)
	alerts := alertRules(t)
	for _, tt := range []struct {
		files map[string]string
		want  int
	}{
		{map[string]string{"journal_mlx5.txt": line}, 1},
		{map[string]string{"journal_mlx5.txt": line, "lspci.txt": "80:1b.4 PCI bridge: Intel Corporation Device 7a4c\n\tLnkCap:\tPort #0, Speed 8GT/s, Width x4\n"}, 0},
	} {
		r := NewAnalyzer(e, alerts, nil).Analyze(bundleOf(t, tt.files))
		if len(r.Findings) != tt.want {
			t.Errorf("%d files: findings %+v, want %d", len(tt.files), r.Findings, tt.want)
		}
		var out bytes.Buffer
		if err := writeExposition(&out, []*Report{r}, e, fixedNow, zap.NewNop(), exposition.Text); err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(out.String(), "nic_kernel_log_events_total{"); got != tt.want {
			t.Errorf("%d files: %d kernel log event series, want %d:\n%s", len(tt.files), got, tt.want, out.String())
		}
	}
}
