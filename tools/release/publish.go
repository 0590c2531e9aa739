package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// Publishing pushes a release that `make release` wrote into dist/ to an
// OCI registry: the multi-arch image with skopeo, byte for byte (the
// digest in the registry is the digest of the image index in the OCI
// archive), and the Helm chart as an OCI artifact with the pinned Helm
// (tools/helm), packaged at the release version so that its default
// image is the one pushed with it.

// defaultRegistry is where the project publishes: the chart's default
// image.repository is defaultRegistry/nic_exporter.
const defaultRegistry = "ghcr.io/nic-exporter"

// chartDir is the Helm chart, relative to the repository root.
const chartDir = "deploy/helm/nic-exporter"

// imageRef is the reference make publish pushes the image to.
func imageRef(registry, version string) string {
	return registry + "/nic_exporter:" + version
}

// chartRepo is the OCI repository make publish pushes the chart into;
// the chart is chartRepo/nic-exporter:version.
func chartRepo(registry string) string {
	return "oci://" + registry + "/charts"
}

// PublishConfig says what to publish where.
type PublishConfig struct {
	// Root is the repository root, Dist the output of make release.
	Root, Dist string
	// Registry is a registry host with an optional path, such as
	// ghcr.io/nic-exporter, without a scheme.
	Registry string
	// Version is the release version in Dist, without a leading v.
	Version string
	// PlainHTTP talks HTTP to the registry, without TLS: for a registry
	// on loopback only (the tests').
	PlainHTTP bool
	// Stdout receives the published references; Log progress lines.
	Stdout io.Writer
	Log    func(format string, args ...any)
}

// Published is what Publish pushed.
type Published struct {
	Image, ImageDigest string
	Chart, ChartDigest string
}

var (
	registryRE = regexp.MustCompile(`^[a-z0-9.-]+(:[0-9]+)?(/[a-z0-9._-]+)*$`)
	digestRE   = regexp.MustCompile(`(?m)^Digest: (sha256:[0-9a-f]{64})$`)
)

// Publish checks dist's checksums, pushes the image and the chart, and
// prints their references with digests.
func Publish(pc PublishConfig) (Published, error) {
	var p Published
	logf := func(format string, args ...any) {
		if pc.Log != nil {
			pc.Log(format, args...)
		}
	}
	if !registryRE.MatchString(pc.Registry) {
		return p, fmt.Errorf("registry %q: want a host[:port][/path] without scheme, such as %s", pc.Registry, defaultRegistry)
	}
	if pc.Version == "" || strings.HasPrefix(pc.Version, "v") {
		return p, fmt.Errorf("version %q: want the version make release wrote, without the tag's leading v (v0.1.0 is 0.1.0)", pc.Version)
	}
	archive := filepath.Join(pc.Dist, imageName(pc.Version))
	logf("check %s", filepath.Join(pc.Dist, ChecksumsFile))
	if err := verifyChecksums(pc.Dist, imageName(pc.Version)); err != nil {
		return p, err
	}
	digest, err := archiveIndexDigest(archive)
	if err != nil {
		return p, err
	}

	skopeo := []string{"copy", "--all", "--preserve-digests", "--retry-times", "3"}
	if pc.PlainHTTP {
		skopeo = append(skopeo, "--dest-tls-verify=false")
	}
	work, err := os.MkdirTemp("", "nic_exporter-publish-")
	if err != nil {
		return p, err
	}
	defer os.RemoveAll(work)
	digestFile := filepath.Join(work, "digest")
	p.Image = imageRef(pc.Registry, pc.Version)
	logf("push %s to %s", archive, p.Image)
	skopeo = append(skopeo, "--digestfile", digestFile, "oci-archive:"+archive+":"+pc.Version, "docker://"+p.Image)
	if out, err := exec.Command("skopeo", skopeo...).CombinedOutput(); err != nil {
		return p, fmt.Errorf("skopeo %s: %w\n%s", strings.Join(skopeo, " "), err, out)
	}
	pushed, err := os.ReadFile(digestFile)
	if err != nil {
		return p, err
	}
	if p.ImageDigest = strings.TrimSpace(string(pushed)); p.ImageDigest != digest {
		return p, fmt.Errorf("the registry has %s as %s, the release's image index is %s", p.Image, p.ImageDigest, digest)
	}

	chart, err := packageChart(pc, work)
	if err != nil {
		return p, err
	}
	args := []string{"push", chart, chartRepo(pc.Registry)}
	if pc.PlainHTTP {
		args = append(args, "--plain-http")
	}
	p.Chart = strings.TrimPrefix(chartRepo(pc.Registry), "oci://") + "/nic-exporter:" + pc.Version
	logf("push %s to %s", filepath.Base(chart), p.Chart)
	out, err := runHelm(pc.Root, args...)
	if err != nil {
		return p, err
	}
	m := digestRE.FindSubmatch(out)
	if m == nil {
		return p, fmt.Errorf("helm push printed no digest:\n%s", out)
	}
	p.ChartDigest = string(m[1])
	if pc.Stdout != nil {
		fmt.Fprintf(pc.Stdout, "image %s@%s\nchart %s@%s\n", p.Image, p.ImageDigest, p.Chart, p.ChartDigest)
	}
	return p, nil
}

// verifyChecksums checks every file sha256sums.txt of dist lists, as
// sha256sum -c does, and that it lists need.
func verifyChecksums(dist, need string) error {
	data, err := os.ReadFile(filepath.Join(dist, ChecksumsFile))
	if err != nil {
		return fmt.Errorf("%w (run make release first)", err)
	}
	listed := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok || name != filepath.Base(name) {
			return fmt.Errorf("%s: bad line %q", ChecksumsFile, sc.Text())
		}
		got, err := fileSHA256(filepath.Join(dist, name))
		if err != nil {
			return err
		}
		if got != sum {
			return fmt.Errorf("%s: sha256 %s, %s says %s", name, got, ChecksumsFile, sum)
		}
		listed = listed || name == need
	}
	if !listed {
		return fmt.Errorf("%s does not list %s: is %s the version make release wrote?", ChecksumsFile, need, need)
	}
	return sc.Err()
}

// archiveIndexDigest returns the digest of the image index that the OCI
// layout tarball's index.json names: the digest of the multi-arch image.
func archiveIndexDigest(archive string) (string, error) {
	f, err := os.Open(archive)
	if err != nil {
		return "", err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return "", fmt.Errorf("%s: no index.json", archive)
		}
		if err != nil {
			return "", fmt.Errorf("%s: %w", archive, err)
		}
		if hdr.Name != "index.json" {
			continue
		}
		var idx struct {
			Manifests []struct{ Digest string }
		}
		if err := json.NewDecoder(tr).Decode(&idx); err != nil {
			return "", fmt.Errorf("%s: index.json: %w", archive, err)
		}
		if len(idx.Manifests) != 1 {
			return "", fmt.Errorf("%s: index.json names %d manifests, want 1", archive, len(idx.Manifests))
		}
		return idx.Manifests[0].Digest, nil
	}
}

// packageChart packages the chart at the release version into dir, with
// the image repository of the registry, and returns the package's path:
// the published chart's defaults name the image published with it
// (registry/nic_exporter:version).
func packageChart(pc PublishConfig, dir string) (string, error) {
	src := filepath.Join(pc.Root, chartDir)
	dst := filepath.Join(dir, "nic-exporter")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		return "", err
	}
	values := filepath.Join(dst, "values.yaml")
	data, err := os.ReadFile(values)
	if err != nil {
		return "", err
	}
	old := "\n  repository: " + defaultRegistry + "/nic_exporter\n"
	if n := bytes.Count(data, []byte(old)); n != 1 {
		return "", fmt.Errorf("%s/values.yaml has %d lines %q, want 1", chartDir, n, strings.TrimSpace(old))
	}
	data = bytes.Replace(data, []byte(old), []byte("\n  repository: "+pc.Registry+"/nic_exporter\n"), 1)
	if err := os.WriteFile(values, data, 0o644); err != nil {
		return "", err
	}
	if _, err := runHelm(pc.Root, "package", dst, "--version", pc.Version, "--app-version", pc.Version, "--destination", dir); err != nil {
		return "", err
	}
	return filepath.Join(dir, "nic-exporter-"+pc.Version+".tgz"), nil
}

// runHelm runs the Helm pinned in tools/helm/go.mod and returns its
// combined output.
func runHelm(root string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", append([]string{"tool", "-modfile=" + filepath.Join(root, "tools/helm/go.mod"), "helm"}, args...)...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return out, nil
}

// publishMain is `release publish`: make publish.
func publishMain(args []string) {
	fs := flag.NewFlagSet("publish", flag.ExitOnError)
	root := fs.String("root", ".", "repository root")
	dist := fs.String("dist", "dist", "the output directory of make release")
	registry := fs.String("registry", "", "registry host and path to push to, such as "+defaultRegistry)
	version := fs.String("version", "", "release version to push, without a leading v (default: from git describe, as make release)")
	plainHTTP := fs.Bool("plain-http", false, "talk HTTP without TLS to the registry (a registry on loopback)")
	fs.Parse(args)
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			fatal(err)
		}
		return a
	}
	pc := PublishConfig{
		Root:      abs(*root),
		Dist:      abs(*dist),
		Registry:  *registry,
		Version:   *version,
		PlainHTTP: *plainHTTP,
		Stdout:    os.Stdout,
		Log:       func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) },
	}
	if pc.Version == "" {
		cfg, err := ConfigFromGit(pc.Root, "")
		if err != nil {
			fatal(err)
		}
		pc.Version = cfg.Version
	}
	if _, err := Publish(pc); err != nil {
		fatal(err)
	}
}
