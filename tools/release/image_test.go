package main

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// openImage unpacks the OCI layout tarball into a temporary directory
// and returns the image index its index.json names, checking that
// index.json holds exactly that index, tagged with the version.
func openImage(t *testing.T) v1.ImageIndex {
	t.Helper()
	f, err := os.Open(artifact(t, imageName(release.cfg.Version)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	entries := readTar(t, f)
	checkReproducibleTar(t, "image", entries, release.cfg.Epoch)
	dir := t.TempDir()
	for _, e := range entries {
		p := filepath.Join(dir, filepath.FromSlash(e.hdr.Name))
		if !strings.HasPrefix(p, dir+string(filepath.Separator)) {
			t.Fatalf("member %q outside the archive", e.hdr.Name)
		}
		switch e.hdr.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o755)
		case tar.TypeReg:
			err = os.WriteFile(p, e.data, 0o644)
		default:
			t.Fatalf("member %s of type %c", e.hdr.Name, e.hdr.Typeflag)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	im, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 {
		t.Fatalf("index.json has %d manifests, want 1", len(im.Manifests))
	}
	d := im.Manifests[0]
	if d.MediaType != types.OCIImageIndex {
		t.Errorf("index.json names a %s, want an OCI image index", d.MediaType)
	}
	if got := d.Annotations["org.opencontainers.image.ref.name"]; got != release.cfg.Version {
		t.Errorf("ref.name %q, want %q", got, release.cfg.Version)
	}
	idx, err := top.ImageIndex(d.Digest)
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

// TestImage checks the multi-arch image: one image per architecture with
// the platform in the index, a config that runs the binary as nobody with
// the labels, and a single layer with the binary, CA bundle and user
// database.
func TestImage(t *testing.T) {
	idx := openImage(t)
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if im.MediaType != types.OCIImageIndex {
		t.Errorf("index media type %s", im.MediaType)
	}
	var platforms []string
	for _, d := range im.Manifests {
		if d.Platform == nil {
			t.Fatalf("manifest %s without platform", d.Digest)
		}
		platforms = append(platforms, d.Platform.String())
	}
	if got, want := strings.Join(platforms, " "), "linux/amd64 linux/arm64"; got != want {
		t.Fatalf("platforms %s, want %s", got, want)
	}
	for _, d := range im.Manifests {
		arch := d.Platform.Architecture
		t.Run(arch, func(t *testing.T) {
			img, err := idx.Image(d.Digest)
			if err != nil {
				t.Fatal(err)
			}
			if mt, err := img.MediaType(); err != nil || mt != types.OCIManifestSchema1 {
				t.Errorf("manifest media type %s (%v)", mt, err)
			}
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			checkImageConfig(t, cf, arch)
			layers, err := img.Layers()
			if err != nil {
				t.Fatal(err)
			}
			if len(layers) != 1 {
				t.Fatalf("%d layers, want 1", len(layers))
			}
			if mt, err := layers[0].MediaType(); err != nil || mt != types.OCILayer {
				t.Errorf("layer media type %s (%v)", mt, err)
			}
			rc, err := layers[0].Uncompressed()
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			checkImageLayer(t, rc, arch)
		})
	}
}

func checkImageConfig(t *testing.T, cf *v1.ConfigFile, arch string) {
	t.Helper()
	c := cf.Config
	if cf.OS != "linux" || cf.Architecture != arch {
		t.Errorf("platform %s/%s, want linux/%s", cf.OS, cf.Architecture, arch)
	}
	if c.User != "65534:65534" {
		t.Errorf("user %q, want 65534:65534 (nobody, not root)", c.User)
	}
	if strings.Join(c.Entrypoint, " ") != "/bin/nic_exporter" || len(c.Cmd) != 0 {
		t.Errorf("entrypoint %q cmd %q, want [/bin/nic_exporter] and none", c.Entrypoint, c.Cmd)
	}
	if fmt.Sprint(c.ExposedPorts) != "map[21180/tcp:{}]" {
		t.Errorf("exposed ports %v, want 21180/tcp", c.ExposedPorts)
	}
	if !cf.Created.Time.Equal(release.cfg.Epoch) {
		t.Errorf("created %v, want %v", cf.Created.Time, release.cfg.Epoch)
	}
	for label, want := range map[string]string{
		"org.opencontainers.image.title":    "nic_exporter",
		"org.opencontainers.image.version":  release.cfg.Version,
		"org.opencontainers.image.revision": release.cfg.Revision,
		"org.opencontainers.image.source":   "https://github.com/nic-exporter/nic_exporter",
		"org.opencontainers.image.licenses": "Apache-2.0",
		"org.opencontainers.image.created":  release.cfg.Epoch.Format("2006-01-02T15:04:05Z"),
	} {
		if got := c.Labels[label]; got != want {
			t.Errorf("label %s = %q, want %q", label, got, want)
		}
	}
	if c.Labels["io.github.nic-exporter.ca-certificates"] == "" {
		t.Error("no ca-certificates version label")
	}
}

// checkImageLayer checks the layer's members and, on amd64 machines,
// runs the amd64 binary from it.
func checkImageLayer(t *testing.T, r io.Reader, arch string) {
	t.Helper()
	entries := readTar(t, r)
	checkReproducibleTar(t, "layer", entries, release.cfg.Epoch)
	got := map[string]string{}
	var bin []byte
	for _, e := range entries {
		got[e.hdr.Name] = os.FileMode(e.hdr.Mode).String()
		switch e.hdr.Name {
		case "bin/nic_exporter":
			bin = e.data
			checkELF(t, e.hdr.Name, e.data, arch)
		case "etc/passwd":
			if !strings.Contains(string(e.data), "\nnobody:x:65534:65534:") {
				t.Errorf("etc/passwd has no nobody 65534:\n%s", e.data)
			}
		case "etc/ssl/certs/ca-certificates.crt":
			if n := strings.Count(string(e.data), "-----BEGIN CERTIFICATE-----"); n < 100 {
				t.Errorf("CA bundle has %d certificates", n)
			}
		}
	}
	want := map[string]string{
		"bin/":                              "-rwxr-xr-x",
		"bin/nic_exporter":                  "-rwxr-xr-x",
		"etc/":                              "-rwxr-xr-x",
		"etc/group":                         "-rw-r--r--",
		"etc/passwd":                        "-rw-r--r--",
		"etc/ssl/":                          "-rwxr-xr-x",
		"etc/ssl/certs/":                    "-rwxr-xr-x",
		"etc/ssl/certs/ca-certificates.crt": "-rw-r--r--",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("layer members\n%v\nwant\n%v", got, want)
	}
	if arch != "amd64" || bin == nil {
		return
	}
	if out, err := exec.Command("uname", "-m").Output(); err != nil || strings.TrimSpace(string(out)) != "x86_64" {
		t.Logf("not running the amd64 binary on this machine (uname -m: %s %v)", out, err)
		return
	}
	p := filepath.Join(t.TempDir(), "nic_exporter")
	if err := os.WriteFile(p, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(p, "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "version "+release.cfg.Version) {
		t.Errorf("the image's binary --version: %v\n%s", err, out)
	}
}

// TestImageSkopeo reads the OCI archive with skopeo, the tool the README
// pushes it with: skopeo must pick the image of each architecture from
// the index and copy the whole multi-arch image.
func TestImageSkopeo(t *testing.T) {
	skopeo := lookPath(t, "skopeo")
	ref := "oci-archive:" + artifact(t, imageName(release.cfg.Version))
	for _, arch := range Arches {
		out, err := exec.Command(skopeo, "inspect", "--override-os", "linux", "--override-arch", arch, ref).CombinedOutput()
		if err != nil {
			t.Fatalf("skopeo inspect %s: %v\n%s", arch, err, out)
		}
		var got struct {
			Architecture, Os string
			Labels           map[string]string
			Layers           []string
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("skopeo inspect: %v\n%s", err, out)
		}
		if got.Architecture != arch || got.Os != "linux" || len(got.Layers) != 1 ||
			got.Labels["org.opencontainers.image.version"] != release.cfg.Version {
			t.Errorf("skopeo inspect --override-arch %s:\n%s", arch, out)
		}
	}
	// --preserve-digests, as make publish pushes: skopeo re-serializes
	// the index and must come out with the release's bytes.
	dst := filepath.Join(t.TempDir(), "copy")
	out, err := exec.Command(skopeo, "copy", "--quiet", "--all", "--preserve-digests", ref, "oci:"+dst+":"+release.cfg.Version).CombinedOutput()
	if err != nil {
		t.Fatalf("skopeo copy --all --preserve-digests: %v\n%s", err, out)
	}
	idx, err := layout.ImageIndexFromPath(dst)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil || len(im.Manifests) != 1 || im.Manifests[0].MediaType != types.OCIImageIndex {
		t.Fatalf("skopeo's copy: %v %+v", err, im)
	}
	if want, err := archiveIndexDigest(artifact(t, imageName(release.cfg.Version))); err != nil || im.Manifests[0].Digest.String() != want {
		t.Errorf("skopeo's copy is the index %s, the release's %s (%v)", im.Manifests[0].Digest, want, err)
	}
}
