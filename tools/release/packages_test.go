package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	rpmutils "github.com/sassoftware/go-rpmutils"
)

// packageFile returns the path of the .deb or .rpm of arch.
func packageFile(t *testing.T, format, arch string) string {
	t.Helper()
	pattern := map[string]string{
		"deb": "nic_exporter_*_" + arch + ".deb",
		"rpm": "nic_exporter-*." + map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[arch] + ".rpm",
	}[format]
	m, err := filepath.Glob(filepath.Join(release.dir, pattern))
	if err != nil || len(m) != 1 {
		t.Fatalf("%s in %s: %v %v", pattern, release.dir, m, err)
	}
	return m[0]
}

// pkgFile is a file a package must install: mode and, for RPM, the
// file flags (config, noreplace, license).
type pkgFile struct {
	mode  os.FileMode
	flags int
}

// wantFiles are the regular files of the package of format.
func wantFiles(t *testing.T, format string) map[string]pkgFile {
	files := map[string]pkgFile{
		pkgBinary:                          {mode: 0o755},
		pkgUnit:                            {mode: 0o644},
		pkgSysusers:                        {mode: 0o644},
		pkgDoc + "/LICENSE":                {mode: 0o644},
		pkgDoc + "/vma.conf":               {mode: 0o644},
		pkgDoc + "/web-config.example.yml": {mode: 0o644},
	}
	for rel := range wantShare(t) {
		files[pkgShare+"/"+rel] = pkgFile{mode: 0o644}
	}
	if format == "deb" {
		files[pkgDebEnv] = pkgFile{mode: 0o644}
	} else {
		files[pkgRPMEnv] = pkgFile{mode: 0o644, flags: rpmutils.RPMFILE_CONFIG | rpmutils.RPMFILE_NOREPLACE}
		lic := files[pkgDoc+"/LICENSE"]
		lic.flags = rpmutils.RPMFILE_LICENSE
		files[pkgDoc+"/LICENSE"] = lic
	}
	return files
}

// TestDebContents reads each .deb back with dpkg-deb: its files with
// modes and owners, the control fields, the conffiles and the scripts.
func TestDebContents(t *testing.T) {
	dpkgDeb := lookPath(t, "dpkg-deb")
	for _, arch := range Arches {
		t.Run(arch, func(t *testing.T) {
			deb := packageFile(t, "deb", arch)
			out, err := exec.Command(dpkgDeb, "-c", deb).CombinedOutput()
			if err != nil {
				t.Fatalf("dpkg-deb -c: %v\n%s", err, out)
			}
			got := map[string]string{}
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				// -rwxr-xr-x root/root  14573694 2026-11-25 10:27 ./usr/bin/nic_exporter
				f := strings.Fields(line)
				if len(f) != 6 {
					t.Fatalf("dpkg-deb -c line %q", line)
				}
				if f[1] != "root/root" {
					t.Errorf("%s owned by %s, want root/root", f[5], f[1])
				}
				if f[0][0] == '-' {
					got[strings.TrimPrefix(f[5], ".")] = f[0]
				}
			}
			want := map[string]string{}
			for name, f := range wantFiles(t, "deb") {
				want[name] = f.mode.String()
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("dpkg-deb -c: files\n%v\nwant\n%v", got, want)
			}

			fields := map[string]string{
				"Package":      "nic_exporter",
				"Version":      debVersion(release.cfg.Version),
				"Architecture": arch,
				"Section":      "net",
				"Homepage":     "https://github.com/nic-exporter/nic_exporter",
			}
			for field, want := range fields {
				out, err := exec.Command(dpkgDeb, "-f", deb, field).CombinedOutput()
				if err != nil || strings.TrimSpace(string(out)) != want {
					t.Errorf("dpkg-deb -f %s: %q (%v), want %q", field, out, err, want)
				}
			}
			for member, want := range map[string]string{
				"conffiles": pkgDebEnv + "\n",
				"postinst":  postInstall,
				"prerm":     preRemove,
			} {
				out, err := exec.Command(dpkgDeb, "-I", deb, member).CombinedOutput()
				if err != nil || string(out) != want {
					t.Errorf("dpkg-deb -I %s:\n%s(%v)\nwant\n%s", member, out, err, want)
				}
			}

			// The alerting half, read back from the data archive.
			fsys, err := exec.Command(dpkgDeb, "--fsys-tarfile", deb).Output()
			if err != nil {
				t.Fatalf("dpkg-deb --fsys-tarfile: %v", err)
			}
			share := map[string][]byte{}
			for _, e := range readTar(t, bytes.NewReader(fsys)) {
				if rel, ok := strings.CutPrefix(e.hdr.Name, "."+pkgShare+"/"); ok && e.hdr.Typeflag == tar.TypeReg {
					share[rel] = e.data
				}
			}
			checkShare(t, filepath.Base(deb), share)
		})
	}
}

// TestDebInstall installs the amd64 .deb for real into an empty root
// directory and verifies what it installed.
//
// dpkg --root=DIR keeps its database in DIR/var/lib/dpkg and unpacks
// there, but runs maintainer scripts in a chroot(DIR), which needs a
// shell and the tools inside DIR: a clean root has none, and building a
// minimal chroot needs the network (debootstrap). So the test uses
// --force-script-chrootless: dpkg runs the postinst on this machine with
// DPKG_ROOT=DIR, which the script honours (systemd-sysusers --root), so
// the system user is created in DIR's /etc/passwd and this machine's
// systemd and users are left alone; the test checks that too.
// --force-not-root only lets the test also run as non-root.
func TestDebInstall(t *testing.T) {
	dpkg := lookPath(t, "dpkg")
	analyze := lookPath(t, "systemd-analyze")
	lookPath(t, "systemd-sysusers")
	hostPasswd, err := os.ReadFile("/etc/passwd")
	if err != nil {
		t.Fatal(err)
	}

	root := t.TempDir()
	for _, d := range []string{"var/lib/dpkg/info", "var/lib/dpkg/updates"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "var/lib/dpkg/status"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	deb := packageFile(t, "deb", "amd64")
	dpkgArgs := []string{"--root=" + root, "--force-not-root", "--force-script-chrootless", "--log=/dev/null"}
	if out, err := exec.Command(dpkg, append(dpkgArgs, "--install", deb)...).CombinedOutput(); err != nil {
		t.Fatalf("dpkg --install: %v\n%s", err, out)
	}
	if after, err := os.ReadFile("/etc/passwd"); err != nil || !bytes.Equal(after, hostPasswd) {
		t.Errorf("installing into %s changed this machine's /etc/passwd (%v)", root, err)
	}

	status, err := exec.Command("dpkg-query", "--admindir="+filepath.Join(root, "var/lib/dpkg"), "-W", "-f=${Status} ${Version}", "nic_exporter").CombinedOutput()
	if want := "install ok installed " + debVersion(release.cfg.Version); err != nil || string(status) != want {
		t.Errorf("dpkg-query: %q (%v), want %q", status, err, want)
	}

	passwd, err := os.ReadFile(filepath.Join(root, "etc/passwd"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(passwd), "nic_exporter:x:") || !strings.Contains(string(passwd), ":/usr/sbin/nologin") {
		t.Errorf("postinst did not create the nic_exporter user; %s/etc/passwd:\n%s", root, passwd)
	}

	for name, f := range wantFiles(t, "deb") {
		fi, err := os.Stat(filepath.Join(root, name))
		if err != nil {
			t.Error(err)
			continue
		}
		if fi.Mode() != f.mode {
			t.Errorf("%s: mode %v, want %v", name, fi.Mode(), f.mode)
		}
	}
	shipped, err := os.ReadFile(filepath.Join(release.cfg.Root, "deploy/systemd/nic_exporter.service"))
	if err != nil {
		t.Fatal(err)
	}
	unit, err := os.ReadFile(filepath.Join(root, pkgUnit))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(unit, shipped) {
		t.Error("the installed unit differs from deploy/systemd/nic_exporter.service")
	}

	// systemd-analyze verify checks that ExecStart's program exists, so
	// the unit is verified with ExecStart at the installed binary, which
	// is also run with the unit's flags. --root= is no help: verify then
	// looks for sysinit.target inside the root.
	bin := filepath.Join(root, pkgBinary)
	var args []string
	var lines []string
	for _, line := range strings.Split(string(unit), "\n") {
		if rest, ok := strings.CutPrefix(line, "ExecStart="+pkgBinary+" "); ok {
			args = strings.Fields(strings.ReplaceAll(rest, "$NIC_EXPORTER_OPTS", ""))
			line = "ExecStart=" + bin + " " + rest
		}
		lines = append(lines, line)
	}
	if args == nil {
		t.Fatalf("the installed unit has no ExecStart=%s", pkgBinary)
	}
	verify := filepath.Join(t.TempDir(), "nic_exporter.service")
	if err := os.WriteFile(verify, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(analyze, "verify", verify).CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) != 0 {
		t.Errorf("systemd-analyze verify of the installed unit: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, append(args, "--version")...).CombinedOutput(); err != nil {
		t.Errorf("%s %v --version: %v\n%s", bin, args, err, out)
	}

	if out, err := exec.Command(dpkg, append(dpkgArgs, "--purge", "nic_exporter")...).CombinedOutput(); err != nil {
		t.Fatalf("dpkg --purge: %v\n%s", err, out)
	}
	for name := range wantFiles(t, "deb") {
		if _, err := os.Stat(filepath.Join(root, name)); !os.IsNotExist(err) {
			t.Errorf("%s left after dpkg --purge (%v)", name, err)
		}
	}
}

// TestRPMContents reads each .rpm back with go-rpmutils (the reader
// nfpm's own tests use): name, version, architecture, files with modes,
// owners and flags, and the scripts.
func TestRPMContents(t *testing.T) {
	for _, arch := range Arches {
		t.Run(arch, func(t *testing.T) {
			f, err := os.Open(packageFile(t, "rpm", arch))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			r, err := rpmutils.ReadRpm(f)
			if err != nil {
				t.Fatal(err)
			}
			h := r.Header
			nevra, err := h.GetNEVRA()
			if err != nil {
				t.Fatal(err)
			}
			rpmArch := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[arch]
			wantVersion := debVersion(release.cfg.Version)
			if nevra.Name != "nic_exporter" || nevra.Version != wantVersion || nevra.Arch != rpmArch {
				t.Errorf("name %s version %s arch %s, want nic_exporter %s %s", nevra.Name, nevra.Version, nevra.Arch, wantVersion, rpmArch)
			}
			if lic, err := h.GetString(rpmutils.LICENSE); err != nil || lic != "Apache-2.0" {
				t.Errorf("license %q (%v)", lic, err)
			}
			files, err := h.GetFiles()
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]pkgFile{}
			var names []string
			gotDirs := map[string]bool{}
			for _, fi := range files {
				mode := os.FileMode(fi.Mode() & 0o777)
				if fi.Mode()&0o170000 == 0o040000 {
					gotDirs[fi.Name()] = true
				}
				if fi.Mode()&0o170000 != 0o100000 {
					continue // directories
				}
				if fi.UserName() != "root" || fi.GroupName() != "root" {
					t.Errorf("%s owned by %s:%s, want root:root", fi.Name(), fi.UserName(), fi.GroupName())
				}
				got[fi.Name()] = pkgFile{mode: mode, flags: fi.Flags()}
				names = append(names, fi.Name())
			}
			sort.Strings(names)
			if want := wantFiles(t, "rpm"); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("files\n%v\nwant\n%v", got, want)
			}
			// The .rpm owns the directories of /usr/share/nic_exporter,
			// so that removing it removes them.
			for rel := range wantShare(t) {
				for d := path.Dir(pkgShare + "/" + rel); d != path.Dir(pkgShare); d = path.Dir(d) {
					if !gotDirs[d] {
						t.Errorf("the .rpm does not own the directory %s", d)
					}
				}
			}
			// The alerting half, read back from the payload.
			payload, err := r.PayloadReaderExtended()
			if err != nil {
				t.Fatal(err)
			}
			share := map[string][]byte{}
			for {
				fi, err := payload.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				rel, ok := strings.CutPrefix(fi.Name(), pkgShare+"/")
				if !ok || fi.Mode()&0o170000 != 0o100000 {
					continue
				}
				data, err := io.ReadAll(payload)
				if err != nil {
					t.Fatal(err)
				}
				share[rel] = data
			}
			checkShare(t, filepath.Base(packageFile(t, "rpm", arch)), share)
			for tag, want := range map[int]string{rpmutils.POSTIN: postInstall, rpmutils.PREUN: preRemove} {
				script, err := h.GetString(tag)
				if err != nil || strings.TrimSpace(script) != strings.TrimSpace(want) {
					t.Errorf("script %d:\n%s(%v)\nwant\n%s", tag, script, err, want)
				}
			}
		})
	}
}
