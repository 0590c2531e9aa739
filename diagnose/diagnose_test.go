package diagnose

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/internal/logrules"
	"github.com/nic-exporter/nic_exporter/internal/ruleeval"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var fixedNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func rules(t testing.TB) *logrules.Engine {
	t.Helper()
	e, err := logrules.Compile(logrules.KernelRules())
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// alertRules loads the shipped alerting rules.
func alertRules(t testing.TB) *ruleeval.Rules {
	t.Helper()
	r, err := ruleeval.Shipped(nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// analyzer returns an Analyzer with the built-in kernel log rules and
// the shipped alerting rules.
func analyzer(t testing.TB) *Analyzer {
	t.Helper()
	return NewAnalyzer(rules(t), alertRules(t), nil)
}

func run(t *testing.T, format string, paths ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(Config{Paths: paths, Format: format, Rules: rules(t), Limits: DefaultLimits, Now: fixedNow}, &out, &errb, zap.NewNop())
	return out.String(), errb.String(), code
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (rerun with -update and review the diff):\n%s", p, got)
	}
}

// TestBundles runs diagnose over the composite bundles built from real
// public outputs and the demo host's bundle, and compares each format
// with its golden file.
func TestBundles(t *testing.T) {
	tests := []struct {
		bundle   string
		code     int
		alerts   []string // alerts that must be among the findings
		severity string   // the highest severity expected
	}{
		{"mlx5_fault", ExitFindings, []string{"NICKernelLogFirmwareError", "NICPCIeLinkDegraded", "NICInfiniBandPortNotLinkUp"}, SeverityWarning},
		// The "healthy" ConnectX bundle's ethtool -S counted 534,918,379
		// rx_out_of_buffer and 441,063,206,498 rx_discards_phy since boot:
		// conditions alerts.yml defines.
		{"mlx5_healthy", ExitFindings, []string{"NICRxOutOfBuffer", "NICPhyDiscards"}, SeverityWarning},
		{"ena_fault", ExitFindings, []string{"NICENAWatchdogExpired", "NICKernelLogENAReset", "NICKernelLogTxTimeout"}, SeverityPage},
		{"ena_healthy", ExitClean, nil, ""},
		// Every file of the ConnectX-7 guide's collect_debug.sh, each from
		// a cited public output (TestCollectDebugLayout checks each is read).
		{"cx7_collect_debug", ExitFindings, []string{"NICRxOutOfBuffer", "NICPhyDiscards", "NICInfiniBandLinkDowned",
			"NICInfiniBandCounterSaturated", "NICInfiniBandPortNotLinkUp", "NICKernelLogCommandErrors"}, SeverityWarning},
		// One host's bundle, written by nic_exporter collect --demo
		// --demo.faults=fw_fatal@0s,vnic@0s,pcie_degraded@0s,wd_expired@0s
		// --interval 10s (docs/support-bundles.md). wd_expired counted
		// the same in both samples (the demo adds one a minute), so the
		// rate between them is 0 and NICENAWatchdogExpired is no finding;
		// the reporters in error are NICDevlinkReporterStuck too.
		{"demo_collect", ExitFindings, []string{"NICDevlinkFwFatalError", "NICDevlinkVnicError", "NICDevlinkReporterStuck", "NICPCIeLinkDegraded",
			"NICKernelLogFirmwareError", "NICKernelLogENAReset"}, SeverityPage},
	}
	for _, tt := range tests {
		t.Run(tt.bundle, func(t *testing.T) {
			dir := filepath.Join("testdata", "bundles", tt.bundle)
			for _, format := range []string{"text", "json", "openmetrics"} {
				out, errs, code := run(t, format, dir)
				if code != tt.code || errs != "" {
					t.Fatalf("%s: exit %d (stderr %q), want %d", format, code, errs, tt.code)
				}
				golden(t, tt.bundle+"."+format, out)
			}
			b, err := Open(dir, DefaultLimits)
			if err != nil {
				t.Fatal(err)
			}
			r := analyzer(t).Analyze(b)
			got := map[string]bool{}
			for _, f := range r.Findings {
				got[f.Alert] = true
				if f.Runbook == "" || f.Evidence == "" || f.Severity == "" {
					t.Errorf("finding without runbook, evidence or severity: %+v", f)
				}
			}
			for _, a := range tt.alerts {
				if !got[a] {
					t.Errorf("no %s finding; findings: %+v", a, r.Findings)
				}
			}
			if tt.severity != "" && r.Findings[0].Severity != tt.severity {
				t.Errorf("highest severity %s, want %s", r.Findings[0].Severity, tt.severity)
			}
			for _, f := range r.Files {
				if strings.HasPrefix(f.Note, "unparsable") {
					t.Errorf("%s: %s", f.Name, f.Note)
				}
			}
		})
	}
}

// TestRecognisedByContent checks that every tool output of the fixture
// bundles is recognised and the README is listed as ignored.
func TestRecognisedByContent(t *testing.T) {
	b, err := Open(filepath.Join("testdata", "bundles", "mlx5_fault"), DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	r := analyzer(t).Analyze(b)
	want := map[string]string{
		"README": "", "devlink_health.txt": KindDevlinkHealth, "dmesg_mlx5.txt": KindKernelLog,
		"ethtool_stats.txt": KindEthtoolDump, "firmware.txt": KindMlxfwmanager, "ibstat.txt": KindIbstat, "lspci.txt": KindLspci,
	}
	for _, f := range r.Files {
		if k, ok := want[f.Name]; !ok || k != f.Kind {
			t.Errorf("%s recognised as %q, want %q", f.Name, f.Kind, k)
		}
	}
	if len(r.Firmware) != 1 || r.Firmware[0].Versions["FW"][0] != "16.24.4020" {
		t.Errorf("firmware = %+v", r.Firmware)
	}
}

// tarball writes dir as a .tar.gz with one top-level directory.
func tarball(t *testing.T, dir, top string) string {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		name := filepath.ToSlash(filepath.Join(top, rel))
		h, err := tar.FileInfoHeader(fi, "")
		if err != nil {
			return err
		}
		h.Name = name
		if fi.IsDir() {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			_, err = tw.Write(data)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), top+".tar.gz")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTarballEqualsDirectory checks that a bundle reads the same packed.
func TestTarballEqualsDirectory(t *testing.T) {
	for _, name := range []string{"mlx5_fault", "ena_fault"} {
		dir := filepath.Join("testdata", "bundles", name)
		tgz := tarball(t, dir, "mlx5_debug_20260102_030405")
		for _, format := range []string{"json", "openmetrics"} {
			want, _, wc := run(t, format, dir)
			got, errs, gc := run(t, format, tgz)
			if gc != wc || errs != "" {
				t.Fatalf("%s %s: exit %d (%q), directory %d", name, format, gc, errs, wc)
			}
			abs := func(s, src string) string { return strings.ReplaceAll(s, src, "BUNDLE") }
			if abs(got, tgz) != abs(want, dir) {
				t.Errorf("%s %s: tarball differs from directory:\n%s\n---\n%s", name, format, got, want)
			}
		}
	}
}

type member struct {
	hdr  tar.Header
	data string
}

func archive(t *testing.T, ms []member) string {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, m := range ms {
		h := m.hdr
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if h.Typeflag == tar.TypeReg && h.Size == 0 {
			h.Size = int64(len(m.data))
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if m.data != "" {
			if _, err := tw.Write([]byte(m.data)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A member that declares more than it holds is written by Flush
	// failing; close the gzip stream as it is.
	_ = tw.Flush()
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "hostile.tgz")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestHostileArchives checks that archives that try to leave the bundle,
// link out of it or declare huge members are refused with exit 2, and
// that nothing is written to disk while reading them.
func TestHostileArchives(t *testing.T) {
	reg := func(name, data string) member {
		return member{tar.Header{Name: name, Typeflag: tar.TypeReg}, data}
	}
	tests := []struct {
		name    string
		members []member
		reason  string
	}{
		{"dotdot", []member{{tar.Header{Name: "b/", Typeflag: tar.TypeDir, Mode: 0o755}, ""}, reg("b/../../evil.txt", "x")}, "leaves the bundle"},
		{"absolute", []member{reg("/tmp/evil.txt", "x")}, "absolute path"},
		{"symlink", []member{{tar.Header{Name: "b/dmesg.txt", Typeflag: tar.TypeSymlink, Linkname: "/var/log/kern.log"}, ""}}, "is a link"},
		{"hardlink", []member{reg("b/a", "x"), {tar.Header{Name: "b/dmesg.txt", Typeflag: tar.TypeLink, Linkname: "../../etc/shadow"}, ""}}, "is a link"},
		// The header declares 10 GB; the archive holds only the header.
		{"sparse10GB", []member{{tar.Header{Name: "b/ethtool_stats.txt", Typeflag: tar.TypeReg, Size: 10 << 30}, ""}}, "declares 10737418240 bytes"},
		{"two tops", []member{reg("a/x", "1"), reg("b/y", "2")}, "more than one top-level directory"},
		{"not gzip", nil, "not a gzip archive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p string
			if tt.members == nil {
				p = filepath.Join(t.TempDir(), "plain.tgz")
				if err := os.WriteFile(p, []byte("plain text"), 0o644); err != nil {
					t.Fatal(err)
				}
			} else {
				p = archive(t, tt.members)
			}
			before := listTree(t, filepath.Dir(p))
			out, errs, code := run(t, "text", p)
			if code != ExitUnreadable || out != "" {
				t.Fatalf("exit %d, stdout %q; want 2 and nothing", code, out)
			}
			if !strings.Contains(errs, tt.reason) || strings.Count(errs, "\n") != 1 {
				t.Errorf("stderr %q, want one line with %q", errs, tt.reason)
			}
			if after := listTree(t, filepath.Dir(p)); after != before {
				t.Errorf("files written next to the archive: %s", after)
			}
		})
	}
}

func listTree(t *testing.T, dir string) string {
	t.Helper()
	var names []string
	_ = filepath.Walk(dir, func(p string, _ os.FileInfo, _ error) error {
		names = append(names, p)
		return nil
	})
	sort.Strings(names)
	return strings.Join(names, "\n")
}

// TestDirectorySymlinkOut checks that a bundle directory with a link that
// points out of it is refused, and one that points inside is read.
func TestDirectorySymlinkOut(t *testing.T) {
	dir := t.TempDir()
	b := filepath.Join(dir, "bundle")
	if err := os.Mkdir(b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b, "ibstat.txt"), []byte("CA 'mlx5_0'\n\tPort 1:\n\t\tPhysical state: LinkUp\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("ibstat.txt", filepath.Join(b, "inside")); err != nil {
		t.Fatal(err)
	}
	if _, errs, code := run(t, "text", b); code != ExitClean {
		t.Fatalf("inside link: exit %d %s", code, errs)
	}
	if err := os.Symlink("/etc/hostname", filepath.Join(b, "outside")); err != nil {
		t.Fatal(err)
	}
	_, errs, code := run(t, "text", b)
	if code != ExitUnreadable || !strings.Contains(errs, "points out of the bundle") {
		t.Fatalf("outside link: exit %d %q", code, errs)
	}
}

func TestUnreadableInputs(t *testing.T) {
	for _, p := range []string{filepath.Join(t.TempDir(), "missing"), "diagnose.go"} {
		_, errs, code := run(t, "text", p)
		if code != ExitUnreadable || strings.Count(errs, "\n") != 1 {
			t.Errorf("%s: exit %d, stderr %q", p, code, errs)
		}
	}
}

// TestOpenMetricsPromtool checks the openmetrics output with promtool
// and backfills it into a TSDB.
func TestOpenMetricsPromtool(t *testing.T) {
	promtool := testenv.LookPath(t, "promtool")
	out, _, _ := run(t, "openmetrics", filepath.Join("testdata", "bundles", "mlx5_fault"), filepath.Join("testdata", "bundles", "ena_fault"))
	if !strings.Contains(out, "nic_kernel_log_events_total{") || !strings.Contains(out, "nic_ethtool_wd_expired_total{") {
		t.Fatalf("openmetrics output lacks the kernel log or ethtool series:\n%s", out)
	}
	dir := t.TempDir()
	f := filepath.Join(dir, "bundle.om")
	if err := os.WriteFile(f, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	// promtool check metrics lints the Prometheus text format: the same
	// series, rendered by the same code in that format.
	var text bytes.Buffer
	var reports []*Report
	for _, b := range []string{"mlx5_fault", "ena_fault"} {
		bd, err := Open(filepath.Join("testdata", "bundles", b), DefaultLimits)
		if err != nil {
			t.Fatal(err)
		}
		reports = append(reports, analyzer(t).Analyze(bd))
	}
	if err := writeExposition(&text, reports, rules(t), fixedNow, zap.NewNop(), exposition.Text); err != nil {
		t.Fatal(err)
	}
	check := exec.Command(promtool, "check", "metrics")
	check.Stdin = &text
	if b, err := check.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, b)
	}
	tsdb := filepath.Join(dir, "tsdb")
	if b, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", f, tsdb).CombinedOutput(); err != nil {
		t.Fatalf("promtool tsdb create-blocks-from openmetrics: %v\n%s", err, b)
	}
	blocks, _ := filepath.Glob(filepath.Join(tsdb, "*", "meta.json"))
	if len(blocks) == 0 {
		t.Errorf("no TSDB block written")
	}
}

// TestDirectoryLimits checks the bounds on a bundle directory and that a
// FIFO in it is skipped, never opened.
func TestDirectoryLimits(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), bytes.Repeat([]byte("x"), 100), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := Open(dir, Limits{MaxFileSize: 100, MaxFiles: 10, MaxTotal: 1000})
	if err != nil || len(b.Files) != 1 {
		t.Fatalf("within limits: %v %+v", err, b)
	}
	for _, lim := range []Limits{{MaxFileSize: 99, MaxFiles: 10, MaxTotal: 1000}, {MaxFileSize: 100, MaxFiles: 0, MaxTotal: 1000}, {MaxFileSize: 100, MaxFiles: 10, MaxTotal: 99}} {
		var ie *InputError
		if _, err := Open(dir, lim); !errors.As(err, &ie) {
			t.Errorf("%+v: err %v, want an InputError", lim, err)
		}
	}
}

// TestCollectDebugLayout is the "done when" for the ConnectX-7
// troubleshooting guide's collect_debug.sh: its six files of counters,
// firmware, health and logs are each read (a kind, no unparsable or
// ignored note), the interface of ethtool_i.txt and ethtool_stats.txt is
// the eth0 of ethtool.txt, the values of ib_counters.txt are mlx5_0 port
// 1's counters, and the counters since boot become the findings the
// alerts define: ring and port drops from ethtool -S, a saturated and
// downed InfiniBand port from the bare values, the command error from the
// journal; the firmware inventory names both ConnectX-7 cards.
func TestCollectDebugLayout(t *testing.T) {
	b, err := Open(filepath.Join("testdata", "bundles", "cx7_collect_debug"), DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	r := NewAnalyzer(rules(t), alertRules(t), nil).Analyze(b)
	files := map[string]FileResult{}
	for _, f := range r.Files {
		files[f.Name] = f
	}
	for _, name := range []string{"ethtool_stats.txt", "ib_counters.txt", "firmware.txt", "devlink_health.txt", "dmesg_mlx5.txt", "journal_mlx5.txt",
		"ethtool_i.txt", "ethtool.txt", "ibstat.txt", "lspci.txt", "uname.txt", "os-release.txt"} {
		f, ok := files[name]
		if !ok || f.Kind == "" || strings.Contains(f.Note, "unparsable") || strings.Contains(f.Note, "ignored") {
			t.Errorf("%s: %+v", name, f)
		}
	}
	for _, name := range []string{"ethtool_i.txt", "ethtool_stats.txt"} {
		if !strings.Contains(files[name].Note, "interface eth0: named by the ethtool output beside it") {
			t.Errorf("%s: note %q", name, files[name].Note)
		}
	}
	if n := files["ib_counters.txt"].Note; !strings.Contains(n, "pma_attrs_ext in the C glob order") {
		t.Errorf("ib_counters.txt: note %q", n)
	}
	want := map[string]string{ // alert -> device
		"NICRxOutOfBuffer":              "eth0",
		"NICPhyDiscards":                "eth0",
		"NICInfiniBandLinkDowned":       "mlx5_0 port 1",
		"NICInfiniBandCounterSaturated": "mlx5_0 port 1",
		"NICKernelLogCommandErrors":     "0000:01:00.0",
	}
	got := map[string]string{}
	for _, f := range r.Findings {
		got[f.Alert] = f.Device
	}
	for a, dev := range want {
		if got[a] != dev {
			t.Errorf("%s on %q, want %q (findings %v)", a, got[a], dev, got)
		}
	}
	psids := 0
	for _, fw := range r.Firmware {
		if fw.PSID == "MT_0000001244" {
			psids++
		}
	}
	if psids != 2 {
		t.Errorf("firmware: %+v", r.Firmware)
	}
}
