package main

import (
	"debug/buildinfo"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"runtime/debug"
	"strings"
)

// The SBOM of each binary is a CycloneDX 1.5 JSON document made from the
// module graph the Go linker recorded in the binary (debug/buildinfo,
// what `go version -m` prints): the main module, every module it was
// linked from with its version and go.sum hash, and the Go standard
// library at the toolchain's version (stdlib, as vulnerability scanners
// name it). A few structs write it, which
// keeps CycloneDX's generator libraries out of this module.

// sbomName is the file name of the SBOM of arch's binary.
func sbomName(version, arch string) string {
	return fmt.Sprintf("nic_exporter-%s.linux-%s.cdx.json", version, arch)
}

type cdxBOM struct {
	BOMFormat    string          `json:"bomFormat"`
	SpecVersion  string          `json:"specVersion"`
	Version      int             `json:"version"`
	Metadata     cdxMetadata     `json:"metadata"`
	Components   []cdxComponent  `json:"components"`
	Dependencies []cdxDependency `json:"dependencies"`
}

type cdxMetadata struct {
	Timestamp string       `json:"timestamp"`
	Tools     cdxTools     `json:"tools"`
	Component cdxComponent `json:"component"`
}

type cdxTools struct {
	Components []cdxComponent `json:"components"`
}

type cdxComponent struct {
	Type       string        `json:"type"`
	BOMRef     string        `json:"bom-ref,omitempty"`
	Name       string        `json:"name"`
	Version    string        `json:"version,omitempty"`
	PURL       string        `json:"purl,omitempty"`
	Hashes     []cdxHash     `json:"hashes,omitempty"`
	Licenses   []cdxLicense  `json:"licenses,omitempty"`
	Properties []cdxProperty `json:"properties,omitempty"`
}

type cdxHash struct {
	Alg     string `json:"alg"`
	Content string `json:"content"`
}

type cdxLicense struct {
	License struct {
		ID string `json:"id"`
	} `json:"license"`
}

type cdxProperty struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type cdxDependency struct {
	Ref       string   `json:"ref"`
	DependsOn []string `json:"dependsOn"`
}

// goPURL is the package URL of a Go module version
// (pkg:golang/<path>@<version>), each path segment escaped.
func goPURL(path, version string) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return "pkg:golang/" + strings.Join(segs, "/") + "@" + url.PathEscape(version)
}

// moduleComponent is the component of one dependency; a replaced module
// is its replacement, with the replaced path and version as properties.
func moduleComponent(m *debug.Module) (cdxComponent, error) {
	path, version, sum := m.Path, m.Version, m.Sum
	var props []cdxProperty
	if r := m.Replace; r != nil {
		props = append(props, cdxProperty{"nic_exporter:go:replaces", m.Path + "@" + m.Version})
		path, version, sum = r.Path, r.Version, r.Sum
	}
	c := cdxComponent{
		Type:       "library",
		BOMRef:     goPURL(path, version),
		Name:       path,
		Version:    version,
		PURL:       goPURL(path, version),
		Properties: props,
	}
	if sum != "" {
		// go.sum's h1: is the base64 SHA-256 of the module's file
		// tree (golang.org/x/mod/sumdb/dirhash); CycloneDX wants hex.
		b64, ok := strings.CutPrefix(sum, "h1:")
		if !ok {
			return c, fmt.Errorf("%s@%s: hash %q has no h1: prefix", path, version, sum)
		}
		raw, err := base64.StdEncoding.DecodeString(b64)
		if err != nil || len(raw) != 32 {
			return c, fmt.Errorf("%s@%s: hash %q: %v", path, version, sum, err)
		}
		c.Hashes = []cdxHash{{"SHA-256", hex.EncodeToString(raw)}}
	}
	return c, nil
}

// buildSBOM returns the SBOM of the release binary bin; its platform is
// among the build settings (GOOS, GOARCH).
func buildSBOM(cfg Config, bin string) ([]byte, error) {
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	goVersion := strings.TrimPrefix(bi.GoVersion, "go")
	mainRef := goPURL(bi.Main.Path, "v"+cfg.Version)
	main := cdxComponent{
		Type:    "application",
		BOMRef:  mainRef,
		Name:    bi.Main.Path,
		Version: cfg.Version,
		PURL:    mainRef,
		Properties: []cdxProperty{
			{"nic_exporter:revision", cfg.Revision},
			{"nic_exporter:go:version", bi.GoVersion},
			{"nic_exporter:go:package", bi.Path},
		},
	}
	var lic cdxLicense
	lic.License.ID = "Apache-2.0"
	main.Licenses = []cdxLicense{lic}
	for _, s := range bi.Settings {
		main.Properties = append(main.Properties, cdxProperty{"nic_exporter:go:build:" + s.Key, s.Value})
	}
	std := cdxComponent{
		Type:    "library",
		BOMRef:  goPURL("stdlib", "v"+goVersion),
		Name:    "stdlib",
		Version: "v" + goVersion,
		PURL:    goPURL("stdlib", "v"+goVersion),
	}
	components := []cdxComponent{std}
	for _, m := range bi.Deps {
		c, err := moduleComponent(m)
		if err != nil {
			return nil, err
		}
		components = append(components, c)
	}
	dep := cdxDependency{Ref: mainRef, DependsOn: []string{}}
	for _, c := range components {
		dep.DependsOn = append(dep.DependsOn, c.BOMRef)
	}
	bom := cdxBOM{
		BOMFormat:   "CycloneDX",
		SpecVersion: "1.5",
		Version:     1,
		Metadata: cdxMetadata{
			Timestamp: cfg.Epoch.Format("2006-01-02T15:04:05Z"),
			Tools: cdxTools{Components: []cdxComponent{{
				Type:    "application",
				Name:    "nic_exporter tools/release",
				Version: cfg.Version,
			}}},
			Component: main,
		},
		Components:   components,
		Dependencies: []cdxDependency{dep},
	}
	out, err := json.MarshalIndent(bom, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// writeSBOM writes the SBOM of bin to file.
func writeSBOM(cfg Config, bin, file string) error {
	data, err := buildSBOM(cfg, bin)
	if err != nil {
		return err
	}
	return os.WriteFile(file, data, 0o644)
}
