package guest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/nic-exporter/nic_exporter/internal/testenv/kernelpkgs"
)

// Kernel is a Debian kernel prepared for booting under qemu: an
// uncompressed vmlinux and a module tree (with netdevsim built out of
// tree) that modprobe and depmod can use with -d / -b.
type Kernel struct {
	// Release is the kernel release, as uname -r prints it.
	Release string
	// PackageVersion is the Debian version of the image and source
	// packages, for example 6.1.192-2.
	PackageVersion string
	// Vmlinux is the path of the uncompressed kernel image.
	Vmlinux string
	// Root is the directory holding lib/modules/<Release>.
	Root string
}

// sourcePackage is the Debian package with the kernel sources that
// netdevsim and extract-vmlinux are taken from.
const sourcePackage = kernelpkgs.Source

// CacheDir returns the directory prepared kernels are cached in:
// $NIC_EXPORTER_GUEST_CACHE, else nic_exporter-guest in the user's cache
// directory ($XDG_CACHE_HOME or ~/.cache), else (no home directory, as in
// some CI containers) in the temporary directory.
func CacheDir() (string, error) {
	if d := os.Getenv("NIC_EXPORTER_GUEST_CACHE"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return filepath.Join(os.TempDir(), fmt.Sprintf("nic_exporter-guest-%d", os.Getuid())), nil
	}
	return filepath.Join(d, "nic_exporter-guest"), nil
}

// installedKernel returns the release and Debian version of the kernel
// whose headers linux-headers-amd64 pulls in, after checking that the
// installed linux-source package has the same version (kernelpkgs, whose
// command installs a matching set).
func installedKernel() (release, version string, err error) {
	in, err := kernelpkgs.QueryInstalled()
	if err != nil {
		return "", "", err
	}
	k, err := kernelpkgs.CheckInstalled(in)
	if err != nil {
		return "", "", err
	}
	return k.Release, k.Version, nil
}

// PrepareKernel returns the kernel matching the installed
// linux-headers-amd64, preparing it on first use: it downloads the image
// package (apt-get download, never installed), unpacks it, uncompresses
// vmlinuz, builds netdevsim from linux-source against the headers and runs
// depmod. The result is cached under CacheDir keyed by release and
// version; concurrent test processes serialise on a lock file.
func PrepareKernel() (*Kernel, error) {
	release, version, err := installedKernel()
	if err != nil {
		return nil, err
	}
	cache, err := CacheDir()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(cache, release+"_"+version)
	k := &Kernel{
		Release:        release,
		PackageVersion: version,
		Vmlinux:        filepath.Join(dir, "vmlinux"),
		Root:           filepath.Join(dir, "root"),
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return nil, fmt.Errorf("creating cache directory: %w", err)
	}
	unlock, err := lockFile(dir + ".lock")
	if err != nil {
		return nil, err
	}
	defer unlock()
	ready := filepath.Join(dir, "ready")
	if _, err := os.Stat(ready); err == nil {
		return k, nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("clearing a partial cache: %w", err)
	}
	work, err := os.MkdirTemp(cache, "prepare-")
	if err != nil {
		return nil, fmt.Errorf("creating work directory: %w", err)
	}
	defer os.RemoveAll(work)
	if err := prepare(k, work); err != nil {
		return nil, fmt.Errorf("preparing kernel %s: %w", release, err)
	}
	if err := os.Rename(filepath.Join(work, "out"), dir); err != nil {
		return nil, fmt.Errorf("moving the prepared kernel into the cache: %w", err)
	}
	if err := os.WriteFile(ready, []byte(version+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("marking the cache ready: %w", err)
	}
	return k, nil
}

// prepare does the work of PrepareKernel in work, leaving the result in
// work/out.
func prepare(k *Kernel, work string) error {
	out := filepath.Join(work, "out")
	root := filepath.Join(out, "root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	pkg := "linux-image-" + k.Release + "=" + k.PackageVersion
	if err := run(work, "apt-get", "download", "-q", pkg); err != nil {
		return err
	}
	debs, _ := filepath.Glob(filepath.Join(work, "linux-image-*.deb"))
	if len(debs) != 1 {
		return fmt.Errorf("apt-get download %s left %d packages", pkg, len(debs))
	}
	unpacked := filepath.Join(work, "image")
	if err := run(work, "dpkg-deb", "-x", debs[0], unpacked); err != nil {
		return err
	}
	if err := os.Rename(filepath.Join(unpacked, "lib"), filepath.Join(root, "lib")); err != nil {
		return fmt.Errorf("moving modules: %w", err)
	}
	tarball := filepath.Join("/usr/src", sourcePackage+".tar.xz")
	if err := run(work, "tar", "-xJf", tarball,
		sourcePackage+"/scripts/extract-vmlinux",
		sourcePackage+"/drivers/net/netdevsim"); err != nil {
		return err
	}
	src := filepath.Join(work, sourcePackage)
	vmlinuz := filepath.Join(unpacked, "boot", "vmlinuz-"+k.Release)
	f, err := os.Create(filepath.Join(out, "vmlinux"))
	if err != nil {
		return err
	}
	cmd := exec.Command("sh", filepath.Join(src, "scripts", "extract-vmlinux"), vmlinuz)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = f, &stderr
	err = cmd.Run()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("extract-vmlinux: %w: %s", err, stderr.String())
	}
	nsim := filepath.Join(src, "drivers", "net", "netdevsim")
	if err := run(nsim, "make", "-s", "-C", "/usr/src/linux-headers-"+k.Release,
		"M="+nsim, "CONFIG_NETDEVSIM=m", "modules"); err != nil {
		return err
	}
	extra := filepath.Join(root, "lib", "modules", k.Release, "extra")
	if err := os.MkdirAll(extra, 0o755); err != nil {
		return err
	}
	ko, err := os.ReadFile(filepath.Join(nsim, "netdevsim.ko"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(extra, "netdevsim.ko"), ko, 0o644); err != nil {
		return err
	}
	return run(work, "depmod", "-b", root, k.Release)
}

// run runs a command in dir and returns its output in the error.
func run(dir, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// lockFile takes an exclusive lock on path and returns its release.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening lock: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// moduleFiles returns the module files (relative to k.Root) that load the
// named modules with their dependencies, in load order, without
// duplicates. Built-in modules are left out.
func (k *Kernel) moduleFiles(names []string) ([]string, error) {
	var files []string
	seen := map[string]bool{}
	for _, name := range names {
		out, err := exec.Command("modprobe", "-d", k.Root, "-S", k.Release, "--show-depends", name).CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("resolving module %s: %w: %s", name, err, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			fields := strings.Fields(line)
			if len(fields) < 2 || fields[0] != "insmod" {
				continue // "builtin x" or empty
			}
			rel, err := filepath.Rel(k.Root, fields[1])
			if err != nil || strings.HasPrefix(rel, "..") {
				return nil, fmt.Errorf("module %s resolved outside the module tree: %s", name, fields[1])
			}
			if !seen[rel] {
				seen[rel] = true
				files = append(files, rel)
			}
		}
	}
	return files, nil
}
