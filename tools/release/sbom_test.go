package main

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// TestSBOM reads each binary's SBOM back and checks it against what
// `go version -m` (the go command's own reader of the build info) lists
// for the binary of the tarball: every module, with its version, purl and
// go.sum hash, is a component, and nothing else but the standard library
// at the binary's Go version; the main component is the exporter at the
// release version and platform.
func TestSBOM(t *testing.T) {
	goCmd := lookPath(t, "go")
	for _, arch := range Arches {
		t.Run(arch, func(t *testing.T) {
			bin := tarballBinary(t, arch)
			out, err := exec.Command(goCmd, "version", "-m", bin).Output()
			if err != nil {
				t.Fatalf("go version -m: %v", err)
			}
			goVersion, mainPath, mods := parseGoVersionM(t, string(out))

			data, err := os.ReadFile(artifact(t, sbomName(release.cfg.Version, arch)))
			if err != nil {
				t.Fatal(err)
			}
			var bom struct {
				BOMFormat   string
				SpecVersion string
				Metadata    struct {
					Timestamp string
					Component cdxComponent
				}
				Components   []cdxComponent
				Dependencies []cdxDependency
			}
			if err := json.Unmarshal(data, &bom); err != nil {
				t.Fatal(err)
			}
			if bom.BOMFormat != "CycloneDX" || bom.SpecVersion != "1.5" {
				t.Errorf("bomFormat %q specVersion %q, want CycloneDX 1.5", bom.BOMFormat, bom.SpecVersion)
			}
			if want := release.cfg.Epoch.Format("2006-01-02T15:04:05Z"); bom.Metadata.Timestamp != want {
				t.Errorf("timestamp %s, want the release's epoch %s", bom.Metadata.Timestamp, want)
			}
			m := bom.Metadata.Component
			if m.Type != "application" || m.Name != mainPath || m.Version != release.cfg.Version ||
				m.PURL != "pkg:golang/"+mainPath+"@v"+release.cfg.Version {
				t.Errorf("main component %+v, want the application %s %s", m, mainPath, release.cfg.Version)
			}
			props := map[string]string{}
			for _, p := range m.Properties {
				props[p.Name] = p.Value
			}
			for name, want := range map[string]string{
				"nic_exporter:go:build:GOOS":        "linux",
				"nic_exporter:go:build:GOARCH":      arch,
				"nic_exporter:go:build:CGO_ENABLED": "0",
				"nic_exporter:go:version":           goVersion,
				"nic_exporter:revision":             release.cfg.Revision,
			} {
				if props[name] != want {
					t.Errorf("main component property %s = %q, want %q", name, props[name], want)
				}
			}

			want := map[string]string{ // purl -> hex SHA-256 or ""
				"pkg:golang/stdlib@v" + strings.TrimPrefix(goVersion, "go"): "",
			}
			for _, mod := range mods {
				want["pkg:golang/"+mod.path+"@"+mod.version] = mod.sha256
			}
			got := map[string]string{}
			var refs []string
			for _, c := range bom.Components {
				if c.Type != "library" || c.BOMRef != c.PURL || c.PURL != "pkg:golang/"+c.Name+"@"+c.Version {
					t.Errorf("component %+v: want a library whose bom-ref is its purl pkg:golang/name@version", c)
				}
				sum := ""
				for _, h := range c.Hashes {
					if h.Alg == "SHA-256" {
						sum = h.Content
					}
				}
				got[c.PURL] = sum
				refs = append(refs, c.BOMRef)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("components (purl: SHA-256)\n%v\ngo version -m lists\n%v", got, want)
			}
			if len(mods) < 10 {
				t.Errorf("go version -m lists %d modules; expected the exporter's dozens", len(mods))
			}
			if len(bom.Dependencies) != 1 || bom.Dependencies[0].Ref != m.BOMRef ||
				strings.Join(sorted(bom.Dependencies[0].DependsOn), " ") != strings.Join(sorted(refs), " ") {
				t.Errorf("dependencies %+v, want the main component depending on every component", bom.Dependencies)
			}
		})
	}
}

func sorted(s []string) []string {
	s = append([]string(nil), s...)
	sort.Strings(s)
	return s
}

// goModule is one module `go version -m` lists: after replacement, with
// its go.sum hash as hex SHA-256.
type goModule struct {
	path, version, sha256 string
}

// parseGoVersionM parses `go version -m` output: its Go version, the main
// module's path and the modules linked in (a "=>" line replaces the dep
// line before it).
func parseGoVersionM(t *testing.T, out string) (goVersion, mainPath string, mods []goModule) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	_, goVersion, _ = strings.Cut(lines[0], ": ")
	for _, line := range lines[1:] {
		f := strings.Split(strings.TrimSpace(line), "\t")
		switch f[0] {
		case "mod":
			mainPath = f[1]
		case "dep", "=>":
			if len(f) < 3 {
				t.Fatalf("go version -m line %q", line)
			}
			mod := goModule{path: f[1], version: f[2]}
			if len(f) > 3 && f[3] != "" {
				raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(f[3], "h1:"))
				if err != nil {
					t.Fatalf("go version -m line %q: %v", line, err)
				}
				mod.sha256 = hex.EncodeToString(raw)
			}
			if f[0] == "=>" {
				mods = mods[:len(mods)-1]
			}
			mods = append(mods, mod)
		}
	}
	if goVersion == "" || mainPath == "" {
		t.Fatalf("go version -m: no Go version or main module in\n%s", out)
	}
	return goVersion, mainPath, mods
}
