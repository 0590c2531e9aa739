package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"go.yaml.in/yaml/v3"
)

// hangGuard bounds a wait that ends as soon as its condition holds; it
// only keeps a broken registry from hanging the test, on a machine that
// may be busy with other work.
const hangGuard = 3 * time.Minute

// registryConfig is the docker-registry configuration of the tests: the
// filesystem storage in a temporary directory, HTTP on a loopback port
// the kernel picks (the registry logs it), no TLS, no upload purging.
const registryConfig = `version: 0.1
log:
  level: info
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: 127.0.0.1:0
  secret: nic-exporter-test
`

// startRegistry runs the Distribution registry (Debian's docker-registry)
// on loopback until the test ends and returns its host:port.
func startRegistry(t *testing.T) string {
	t.Helper()
	bin := lookPath(t, "docker-registry")
	dir := t.TempDir()
	config := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(config, fmt.Appendf(nil, registryConfig, filepath.Join(dir, "storage")), 0o644); err != nil {
		t.Fatal(err)
	}
	var log syncBuffer
	cmd := exec.Command(bin, "serve", config)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("docker-registry log:\n%s", log.String())
		}
	})
	if out, err := exec.Command(bin, "--version").CombinedOutput(); err == nil {
		t.Logf("%s", bytes.TrimSpace(out))
	}

	listening := regexp.MustCompile(`msg="listening on (127\.0\.0\.1:[0-9]+)"`)
	deadline := time.Now().Add(hangGuard)
	for {
		if m := listening.FindStringSubmatch(log.String()); m != nil {
			addr := m[1]
			waitRegistry(t, addr, exited, deadline)
			return addr
		}
		select {
		case <-exited:
			t.Fatalf("docker-registry exited: %v\n%s", cmd.ProcessState, log.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("docker-registry did not say where it listens within %v:\n%s", hangGuard, log.String())
		}
	}
}

// waitRegistry waits until the registry at addr answers /v2/ with 200.
func waitRegistry(t *testing.T, addr string, exited <-chan struct{}, deadline time.Time) {
	t.Helper()
	for {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/v2/", nil)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-exited:
			t.Fatal("docker-registry exited")
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("http://%s/v2/ not ready within %v: %v", addr, hangGuard, err)
		}
	}
}

// syncBuffer is a bytes.Buffer a process writes to while the test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// helmEnv is an environment for Helm with its cache, config and data in a
// temporary directory, so that the tests neither read nor write the
// user's registry logins and repositories.
func helmEnv(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	return append(os.Environ(), "HELM_CACHE_HOME="+dir+"/cache", "HELM_CONFIG_HOME="+dir+"/config", "HELM_DATA_HOME="+dir+"/data")
}

// helmTool returns the pinned Helm's executable (tools/helm/go.mod), built
// into the Go build cache by go tool -n like the deploy tests do.
var helmTool = sync.OnceValues(func() (string, error) {
	out, err := exec.Command("go", "tool", "-n", "-modfile="+filepath.Join(release.cfg.Root, "tools/helm/go.mod"), "helm").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go tool -n helm: %w\n%s", err, out)
	}
	return strings.TrimSpace(string(out)), nil
})

// runHelmTest runs the pinned Helm with env and returns its standard
// output, failing the test when it fails.
func runHelmTest(t *testing.T, env []string, args ...string) []byte {
	t.Helper()
	bin, err := helmTool()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.Bytes())
	}
	return append(out, stderr.Bytes()...)
}

// templateImage renders chart with its default values and returns the
// one image its DaemonSet names.
func templateImage(t *testing.T, env []string, chart string) string {
	t.Helper()
	out := runHelmTest(t, env, "template", "nic-exporter", chart, "--namespace", "monitoring")
	m := regexp.MustCompile(`(?m)^\s+image: "?([^"\s]+)"?\s*$`).FindAllSubmatch(out, -1)
	if len(m) != 1 {
		t.Fatalf("helm template %s names %d images, want 1:\n%s", chart, len(m), out)
	}
	return string(m[0][1])
}

// TestPublish runs make publish against a real registry on loopback, then
// pulls everything back: the image by the digest of the release's image
// index, whose linux/amd64 binary runs and prints the version, and the
// chart, whose defaults name the image just pushed (pulled again through
// that reference, same digest).
func TestPublish(t *testing.T) {
	skopeo := lookPath(t, "skopeo")
	makeCmd := lookPath(t, "make")
	addr := startRegistry(t)
	registry := addr + "/nic-exporter"
	version := release.cfg.Version
	want, err := archiveIndexDigest(artifact(t, imageName(version)))
	if err != nil {
		t.Fatal(err)
	}
	env := helmEnv(t)

	cmd := exec.Command(makeCmd, "--no-print-directory", "-C", release.cfg.Root, "publish",
		"REGISTRY="+registry, "VERSION="+version, "DIST="+release.dir, "PUBLISH_FLAGS=-plain-http")
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("make publish: %v\n%s%s", err, out, stderr.Bytes())
	}
	t.Logf("make publish:\n%s", out)
	image := imageRef(registry, version)
	chartRef := addr + "/nic-exporter/charts/nic-exporter:" + version
	m := regexp.MustCompile(`(?m)^image (\S+)@(sha256:[0-9a-f]{64})\nchart (\S+)@(sha256:[0-9a-f]{64})\n$`).FindSubmatch(out)
	if m == nil || string(m[1]) != image || string(m[2]) != want || string(m[3]) != chartRef {
		t.Fatalf("make publish printed\n%s\nwant image %s@%s and chart %s@sha256:...", out, image, want, chartRef)
	}
	chartDigest := string(m[4])

	// The image, by digest, copied back into an OCI layout.
	pulled := filepath.Join(t.TempDir(), "pulled")
	byDigest := registry + "/nic_exporter@" + want
	if out, err := exec.Command(skopeo, "copy", "--quiet", "--all", "--preserve-digests", "--src-tls-verify=false",
		"docker://"+byDigest, "oci:"+pulled+":"+version).CombinedOutput(); err != nil {
		t.Fatalf("skopeo copy docker://%s: %v\n%s", byDigest, err, out)
	}
	t.Logf("pulled %s", byDigest)
	idx, err := layout.ImageIndexFromPath(pulled)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Digest.String() != want {
		t.Fatalf("the pulled layout names %+v, want the image index %s", im.Manifests, want)
	}
	runPulledBinary(t, idx, im.Manifests[0].Digest, version)

	// The chart: pulled, rendered with its defaults, and the image it
	// names is the one pushed.
	dir := t.TempDir()
	pullOut := runHelmTest(t, env, "pull", "oci://"+addr+"/nic-exporter/charts/nic-exporter", "--version", version,
		"--plain-http", "--destination", dir)
	if !strings.Contains(string(pullOut), "Digest: "+chartDigest) {
		t.Errorf("helm pull printed\n%s\nwant the pushed chart's digest %s", pullOut, chartDigest)
	}
	tgz := filepath.Join(dir, "nic-exporter-"+version+".tgz")
	var meta struct {
		Version    string `yaml:"version"`
		AppVersion string `yaml:"appVersion"`
	}
	if err := yaml.Unmarshal(runHelmTest(t, env, "show", "chart", tgz), &meta); err != nil {
		t.Fatal(err)
	}
	if meta.Version != version || meta.AppVersion != version {
		t.Errorf("pulled chart version %q appVersion %q, want %q", meta.Version, meta.AppVersion, version)
	}
	named := templateImage(t, env, tgz)
	if named != image {
		t.Fatalf("the published chart's defaults name %s, want %s", named, image)
	}
	raw, err := exec.Command(skopeo, "inspect", "--raw", "--tls-verify=false", "docker://"+named).Output()
	if err != nil {
		t.Fatalf("skopeo inspect --raw docker://%s: %v", named, err)
	}
	if sum := sha256.Sum256(raw); "sha256:"+hex.EncodeToString(sum[:]) != want {
		t.Errorf("%s is sha256:%x in the registry, want %s", named, sum, want)
	}
}

// runPulledBinary finds the linux/amd64 image of the index digest in idx,
// unpacks its binary from its layer and runs --version (on an x86_64
// machine; elsewhere it checks the ELF header only).
func runPulledBinary(t *testing.T, idx v1.ImageIndex, digest v1.Hash, version string) {
	t.Helper()
	multi, err := idx.ImageIndex(digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := multi.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var img v1.Image
	for _, d := range im.Manifests {
		if d.Platform != nil && d.Platform.OS == "linux" && d.Platform.Architecture == "amd64" {
			if img, err = multi.Image(d.Digest); err != nil {
				t.Fatal(err)
			}
		}
	}
	if img == nil {
		t.Fatalf("no linux/amd64 image in the pulled index: %+v", im.Manifests)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("%d layers (%v), want 1", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var bin []byte
	for _, e := range readTar(t, rc) {
		if e.hdr.Name == strings.TrimPrefix(imageBinary, "/") {
			bin = e.data
		}
	}
	if bin == nil {
		t.Fatalf("no %s in the pulled layer", imageBinary)
	}
	checkELF(t, imageBinary, bin, "amd64")
	if out, err := exec.Command("uname", "-m").Output(); err != nil || strings.TrimSpace(string(out)) != "x86_64" {
		t.Logf("not running the pulled amd64 binary on this machine (uname -m: %s %v)", out, err)
		return
	}
	p := filepath.Join(t.TempDir(), "nic_exporter")
	if err := os.WriteFile(p, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(p, "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "version "+version+" ") {
		t.Fatalf("the pulled image's nic_exporter --version: %v\n%s", err, out)
	}
	t.Logf("the pulled image's nic_exporter --version:\n%s", out)
}

// chartAppVersion reads the appVersion of the repository's chart.
func chartAppVersion(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(release.cfg.Root, chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var chart struct {
		AppVersion string `yaml:"appVersion"`
	}
	if err := yaml.Unmarshal(data, &chart); err != nil {
		t.Fatal(err)
	}
	return chart.AppVersion
}

// TestChartDefaultImageIsPublished checks that the repository's chart,
// rendered with its defaults, names an image that make publish pushes:
// REGISTRY/nic_exporter:VERSION for the project's registry, at the
// version make release writes for the tag v<appVersion>. On a checkout
// whose HEAD is a release tag, appVersion must be that very release.
func TestChartDefaultImageIsPublished(t *testing.T) {
	git := lookPath(t, "git")
	appVersion := chartAppVersion(t)
	named := templateImage(t, helmEnv(t), filepath.Join(release.cfg.Root, chartDir))
	if want := imageRef(defaultRegistry, appVersion); named != want {
		t.Errorf("helm template with the defaults names %s; make publish REGISTRY=%s VERSION=%s pushes %s",
			named, defaultRegistry, appVersion, want)
	}

	// make release's version of the tag v<appVersion>, in a scratch
	// repository.
	repo := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q"},
		{"-c", "user.name=test", "-c", "user.email=test@example.invalid", "-c", "commit.gpgsign=false", "commit", "-q", "--allow-empty", "-m", "release"},
		{"tag", "v" + appVersion},
	} {
		if out, err := exec.Command(git, append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	cfg, err := ConfigFromGit(repo, "")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Version != appVersion {
		t.Errorf("make release on the tag v%s writes the version %s, the chart's appVersion is %s", appVersion, cfg.Version, appVersion)
	}

	if tag, err := exec.Command(git, "-C", release.cfg.Root, "describe", "--exact-match", "--tags", "--match", "v[0-9]*", "HEAD").Output(); err == nil {
		if appVersion != release.cfg.Version {
			t.Errorf("HEAD is the release tag %s, which make release versions %s, but the chart's appVersion is %s: bump deploy/helm/nic-exporter/Chart.yaml (RELEASING.md)",
				bytes.TrimSpace(tag), release.cfg.Version, appVersion)
		}
	}
}
