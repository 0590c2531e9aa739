package main

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"

	"github.com/goreleaser/nfpm/v2"
	"github.com/goreleaser/nfpm/v2/deb"
	"github.com/goreleaser/nfpm/v2/files"
	"github.com/goreleaser/nfpm/v2/rpm"
)

// Paths the packages install.
const (
	pkgBinary   = "/usr/bin/nic_exporter"
	pkgUnit     = "/usr/lib/systemd/system/nic_exporter.service"
	pkgSysusers = "/usr/lib/sysusers.d/nic_exporter.conf"
	pkgDebEnv   = "/etc/default/nic_exporter"
	pkgRPMEnv   = "/etc/sysconfig/nic_exporter"
	pkgDoc      = "/usr/share/doc/nic_exporter"
)

// postInstall creates the nic_exporter system user from the sysusers.d
// file the package installed (systemd-sysusers, or useradd where systemd
// is not installed) and reloads systemd. It honours DPKG_ROOT, which dpkg
// sets when it installs into another root without a chroot
// (--force-script-chrootless): the user is created in that root, and the
// running system's systemd is left alone.
const postInstall = `#!/bin/sh
set -e
root="${DPKG_ROOT:-}"
if ! grep -q '^nic_exporter:' "$root/etc/passwd" 2>/dev/null; then
	if command -v systemd-sysusers >/dev/null 2>&1; then
		systemd-sysusers --root="${root:-/}" "$root` + pkgSysusers + `"
	else
		useradd --root "${root:-/}" --system --user-group --no-create-home \
			--home-dir /var/lib/nic_exporter --shell /usr/sbin/nologin nic_exporter
	fi
fi
if [ -z "$root" ] && [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || true
fi
`

// preRemove stops the service when the package is removed, not upgraded:
// dpkg passes "remove", rpm the number of versions left, 0.
const preRemove = `#!/bin/sh
set -e
case "$1" in
remove|0)
	if [ -z "${DPKG_ROOT:-}" ] && [ -d /run/systemd/system ]; then
		systemctl --no-reload disable --now nic_exporter.service >/dev/null 2>&1 || true
	fi
	;;
esac
`

// packageInfo describes the nfpm package of arch for format ("deb" or
// "rpm"), with the scripts in dir.
func packageInfo(cfg Config, format, arch, bin, scripts string) (*nfpm.Info, error) {
	repo := func(p string) string { return filepath.Join(cfg.Root, p) }
	file := func(src, dst string, mode os.FileMode, typ string) *files.Content {
		return &files.Content{
			Source:      src,
			Destination: dst,
			Type:        typ,
			FileInfo:    &files.ContentFileInfo{Mode: mode, MTime: cfg.Epoch, Owner: "root", Group: "root"},
		}
	}
	env := pkgDebEnv
	if format == "rpm" {
		env = pkgRPMEnv
	}
	license := files.TypeFile
	if format == "rpm" {
		license = files.TypeRPMLicense
	}
	share, err := shareFiles(cfg.Root)
	if err != nil {
		return nil, err
	}
	contents := files.Contents{
		file(bin, pkgBinary, 0o755, files.TypeFile),
		file(repo("deploy/systemd/nic_exporter.service"), pkgUnit, 0o644, files.TypeFile),
		file(repo("deploy/systemd/nic_exporter.sysusers"), pkgSysusers, 0o644, files.TypeFile),
		file(repo("deploy/systemd/nic_exporter.default"), env, 0o644, files.TypeConfigNoReplace),
		file(repo("LICENSE"), pkgDoc+"/LICENSE", 0o644, license),
		file(repo("deploy/systemd/vma.conf"), pkgDoc+"/vma.conf", 0o644, files.TypeFile),
		file(repo(webConfigExample), pkgDoc+"/web-config.example.yml", 0o644, files.TypeFile),
	}
	// The alerting half is reference material that the operator copies
	// into Prometheus', Alertmanager's and Grafana's configuration (or
	// points them at): plain files, replaced on upgrade, not conffiles.
	dirs := map[string]bool{pkgShare: true}
	for _, f := range share {
		contents = append(contents, file(repo(f.Src), pkgShare+"/"+f.Rel, 0o644, files.TypeFile))
		for d := path.Dir(f.Rel); d != "."; d = path.Dir(d) {
			dirs[pkgShare+"/"+d] = true
		}
	}
	// RPM removes only the directories a package owns (dpkg tracks
	// them by itself): the .rpm owns pkgShare's tree.
	if format == "rpm" {
		sorted := make([]string, 0, len(dirs))
		for d := range dirs {
			sorted = append(sorted, d)
		}
		sort.Strings(sorted)
		for _, d := range sorted {
			contents = append(contents, file("", d, 0o755, files.TypeDir))
		}
	}
	info := &nfpm.Info{
		Name:        "nic_exporter",
		Arch:        arch,
		Platform:    "linux",
		Version:     cfg.Version,
		Section:     "net",
		Priority:    "optional",
		Maintainer:  "nic_exporter maintainers <nic_exporter@users.noreply.github.com>",
		Vendor:      "nic_exporter",
		Homepage:    "https://github.com/nic-exporter/nic_exporter",
		License:     "Apache-2.0",
		Description: "Prometheus exporter for NIC health\nWatches NVIDIA/Mellanox ConnectX (mlx5) adapters, InfiniBand ports, AWS ENA\nadapters and NVIDIA VMA applications: devlink health, ethtool statistics,\nPCIe link state and kernel log errors.",
		MTime:       cfg.Epoch,
		Overridables: nfpm.Overridables{
			Contents: contents,
			Scripts: nfpm.Scripts{
				PostInstall: filepath.Join(scripts, "postinstall.sh"),
				PreRemove:   filepath.Join(scripts, "preremove.sh"),
			},
		},
	}
	return nfpm.WithDefaults(info), nil
}

// writePackage writes the .deb or .rpm of arch into cfg.Out and returns
// its path.
func writePackage(cfg Config, format, arch, bin string) (string, error) {
	scripts, err := os.MkdirTemp("", "nic_exporter-scripts-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(scripts)
	for name, body := range map[string]string{"postinstall.sh": postInstall, "preremove.sh": preRemove} {
		if err := os.WriteFile(filepath.Join(scripts, name), []byte(body), 0o755); err != nil {
			return "", err
		}
	}
	var packager nfpm.Packager
	switch format {
	case "deb":
		packager = deb.Default
	case "rpm":
		packager = rpm.DefaultRPM
	default:
		return "", fmt.Errorf("unknown package format %q", format)
	}
	info, err := packageInfo(cfg, format, arch, bin, scripts)
	if err != nil {
		return "", err
	}
	if err := nfpm.PrepareForPackager(info, format); err != nil {
		return "", err
	}
	name := filepath.Join(cfg.Out, packager.ConventionalFileName(info))
	f, err := os.Create(name)
	if err != nil {
		return "", err
	}
	if err := packager.Package(info, f); err != nil {
		f.Close()
		return "", err
	}
	return name, f.Close()
}
