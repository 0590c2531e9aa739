package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's layout. The Helm chart and the Kubernetes manifests rely on
// the user and the binary's path; the Dockerfile builds the same.
const (
	imageBinary = "/bin/nic_exporter"
	imageUser   = "65534:65534"
	// imagePort is the exporter's default --web.listen-address port.
	imagePort = "21180/tcp"
	// imageCABundle is where Go's crypto/x509 looks first on Linux.
	imageCABundle = "/etc/ssl/certs/ca-certificates.crt"
	// caCertificatesDir holds the certificates of Debian's
	// ca-certificates package, which the image's bundle is made of:
	// update-ca-certificates' /etc/ssl/certs bundle would also carry the
	// build machine's local CAs.
	caCertificatesDir = "/usr/share/ca-certificates/mozilla"
	imageSource       = "https://github.com/nic-exporter/nic_exporter"
)

// The image's /etc/passwd and /etc/group: root, which owns the files, and
// nobody, the user it runs as.
const (
	imagePasswd = "root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n"
	imageGroup  = "root:x:0:\nnogroup:x:65534:\n"
)

// imageName is the file name of the OCI layout tarball.
func imageName(version string) string {
	return fmt.Sprintf("nic_exporter-%s.oci.tar", version)
}

// caBundle concatenates the certificates of the ca-certificates package
// in name order and returns the bundle and the package's version.
func caBundle() ([]byte, string, error) {
	paths, err := filepath.Glob(filepath.Join(caCertificatesDir, "*.crt"))
	if err != nil {
		return nil, "", err
	}
	if len(paths) == 0 {
		return nil, "", fmt.Errorf("no certificates in %s: install the ca-certificates package", caCertificatesDir)
	}
	sort.Strings(paths)
	var b bytes.Buffer
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, "", err
		}
		b.Write(data)
		if len(data) > 0 && data[len(data)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	out, err := exec.Command("dpkg-query", "-W", "-f=${Version}", "ca-certificates").Output()
	if err != nil {
		return nil, "", fmt.Errorf("dpkg-query ca-certificates: %w", err)
	}
	return b.Bytes(), strings.TrimSpace(string(out)), nil
}

// imageLabels are the OCI annotations of the image config, as
// org.opencontainers.image.* names them.
func imageLabels(cfg Config, caVersion string) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":         "nic_exporter",
		"org.opencontainers.image.description":   "Prometheus exporter for NIC health: mlx5, InfiniBand, ENA, VMA",
		"org.opencontainers.image.version":       cfg.Version,
		"org.opencontainers.image.revision":      cfg.Revision,
		"org.opencontainers.image.source":        imageSource,
		"org.opencontainers.image.licenses":      "Apache-2.0",
		"org.opencontainers.image.created":       cfg.Epoch.Format("2006-01-02T15:04:05Z"),
		"io.github.nic-exporter.ca-certificates": caVersion,
	}
}

// platformImage builds the image of one architecture: scratch plus one
// layer with the CA bundle, /etc/passwd and /etc/group, and the binary.
func platformImage(cfg Config, arch, bin string, ca []byte, caVersion string) (v1.Image, error) {
	var layerTar bytes.Buffer
	err := writeTar(&layerTar, []entry{
		{Name: imageBinary, Mode: 0o755, Src: bin},
		{Name: imageCABundle, Mode: 0o644, Data: ca},
		{Name: "/etc/passwd", Mode: 0o644, Data: []byte(imagePasswd)},
		{Name: "/etc/group", Mode: 0o644, Data: []byte(imageGroup)},
	}, cfg.Epoch)
	if err != nil {
		return nil, err
	}
	data := layerTar.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: cfg.Epoch}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{Created: created, CreatedBy: "make release", Comment: "nic_exporter " + cfg.Version},
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture = arch
	cf.OS = "linux"
	cf.Created = created
	cf.Config = v1.Config{
		User:         imageUser,
		Entrypoint:   []string{imageBinary},
		ExposedPorts: map[string]struct{}{imagePort: {}},
		Labels:       imageLabels(cfg, caVersion),
		Env:          []string{"PATH=/bin"},
		WorkingDir:   "/",
	}
	return mutate.ConfigFile(img, cf)
}

// ociIndex and ociDescriptor are the image index as the OCI image-spec's
// Go types (github.com/opencontainers/image-spec) order its fields, the
// types skopeo re-serializes an index with before it pushes it: an index
// written in that form comes out of skopeo byte for byte, so that
// `skopeo copy --all --preserve-digests` (make publish) pushes the
// release's own digest. go-containerregistry's serialization orders size
// before digest and gives each image's descriptor an artifactType (its
// config's media type, which the spec reserves for artifacts), and skopeo
// refuses to preserve its digest.
type ociIndex struct {
	SchemaVersion int             `json:"schemaVersion"`
	MediaType     types.MediaType `json:"mediaType"`
	Manifests     []ociDescriptor `json:"manifests"`
}

type ociDescriptor struct {
	MediaType types.MediaType `json:"mediaType"`
	Digest    v1.Hash         `json:"digest"`
	Size      int64           `json:"size"`
	Platform  struct {
		Architecture string `json:"architecture"`
		OS           string `json:"os"`
	} `json:"platform"`
}

// canonicalIndex returns idx with its manifest serialized as ociIndex.
func canonicalIndex(idx v1.ImageIndex) (v1.ImageIndex, error) {
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	out := ociIndex{SchemaVersion: 2, MediaType: types.OCIImageIndex}
	for _, d := range im.Manifests {
		if d.Platform == nil || len(d.Annotations) != 0 || len(d.URLs) != 0 || d.Data != nil {
			return nil, fmt.Errorf("index descriptor %s: want a platform and no annotations, URLs or data", d.Digest)
		}
		od := ociDescriptor{MediaType: d.MediaType, Digest: d.Digest, Size: d.Size}
		od.Platform.Architecture, od.Platform.OS = d.Platform.Architecture, d.Platform.OS
		out.Manifests = append(out.Manifests, od)
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return rawIndex{base: idx, raw: raw}, nil
}

// rawIndex is an image index whose manifest is raw; its images are
// base's.
type rawIndex struct {
	base v1.ImageIndex
	raw  []byte
}

func (r rawIndex) MediaType() (types.MediaType, error)         { return types.OCIImageIndex, nil }
func (r rawIndex) Image(h v1.Hash) (v1.Image, error)           { return r.base.Image(h) }
func (r rawIndex) ImageIndex(h v1.Hash) (v1.ImageIndex, error) { return r.base.ImageIndex(h) }

func (r rawIndex) RawManifest() ([]byte, error) { return r.raw, nil }
func (r rawIndex) Size() (int64, error)         { return int64(len(r.raw)), nil }
func (r rawIndex) Digest() (v1.Hash, error) {
	h, _, err := v1.SHA256(bytes.NewReader(r.raw))
	return h, err
}
func (r rawIndex) IndexManifest() (*v1.IndexManifest, error) {
	return v1.ParseIndexManifest(bytes.NewReader(r.raw))
}

// writeImage writes the multi-arch image as an OCI layout tarball: its
// index.json names one image index, tagged with the version
// (org.opencontainers.image.ref.name), whose manifests are the images of
// each architecture. `skopeo copy oci-archive:FILE docker://...` pushes
// it, `podman load -i FILE` loads the image of the host's architecture.
func writeImage(cfg Config, bins map[string]string, file string) error {
	ca, caVersion, err := caBundle()
	if err != nil {
		return err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, arch := range Arches {
		img, err := platformImage(cfg, arch, bins[arch], ca, caVersion)
		if err != nil {
			return fmt.Errorf("%s: %w", arch, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add: img,
			Descriptor: v1.Descriptor{
				MediaType: types.OCIManifestSchema1,
				Platform:  &v1.Platform{OS: "linux", Architecture: arch},
			},
		})
	}
	idx, err = canonicalIndex(idx)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "nic_exporter-oci-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": cfg.Version,
	})); err != nil {
		return err
	}
	entries, err := dirEntries(dir, "")
	if err != nil {
		return err
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if err := writeTar(f, entries, cfg.Epoch); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
