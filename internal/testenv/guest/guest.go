// Package guest runs a package's Go tests inside a real Debian kernel
// booted under qemu (TCG), for code that needs kernel features this
// machine's own kernel lacks: the devlink netlink family with netdevsim,
// Soft-RoCE InfiniBand devices.
//
// A test calls Run from the host. Run prepares the kernel (see
// PrepareKernel; cached), builds the calling package's test binary with
// CGO_ENABLED=0, packs it with busybox, the requested modules and
// optionally iproute2's tools into an initramfs, boots it, and returns what
// the guest test printed and its exit status. In the guest the same test
// binary runs with InGuest reporting true:
//
//	func TestKernel(t *testing.T) {
//		if guest.InGuest() {
//			// checks against the real kernel
//			return
//		}
//		guest.RunTest(t, guest.Config{Run: "^TestKernel$", Modules: []string{"netdevsim"}})
//	}
//
// Boots are slow (tens of seconds): keep one per test package and run all
// real-kernel checks of the package inside it.
package guest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// EnvVar is set to "1" in the guest test's environment.
const EnvVar = "NIC_EXPORTER_GUEST"

// ToolDir is where iproute2's ip, rdma and devlink are placed in the guest
// when Config.IPRoute2 is set. Call them by full path: busybox's shell
// prefers its own applets (such as ip) to $PATH.
const ToolDir = "/usr/local/bin"

// InGuest reports whether the test binary runs inside a guest started by
// Run.
func InGuest() bool {
	if os.Getenv(EnvVar) != "1" {
		return false
	}
	// The environment variable alone could be set on a real host by
	// mistake; only the guest's kernel was booted with cmdlineMarker.
	b, err := os.ReadFile("/proc/cmdline")
	return err == nil && slices.Contains(strings.Fields(string(b)), cmdlineMarker)
}

// cmdlineMarker is on the guest kernel's command line and on no real
// host's, so InGuest cannot be fooled by the environment alone (tests
// that write to /dev/kmsg rely on it).
const cmdlineMarker = "nic_exporter.guest=1"

// Config describes one boot.
type Config struct {
	// Run is the -test.run pattern of the guest test binary. Required:
	// it should select only the test that calls Run and its helpers.
	Run string
	// Modules are kernel modules loaded in order, with their
	// dependencies, before the test starts. netdevsim is available in
	// addition to Debian's own modules.
	Modules []string
	// IPRoute2 copies iproute2's ip, rdma and devlink with their shared
	// libraries into ToolDir.
	IPRoute2 bool
	// Args are extra arguments for the guest test binary, such as -test.v.
	Args []string
	// Files are host files copied into the guest, such as a built
	// nic_exporter, keyed by their absolute path in the guest.
	Files map[string]string
	// Env adds environment variables (KEY=value) for the guest test.
	Env []string
	// Timeout bounds the boot; 4 minutes when zero.
	Timeout time.Duration
	// MemoryMB is the guest's memory; 1024 when zero.
	MemoryMB int
	// QemuArgs are extra qemu arguments, appended to the command line:
	// a machine type and emulated devices, for example "-machine", "q35",
	// "-device", "pcie-root-port,id=rp1,chassis=1", "-device",
	// "e1000e,bus=rp1" for a PCIe function with an AER capability.
	QemuArgs []string
}

// Result is the outcome of one boot.
type Result struct {
	// Output is what the guest test binary wrote to stdout and stderr.
	Output string
	// Console is the kernel console (qemu's first serial port).
	Console string
	// ExitStatus is the guest test binary's exit status, or -1 when the
	// guest never reported one (crash, timeout).
	ExitStatus int
	// Duration is the wall time of the boot alone.
	Duration time.Duration
}

// Requirements lists the host tools and Debian packages Run needs that
// are missing.
func Requirements() []string {
	var missing []string
	for _, tool := range []string{"qemu-system-x86_64", "apt-get", "dpkg-deb", "dpkg-query", "depmod", "modprobe", "make", "gcc", "tar", "xz"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if _, err := os.Stat(busyboxPath); err != nil {
		missing = append(missing, "busybox-static ("+busyboxPath+")")
	}
	if _, err := os.Stat(filepath.Join("/usr/src", sourcePackage+".tar.xz")); err != nil {
		missing = append(missing, sourcePackage)
	}
	if _, _, err := installedKernel(); err != nil {
		missing = append(missing, "guest kernel packages ("+err.Error()+")")
	}
	return missing
}

// busyboxPath is where busybox-static installs its binary.
const busyboxPath = "/bin/busybox"

// iproute2Tools are the host paths of the tools Config.IPRoute2 copies.
var iproute2Tools = []string{"/sbin/ip", "/usr/bin/rdma", "/sbin/devlink"}

// Run boots the kernel with the calling package's test binary as
// described by cfg. It skips the test (fails it in CI) when qemu or the
// kernel packages are missing, and fails it when preparation fails.
func Run(t testing.TB, cfg Config) *Result {
	t.Helper()
	missing := Requirements()
	testenv.Require(t, len(missing) == 0, "guest kernel prerequisites: "+strings.Join(missing, ", "))
	if cfg.Run == "" {
		t.Fatal("guest.Config.Run is required")
	}
	k, err := PrepareKernel()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	testBin := filepath.Join(dir, "guest.test")
	if err := buildTestBinary(testBin); err != nil {
		t.Fatal(err)
	}
	initrd := filepath.Join(dir, "initrd.cpio")
	if err := buildInitramfs(initrd, k, testBin, cfg); err != nil {
		t.Fatal(err)
	}
	res, err := boot(k, initrd, dir, cfg)
	if err != nil {
		t.Fatalf("%v\nconsole:\n%s\noutput:\n%s", err, res.Console, res.Output)
	}
	return res
}

// RunTest is Run followed by a check that the guest test passed: the
// guest output is logged, and the test fails with the console when the
// guest test failed or the guest died.
func RunTest(t testing.TB, cfg Config) *Result {
	t.Helper()
	res := Run(t, cfg)
	t.Logf("guest boot took %v; guest output:\n%s", res.Duration.Round(time.Millisecond), res.Output)
	if res.ExitStatus != 0 {
		t.Fatalf("guest test exit status %d; console:\n%s", res.ExitStatus, res.Console)
	}
	return res
}

// buildTestBinary builds the test binary of the package in the current
// directory (the package under test) as a static executable.
func buildTestBinary(out string) error {
	goTool, err := exec.LookPath("go")
	if err != nil {
		if root := os.Getenv("GOROOT"); root != "" {
			goTool = filepath.Join(root, "bin", "go")
		} else {
			return fmt.Errorf("finding the go command: %w", err)
		}
	}
	cmd := exec.Command(goTool, "test", "-c", "-o", out, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building the guest test binary: %w\n%s", err, b)
	}
	return nil
}

// guestTestPath is the test binary's path in the guest.
const guestTestPath = "/guest.test"

// exitMarker prefixes the line carrying the guest test's exit status.
const exitMarker = "NIC_EXPORTER_GUEST_EXIT "

func buildInitramfs(out string, k *Kernel, testBin string, cfg Config) error {
	a := newArchive()
	if err := a.hostFile("bin/busybox", busyboxPath); err != nil {
		return err
	}
	a.symlink("bin/sh", "busybox")
	for _, d := range []string{"proc", "sys", "dev", "tmp", "run", "sbin", "usr/bin", "usr/sbin", "etc", "root"} {
		a.dir(d)
	}
	if err := a.hostFile(guestTestPath[1:], testBin); err != nil {
		return err
	}
	for _, guestPath := range slices.Sorted(maps.Keys(cfg.Files)) {
		if err := a.hostFile(strings.TrimPrefix(guestPath, "/"), cfg.Files[guestPath]); err != nil {
			return err
		}
	}
	mods, err := k.moduleFiles(cfg.Modules)
	if err != nil {
		return err
	}
	for _, m := range mods {
		if err := a.hostFile(m, filepath.Join(k.Root, m)); err != nil {
			return err
		}
	}
	if cfg.IPRoute2 {
		if err := addTools(a, iproute2Tools); err != nil {
			return err
		}
	}
	a.file("init", 0o755, []byte(initScript(mods, cfg)))
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := a.writeTo(f); err != nil {
		f.Close()
		return fmt.Errorf("writing the initramfs: %w", err)
	}
	return f.Close()
}

// addTools copies dynamically linked host binaries into ToolDir with the
// shared libraries ldd finds for them, at the libraries' host paths.
func addTools(a *archive, tools []string) error {
	for _, tool := range tools {
		if err := a.hostFile(filepath.Join(ToolDir, filepath.Base(tool))[1:], tool); err != nil {
			return err
		}
		out, err := exec.Command("ldd", tool).Output()
		if err != nil {
			return fmt.Errorf("ldd %s: %w", tool, err)
		}
		for _, line := range strings.Split(string(out), "\n") {
			// "libbpf.so.1 => /lib/x86_64-linux-gnu/libbpf.so.1 (0x...)"
			// "/lib64/ld-linux-x86-64.so.2 (0x...)"
			fields := strings.Fields(line)
			var lib string
			switch {
			case len(fields) >= 3 && fields[1] == "=>":
				lib = fields[2]
			case len(fields) >= 1 && strings.HasPrefix(fields[0], "/"):
				lib = fields[0]
			}
			if !strings.HasPrefix(lib, "/") {
				continue
			}
			if err := a.hostFile(lib[1:], lib); err != nil {
				return err
			}
		}
	}
	return nil
}

// initScript returns the guest's /init: mount the pseudo file systems,
// load the modules, run the test binary with its output on the second
// serial port, report its exit status there and power off.
func initScript(modules []string, cfg Config) string {
	var b strings.Builder
	b.WriteString(`#!/bin/sh
/bin/busybox --install -s
export PATH=/bin:/sbin:/usr/bin:/usr/sbin:` + ToolDir + `
export LD_LIBRARY_PATH=/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t debugfs debugfs /sys/kernel/debug
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
ip link set lo up
`)
	for _, m := range modules {
		fmt.Fprintf(&b, "insmod /%s || echo 'guest: insmod %s failed' >/dev/ttyS1\n", m, m)
	}
	env := append([]string{EnvVar + "=1", "HOME=/root", "TMPDIR=/tmp"}, cfg.Env...)
	if testenv.Strict() {
		env = append(env, testenv.RequireAllVar+"=1")
	}
	args := append([]string{"-test.run", cfg.Run, "-test.count=1"}, cfg.Args...)
	b.WriteString("cd /tmp\n")
	b.WriteString("env")
	for _, e := range env {
		b.WriteString(" " + shellQuote(e))
	}
	b.WriteString(" " + guestTestPath)
	for _, a := range args {
		b.WriteString(" " + shellQuote(a))
	}
	b.WriteString(" >/dev/ttyS1 2>&1\n")
	b.WriteString("echo \"" + exitMarker + "$?\" >/dev/ttyS1\n")
	b.WriteString("sync\npoweroff -f\n")
	return b.String()
}

// shellQuote quotes s for the guest's shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// boot runs qemu and collects both serial ports.
func boot(k *Kernel, initrd, dir string, cfg Config) (*Result, error) {
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = 4 * time.Minute
	}
	mem := cfg.MemoryMB
	if mem == 0 {
		mem = 1024
	}
	console := filepath.Join(dir, "console.log")
	output := filepath.Join(dir, "output.log")
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	args := []string{
		"-accel", "tcg", "-m", strconv.Itoa(mem), "-smp", "2",
		"-display", "none", "-monitor", "none", "-no-reboot", "-nic", "none",
		"-serial", "file:" + console, "-serial", "file:" + output,
		"-kernel", k.Vmlinux, "-initrd", initrd,
		"-append", "console=ttyS0 panic=-1 quiet rdinit=/init " + cmdlineMarker}
	cmd := exec.CommandContext(ctx, "qemu-system-x86_64", append(args, cfg.QemuArgs...)...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	start := time.Now()
	runErr := cmd.Run()
	res := &Result{Duration: time.Since(start), ExitStatus: -1}
	c, _ := os.ReadFile(console)
	o, _ := os.ReadFile(output)
	res.Console = string(c)
	res.Output, res.ExitStatus = splitExit(string(o))
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return res, fmt.Errorf("guest did not power off within %v", timeout)
	case runErr != nil:
		return res, fmt.Errorf("qemu: %w: %s", runErr, stderr.String())
	}
	return res, nil
}

// splitExit removes the exit marker line from the guest output and
// returns the status it carries, or -1 when there is none.
func splitExit(out string) (string, int) {
	out = strings.ReplaceAll(out, "\r\n", "\n")
	i := strings.LastIndex(out, exitMarker)
	if i < 0 {
		return out, -1
	}
	line, _, _ := strings.Cut(out[i+len(exitMarker):], "\n")
	status, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		return out, -1
	}
	return out[:i], status
}
