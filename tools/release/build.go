package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// versionPackage is the package
// whose variables the linker stamps with the version.
const versionPackage = "github.com/prometheus/common/version"

// Build writes every artifact of cfg into cfg.Out and sha256sums.txt over
// them.
func Build(cfg Config) error {
	if err := os.RemoveAll(cfg.Out); err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return err
	}
	// Binaries go to a work directory that is not an artifact.
	work, err := os.MkdirTemp("", "nic_exporter-release-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	bins := map[string]string{}
	for _, arch := range Arches {
		bin := filepath.Join(work, "linux-"+arch, "nic_exporter")
		cfg.logf("build %s", bin)
		if err := buildBinary(cfg, arch, bin); err != nil {
			return err
		}
		bins[arch] = bin
		tgz := filepath.Join(cfg.Out, tarballName(cfg.Version, arch))
		cfg.logf("write %s", tgz)
		if err := writeTarball(cfg, arch, bin, tgz); err != nil {
			return fmt.Errorf("tarball %s: %w", arch, err)
		}
		sbom := filepath.Join(cfg.Out, sbomName(cfg.Version, arch))
		cfg.logf("write %s", sbom)
		if err := writeSBOM(cfg, bin, sbom); err != nil {
			return fmt.Errorf("SBOM %s: %w", arch, err)
		}
		for _, format := range []string{"deb", "rpm"} {
			cfg.logf("write %s %s", format, arch)
			if _, err := writePackage(cfg, format, arch, bin); err != nil {
				return fmt.Errorf("%s %s: %w", format, arch, err)
			}
		}
	}
	img := filepath.Join(cfg.Out, imageName(cfg.Version))
	cfg.logf("write %s", img)
	if err := writeImage(cfg, bins, img); err != nil {
		return fmt.Errorf("image: %w", err)
	}
	return writeChecksums(cfg.Out)
}

// buildBinary builds the static exporter for linux/arch with the version
// stamped, reproducibly: -trimpath drops the build machine's paths,
// -buildid= the linker's build ID, -buildvcs=false the checkout state (the
// revision is stamped instead), and the build date is the epoch.
func buildBinary(cfg Config, arch, out string) error {
	ldflags := strings.Join([]string{
		"-s", "-w", "-buildid=",
		"-X", versionPackage + ".Version=" + cfg.Version,
		"-X", versionPackage + ".Revision=" + cfg.Revision,
		"-X", versionPackage + ".Branch=" + cfg.Branch,
		"-X", versionPackage + ".BuildUser=release",
		"-X", versionPackage + ".BuildDate=" + cfg.Epoch.Format("20060102-15:04:05"),
	}, " ")
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", out, "./cmd/nic_exporter")
	cmd.Dir = cfg.Root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch, "GOFLAGS=")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build linux/%s: %w", arch, err)
	}
	return nil
}

// ChecksumsFile lists the SHA-256 of every other file of the output
// directory, in sha256sum's format, sorted by name.
const ChecksumsFile = "sha256sums.txt"

func writeChecksums(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() && e.Name() != ChecksumsFile {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	var b strings.Builder
	for _, name := range names {
		sum, err := fileSHA256(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s  %s\n", sum, name)
	}
	return os.WriteFile(filepath.Join(dir, ChecksumsFile), []byte(b.String()), 0o644)
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
