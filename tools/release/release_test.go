package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// requireAllVar is the variable CI sets (internal/testenv of the
// exporter's module, which this module cannot import): a test that would
// skip for a missing tool fails instead.
const requireAllVar = "NIC_EXPORTER_REQUIRE_ALL"

// lookPath returns the path of a tool the test needs, skipping the test
// when it is missing, or failing it under NIC_EXPORTER_REQUIRE_ALL=1.
func lookPath(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv(requireAllVar) == "1" {
			t.Fatalf("%s not found and %s=1: %v", name, requireAllVar, err)
		}
		t.Skipf("%s not found: %v", name, err)
	}
	return p
}

// release is the release every test inspects, built once by TestMain
// from the checkout this module lives in.
var release struct {
	cfg Config
	dir string
}

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	root, err := filepath.Abs("../..")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg, err := ConfigFromGit(root, os.Getenv("SOURCE_DATE_EPOCH"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "nic_exporter-release-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	cfg.Out = filepath.Join(dir, "dist")
	if err := Build(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		return 1
	}
	release.cfg, release.dir = cfg, cfg.Out
	return m.Run()
}

// artifact returns the path of a file of the release.
func artifact(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(release.dir, name)
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReproducible builds the release a second time into another
// directory and requires the same checksums: same commit, same bytes.
// It also checks that sha256sums.txt lists every artifact with its sum.
func TestReproducible(t *testing.T) {
	first, err := os.ReadFile(artifact(t, ChecksumsFile))
	if err != nil {
		t.Fatal(err)
	}
	v, pv := release.cfg.Version, debVersion(release.cfg.Version)
	wantNames := []string{
		"nic_exporter-" + v + ".linux-amd64.tar.gz",
		"nic_exporter-" + v + ".linux-arm64.tar.gz",
		"nic_exporter-" + v + ".oci.tar",
		"nic_exporter-" + v + ".linux-amd64.cdx.json",
		"nic_exporter-" + v + ".linux-arm64.cdx.json",
		"nic_exporter-" + pv + "-1.x86_64.rpm",
		"nic_exporter-" + pv + "-1.aarch64.rpm",
		"nic_exporter_" + pv + "_amd64.deb",
		"nic_exporter_" + pv + "_arm64.deb",
	}
	lines := strings.Split(strings.TrimSuffix(string(first), "\n"), "\n")
	var names []string
	for _, line := range lines {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("%s: bad line %q", ChecksumsFile, line)
		}
		got, err := fileSHA256(artifact(t, name))
		if err != nil {
			t.Fatal(err)
		}
		if got != sum {
			t.Errorf("%s: sha256 %s, %s says %s", name, got, ChecksumsFile, sum)
		}
		names = append(names, name)
	}
	sort.Strings(wantNames)
	if strings.Join(names, " ") != strings.Join(wantNames, " ") {
		t.Errorf("%s lists\n%s\nwant\n%s", ChecksumsFile, strings.Join(names, "\n"), strings.Join(wantNames, "\n"))
	}

	cfg := release.cfg
	cfg.Out = filepath.Join(t.TempDir(), "dist")
	if err := Build(cfg); err != nil {
		t.Fatal(err)
	}
	second, err := os.ReadFile(filepath.Join(cfg.Out, ChecksumsFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, second) {
		t.Errorf("two builds of the same commit differ:\n%s\nand\n%s", first, second)
	}
}

// debVersion is the version of the .deb and .rpm: nfpm writes a semver
// prerelease "-x" as "~x", which sorts before the release in dpkg and
// rpm.
func debVersion(v string) string {
	return strings.Replace(v, "-", "~", 1)
}

// tarEntry is what the tests check of an archive member.
type tarEntry struct {
	hdr  *tar.Header
	data []byte
}

// readTar returns the members of a tar stream in order.
func readTar(t *testing.T, r io.Reader) []tarEntry {
	t.Helper()
	var out []tarEntry
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tarEntry{hdr, data})
	}
}

// checkReproducibleTar checks what makes a tar reproducible: members
// sorted, owned by 0:0 without names, dated epoch.
func checkReproducibleTar(t *testing.T, what string, entries []tarEntry, epoch time.Time) {
	t.Helper()
	for i, e := range entries {
		h := e.hdr
		if i > 0 && entries[i-1].hdr.Name >= h.Name {
			t.Errorf("%s: %s after %s: not sorted", what, h.Name, entries[i-1].hdr.Name)
		}
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" {
			t.Errorf("%s: %s owned by %d(%s):%d(%s), want 0:0", what, h.Name, h.Uid, h.Uname, h.Gid, h.Gname)
		}
		if !h.ModTime.Equal(epoch) {
			t.Errorf("%s: %s dated %v, want %v", what, h.Name, h.ModTime, epoch)
		}
	}
}

// checkELF checks that data is a static Linux executable for arch.
func checkELF(t *testing.T, what string, data []byte, arch string) {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
	if f.Machine != machine {
		t.Errorf("%s: machine %v, want %v", what, f.Machine, machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s: has a program interpreter: not static", what)
		}
	}
}

// TestTarballs checks the members of each tarball, the gzip header and
// the binary's architecture.
func TestTarballs(t *testing.T) {
	for _, arch := range Arches {
		t.Run(arch, func(t *testing.T) {
			name := tarballName(release.cfg.Version, arch)
			f, err := os.Open(artifact(t, name))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			zr, err := gzip.NewReader(f)
			if err != nil {
				t.Fatal(err)
			}
			if zr.Name != "" || !zr.ModTime.IsZero() {
				t.Errorf("gzip header: name %q, time %v; want neither", zr.Name, zr.ModTime)
			}
			entries := readTar(t, zr)
			checkReproducibleTar(t, name, entries, release.cfg.Epoch)
			top := strings.TrimSuffix(name, ".tar.gz") + "/"
			modes := map[string]int64{}
			for _, e := range entries {
				rel, ok := strings.CutPrefix(e.hdr.Name, top)
				if !ok && e.hdr.Name != top {
					t.Errorf("%s outside %s", e.hdr.Name, top)
				}
				modes[rel] = e.hdr.Mode
				if rel == "nic_exporter" {
					checkELF(t, e.hdr.Name, e.data, arch)
				}
			}
			want := map[string]int64{
				"":                              0o755,
				"nic_exporter":                  0o755,
				"LICENSE":                       0o644,
				"README.md":                     0o644,
				"CHANGELOG.md":                  0o644,
				"web-config.yml":                0o644,
				"systemd/":                      0o755,
				"systemd/nic_exporter.service":  0o644,
				"systemd/nic_exporter.default":  0o644,
				"systemd/nic_exporter.sysusers": 0o644,
				"systemd/vma.conf":              0o644,
			}
			share := wantShare(t)
			for rel := range share {
				want[rel] = 0o644
				for d := path.Dir(rel); d != "."; d = path.Dir(d) {
					want[d+"/"] = 0o755
				}
			}
			if fmt.Sprint(modes) != fmt.Sprint(want) {
				t.Errorf("members and modes\n%v\nwant\n%v", modes, want)
			}
			got := map[string][]byte{}
			for _, e := range entries {
				if e.hdr.Typeflag == tar.TypeReg {
					got[strings.TrimPrefix(e.hdr.Name, top)] = e.data
				}
			}
			checkShare(t, name, got)
		})
	}
}

// wantShare returns the alerting half every artifact but the image
// ships, by path under /usr/share/nic_exporter (the tarball's top
// directory), with the repository file's contents: the rule files, the
// Alertmanager routes and inhibit rules, every dashboard and the Grafana
// provisioning files.
func wantShare(t *testing.T) map[string][]byte {
	t.Helper()
	src := map[string]string{
		"prometheus/alerts.yml":                                     "deploy/prometheus/alerts.yml",
		"prometheus/rules.yml":                                      "deploy/prometheus/rules.yml",
		"alertmanager/alertmanager.yml":                             "deploy/alertmanager/alertmanager.yml",
		"grafana/provisioning/dashboards/nic_exporter.yml":          "deploy/grafana/dashboards.yml",
		"grafana/provisioning/datasources/nic_exporter.example.yml": "deploy/grafana/datasource.example.yml",
	}
	dashboards, err := filepath.Glob(filepath.Join(release.cfg.Root, "dashboards", "*.json"))
	if err != nil || len(dashboards) < 4 {
		t.Fatalf("dashboards/*.json: %v %v", dashboards, err)
	}
	for _, d := range dashboards {
		src["grafana/dashboards/"+filepath.Base(d)] = "dashboards/" + filepath.Base(d)
	}
	out := map[string][]byte{}
	for rel, s := range src {
		data, err := os.ReadFile(filepath.Join(release.cfg.Root, s))
		if err != nil {
			t.Fatal(err)
		}
		out[rel] = data
	}
	return out
}

// checkShare checks that files, by path under /usr/share/nic_exporter,
// hold every file of wantShare byte for byte, and nothing else there.
func checkShare(t *testing.T, what string, files map[string][]byte) {
	t.Helper()
	want := wantShare(t)
	for rel, data := range want {
		got, ok := files[rel]
		switch {
		case !ok:
			t.Errorf("%s: no %s", what, rel)
		case !bytes.Equal(got, data):
			t.Errorf("%s: %s differs from the repository's", what, rel)
		}
	}
	for rel := range files {
		if _, ok := want[rel]; !ok && isShareTree(rel) {
			t.Errorf("%s: %s is not in the repository", what, rel)
		}
	}
}

// isShareTree says whether rel, a file path under the tarball's top or
// /usr/share/nic_exporter, is in one of the alerting half's directories.
func isShareTree(rel string) bool {
	for _, d := range []string{"prometheus/", "alertmanager/", "grafana/"} {
		if strings.HasPrefix(rel, d) {
			return true
		}
	}
	return false
}

// TestGrafanaProvider checks that the shipped dashboard provider reads
// the directory the packages install the dashboards in.
func TestGrafanaProvider(t *testing.T) {
	var provider struct {
		APIVersion int `yaml:"apiVersion"`
		Providers  []struct {
			Name, Type string
			Options    struct{ Path string }
		}
	}
	data := wantShare(t)["grafana/provisioning/dashboards/nic_exporter.yml"]
	if err := yaml.Unmarshal(data, &provider); err != nil {
		t.Fatal(err)
	}
	if provider.APIVersion != 1 || len(provider.Providers) != 1 {
		t.Fatalf("provider file: %+v, want apiVersion 1 and one provider", provider)
	}
	p := provider.Providers[0]
	if want := pkgShare + "/grafana/dashboards"; p.Type != "file" || p.Options.Path != want {
		t.Errorf("provider %q: type %q, path %q; want file and %s", p.Name, p.Type, p.Options.Path, want)
	}
	var ds struct {
		APIVersion  int `yaml:"apiVersion"`
		Datasources []struct{ Name, Type, URL string }
	}
	if err := yaml.Unmarshal(wantShare(t)["grafana/provisioning/datasources/nic_exporter.example.yml"], &ds); err != nil {
		t.Fatal(err)
	}
	if ds.APIVersion != 1 || len(ds.Datasources) != 1 || ds.Datasources[0].Type != "prometheus" || ds.Datasources[0].URL == "" {
		t.Errorf("datasource example: %+v, want apiVersion 1 and one prometheus datasource with a url", ds)
	}
}

// TestBinaryVersion runs the amd64 binary of the tarball (on an amd64
// machine) and checks the version, revision and build date it prints.
func TestBinaryVersion(t *testing.T) {
	bin := extractAMD64Binary(t)
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("nic_exporter --version: %v\n%s", err, out)
	}
	for _, want := range []string{
		`version ` + regexp.QuoteMeta(release.cfg.Version) + ` `,
		`revision: ` + release.cfg.Revision + `\)`,
		`build date:\s+` + release.cfg.Epoch.Format("20060102-15:04:05") + `\n`,
		`platform:\s+linux/amd64\n`,
	} {
		if !regexp.MustCompile(want).Match(out) {
			t.Errorf("nic_exporter --version prints\n%s\nwithout %s", out, want)
		}
	}
}

// extractAMD64Binary writes the amd64 binary of the tarball to a
// temporary file and returns its path; the test skips on other machines.
func extractAMD64Binary(t *testing.T) string {
	t.Helper()
	if out, err := exec.Command("uname", "-m").Output(); err != nil || strings.TrimSpace(string(out)) != "x86_64" {
		t.Skipf("not an x86_64 machine (uname -m: %s %v)", out, err)
	}
	return tarballBinary(t, "amd64")
}

// tarballBinary writes the binary of arch's tarball to a temporary file
// and returns its path.
func tarballBinary(t *testing.T, arch string) string {
	t.Helper()
	f, err := os.Open(artifact(t, tarballName(release.cfg.Version, arch)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range readTar(t, zr) {
		if strings.HasSuffix(e.hdr.Name, "/nic_exporter") {
			bin := filepath.Join(t.TempDir(), "nic_exporter")
			if err := os.WriteFile(bin, e.data, 0o755); err != nil {
				t.Fatal(err)
			}
			return bin
		}
	}
	t.Fatalf("no nic_exporter in the %s tarball", arch)
	return ""
}

// TestImagePortIsDefault keeps the image's exposed port the exporter's
// default listen port.
func TestImagePortIsDefault(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(release.cfg.Root, "daemon/flags.go"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`DefaultAddress\s*=\s*":(\d+)"`).FindSubmatch(src)
	if m == nil {
		t.Fatal("no DefaultAddress in daemon/flags.go")
	}
	if want := string(m[1]) + "/tcp"; imagePort != want {
		t.Errorf("image exposes %s, the exporter listens on %s", imagePort, want)
	}
}
