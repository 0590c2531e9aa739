//go:build linux

package captest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/nic-exporter/nic_exporter/internal/testenv"
	"github.com/nic-exporter/nic_exporter/internal/testenv/guest"
	"github.com/nic-exporter/nic_exporter/vmastats"
	"github.com/nic-exporter/nic_exporter/vmastats/vmastatstest"
)

// publisherVar makes the test binary a VMA application instead of a test:
// it publishes a statistics file for its own pid in /tmp, keeps it mapped,
// prints "ready" and waits for its standard input to close.
const publisherVar = "NIC_EXPORTER_CAPTEST_PUBLISHER"

func TestMain(m *testing.M) {
	if os.Getenv(publisherVar) == "1" {
		os.Exit(publish())
	}
	os.Exit(m.Run())
}

func publish() int {
	p, err := vmastatstest.NewPublisher("/tmp", os.Getpid(), vmastatstest.Sample(vmastats.LayoutB))
	if err != nil {
		fmt.Println("publisher:", err)
		return 1
	}
	defer p.Close()
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// exporterPath is the nic_exporter binary in the guest.
const exporterPath = "/nic_exporter"

// TestCapabilities boots a real kernel once and measures the privileges of
// every collector (see the package comment). It skips locally without qemu
// and the kernel packages, and fails in CI.
func TestCapabilities(t *testing.T) {
	if guest.InGuest() {
		capabilityChecks(t)
		return
	}
	testenv.Require(t, len(guest.Requirements()) == 0, "guest kernel prerequisites: "+strings.Join(guest.Requirements(), ", "))
	bin, cleanup, err := testenv.BuildExporter("../../cmd/nic_exporter")
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	res := guest.RunTest(t, guest.Config{
		Run:      "^TestCapabilities$",
		Args:     []string{"-test.v"},
		Modules:  []string{"netdevsim", "crc32_generic", "rdma_rxe", "veth"},
		IPRoute2: true,
		Files:    map[string]string{exporterPath: bin},
		Timeout:  8 * time.Minute,
	})
	if !strings.Contains(res.Output, "--- PASS: TestCapabilities") {
		t.Error("guest output lacks the passing test")
	}
}

// What a run of the exporter achieved, each a fact about its scrape or
// its capture directory.
const (
	factNetdev     = "netdev: capv0 series"
	factEthtool    = "ethtool: capv0 series"
	factNetns      = "ethtool --collector.ethtool.netns: capn0 series"
	factInfiniBand = "infiniband: rxe0 series"
	factDevlink    = "devlink: dummy reporter in error"
	factEvent      = "devlink: health event received"
	factInfo       = "devlink: device info"
	factDiagnose   = "devlink capture: diagnose and dump"
	factKmsg       = "kmsg: mlx5_health_compromised counted"
	factVMA        = "vma: the other user's process exported"
	factHandshake  = "vma: reader handshake with the other user's file"
	factApplog     = "applog: lines of the root-only log read"
	factExited     = "the exporter refused to start"
)

// breakHealth reports an error on netdevsim10's dummy reporter.
const breakHealth = "/sys/kernel/debug/netdevsim/netdevsim10/health/break_health"

// vmaLogLine is a documented VMA application log line.
const vmaLogLine = "VMA WARNING: Your current max locked memory is: 65536. Please change it to unlimited.\n"

// unprivileged are the facts of a run with no capability at all.
var unprivileged = []string{factNetdev, factEthtool, factInfiniBand, factDevlink, factEvent, factInfo}

func capabilityChecks(t *testing.T) {
	setUpGuest(t)
	vmaPid := startPublisher(t)

	all := []uintptr{unix.CAP_NET_ADMIN, unix.CAP_SYSLOG, unix.CAP_DAC_OVERRIDE, unix.CAP_SYS_PTRACE}
	for i, tc := range []struct {
		name string
		caps []uintptr
		want []string
	}{
		{"none", nil, unprivileged},
		{"NET_ADMIN", []uintptr{unix.CAP_NET_ADMIN}, append(slices.Clone(unprivileged), factDiagnose)},
		{"SYSLOG", []uintptr{unix.CAP_SYSLOG}, append(slices.Clone(unprivileged), factKmsg)},
		{"DAC_OVERRIDE", []uintptr{unix.CAP_DAC_OVERRIDE}, append(slices.Clone(unprivileged), factApplog)},
		// Read-only: exported, but libvma may stop refreshing the file.
		{"SYS_PTRACE", []uintptr{unix.CAP_SYS_PTRACE}, append(slices.Clone(unprivileged), factVMA)},
		{"DAC_OVERRIDE+SYS_PTRACE", []uintptr{unix.CAP_DAC_OVERRIDE, unix.CAP_SYS_PTRACE}, append(slices.Clone(unprivileged), factVMA, factHandshake, factApplog)},
		{"table", all, append(slices.Clone(unprivileged), factDiagnose, factKmsg, factVMA, factHandshake, factApplog)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			captures := filepath.Join("/tmp", "captures-"+tc.name)
			if err := os.Mkdir(captures, 0o777); err != nil {
				t.Fatal(err)
			}
			// The directory is writable by everyone, so only the
			// capability decides whether diagnose and dump succeed.
			if err := os.Chmod(captures, 0o777); err != nil {
				t.Fatal(err)
			}
			got := runExporter(t, tc.caps, -1, 21200+i, vmaPid, captures,
				"--collector.vma.stats-dir=/tmp",
				"--collector.applog.files=/var/log/vma/*.log",
				"--collector.devlink.capture-dir="+captures)
			checkFacts(t, tc.want, got)
		})
	}
	for i, tc := range []struct {
		name string
		caps []uintptr
		want []string
	}{
		{"netns-none", nil, []string{factExited}},
		{"netns-SYS_ADMIN", []uintptr{unix.CAP_SYS_ADMIN}, []string{factNetns}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runExporter(t, tc.caps, -1, 21220+i, vmaPid, "",
				"--collector.ethtool.netns=/run/netns/capns",
				"--no-collector.netdev", "--no-collector.infiniband", "--no-collector.devlink",
				"--no-collector.kmsg", "--no-collector.vma", "--no-collector.xlio", "--no-collector.applog")
			checkFacts(t, tc.want, got)
		})
	}
	podKernelLogChecks(t, vmaPid)
}

// podKernelLogChecks measures what the kernel-log opt-in of the
// Kubernetes manifests needs without privileged: the exporter runs under
// the device policy of an unprivileged pod (the runtime's default devices
// only, or those plus /dev/kmsg as a device plugin adds it), with or
// without CAP_SYSLOG, with kernel.dmesg_restrict=1 as setUpGuest left it.
// The container's uid does not matter for the open: /dev/kmsg is mode
// 0644, and the pod runs as uid 0 only because Kubernetes gives a
// non-root container no effective capability.
func podKernelLogChecks(t *testing.T, vmaPid int) {
	withKmsg := append(slices.Clone(runtimeDefaultDevices), kmsgDevice)
	for i, tc := range []struct {
		name    string
		devices []deviceRule
		caps    []uintptr
		want    []string
	}{
		// A hostPath mount of /dev/kmsg in an unprivileged pod: the
		// device cgroup refuses the open, CAP_SYSLOG or not.
		{"pod-hostpath-SYSLOG", runtimeDefaultDevices, []uintptr{unix.CAP_SYSLOG}, nil},
		// The shipped opt-in: the device from a device plugin and
		// CAP_SYSLOG, nothing else.
		{"pod-device-SYSLOG", withKmsg, []uintptr{unix.CAP_SYSLOG}, []string{factKmsg}},
		// The device without CAP_SYSLOG: dmesg_restrict refuses.
		{"pod-device-none", withKmsg, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cg := deviceCgroup(t, "captest-"+tc.name, tc.devices)
			got := runExporter(t, tc.caps, cg, 21240+i, vmaPid, "",
				"--no-collector.netdev", "--no-collector.ethtool", "--no-collector.infiniband",
				"--no-collector.devlink", "--no-collector.vma", "--no-collector.xlio", "--no-collector.applog", "--no-collector.phy")
			checkFacts(t, tc.want, got)
		})
	}
}

func checkFacts(t *testing.T, want, got []string) {
	t.Helper()
	slices.Sort(want)
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("facts (-want +got):\n%s", diff)
	}
}

// setUpGuest creates what the collectors read: a netdevsim devlink device
// whose dummy reporter stays in error, a veth pair with an rxe device on
// it, a network namespace with a veth pair, a documented mlx5 line in the
// kernel log with kernel.dmesg_restrict=1, and a VMA log file only root
// can read.
func setUpGuest(t *testing.T) {
	t.Helper()
	if !guest.InGuest() {
		t.Fatal("setting up the kernel log, netdevsim and sysctls outside the qemu guest")
	}
	write := func(path, s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatalf("writing %s: %v", path, err)
		}
	}
	write("/proc/sys/kernel/dmesg_restrict", "1\n")
	write("/sys/bus/netdevsim/new_device", "10 1")
	waitFor(t, breakHealth)
	run(t, "devlink", "health", "set", "netdevsim/netdevsim10", "reporter", "dummy", "auto_recover", "false")
	write(breakHealth, "captest")

	run(t, "ip", "link", "add", "capv0", "type", "veth", "peer", "name", "capv1")
	run(t, "ip", "link", "set", "capv0", "up")
	run(t, "ip", "link", "set", "capv1", "up")
	run(t, "rdma", "link", "add", "rxe0", "type", "rxe", "netdev", "capv0")
	run(t, "ip", "netns", "add", "capns")
	run(t, "ip", "-n", "capns", "link", "add", "capn0", "type", "veth", "peer", "name", "capn1")
	run(t, "ip", "-n", "capns", "link", "set", "capn0", "up")

	write("/dev/kmsg", "<3>mlx5_core 0000:08:00.0: poll_health:801:(pid 0): device's health compromised - reached miss count\n")

	if err := os.MkdirAll("/var/log/vma", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("/var/log/vma/app.log", []byte(vmaLogLine), 0o600); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(testenv.HangGuard)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear", path)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func run(t *testing.T, tool string, args ...string) {
	t.Helper()
	out, err := exec.Command(filepath.Join(guest.ToolDir, tool), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", tool, strings.Join(args, " "), err, out)
	}
}

// startPublisher runs this test binary as a VMA application of uid and
// gid 1000 and returns its pid once its statistics file is mapped.
func startPublisher(t *testing.T) int {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), publisherVar+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 1000, Gid: 1000, Groups: []uint32{}}}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("VMA publisher: %q, %v", line, err)
	}
	return cmd.Process.Pid
}

// lockedBuffer is a bytes.Buffer the exporter writes to while the test
// may read it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// runExporter runs nic_exporter as uid and gid 65534 with exactly caps as
// its permitted, effective and ambient capabilities, in the cgroup whose
// directory cgroupFD is (none when it is negative), waits until every
// enabled collector has reported and any capture is written, and returns
// the facts its scrape and capture directory show.
func runExporter(t *testing.T, caps []uintptr, cgroupFD, port, vmaPid int, captures string, args ...string) []string {
	t.Helper()
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(exporterPath, append([]string{"--web.listen-address=" + addr}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential:  &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}},
		AmbientCaps: caps,
	}
	if cgroupFD >= 0 {
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = cgroupFD
	}
	var stderr lockedBuffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(testenv.HangGuard):
			_ = cmd.Process.Kill()
			<-exited
		}
		t.Logf("exporter log:\n%s", stderr.String())
	}()

	// The exporter's ten collectors on by default: netdev, ethtool,
	// infiniband, devlink, vma, xlio, kmsg, applog, phy, topology
	// (daemon/collectors.go; fabric is off by default). Until
	// each has polled once it has no collector_up series.
	enabled := 10
	for _, a := range args {
		if strings.HasPrefix(a, "--no-collector.") {
			enabled--
		}
	}
	var body string
	deadline := time.Now().Add(90 * time.Second)
	for {
		select {
		case <-exited:
			t.Logf("the exporter exited: %s", cmd.ProcessState)
			return []string{factExited}
		default:
		}
		body = scrape(addr)
		up := strings.Count(body, "\nnic_exporter_collector_up{")
		if up > enabled {
			// A collector added to the defaults: waiting for the
			// count would only run into the deadline.
			t.Fatalf("%d nic_exporter_collector_up series, more than the %d collectors this test counts as on by default; update enabled", up, enabled)
		}
		ready := up == enabled
		if ready && captures != "" {
			entries, _ := os.ReadDir(captures)
			ready = len(entries) > 0
		}
		if ready || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	// Read now, not right after the start: the kernel commits the new
	// credentials late in execve, after the parent may already run.
	checkCapabilities(t, cmd.Process.Pid, caps)
	// The applog collector follows its files from their end, like tail -f:
	// give it a new line to read.
	f, err := os.OpenFile("/var/log/vma/app.log", os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(vmaLogLine); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// A new error of the dummy reporter: the kernel notifies the devlink
	// multicast group, which the collector subscribes to.
	if captures != "" {
		if err := os.WriteFile(breakHealth, []byte("captest"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// One more poll round for the collectors that export on their second
	// poll or after their event reader started.
	time.Sleep(6 * time.Second)
	body = scrape(addr)
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "nic_exporter_collector_up{") {
			t.Log(l)
		}
	}

	var facts []string
	has := func(fact string, parts ...string) {
		for _, l := range strings.Split(body, "\n") {
			ok := true
			for _, p := range parts {
				ok = ok && strings.Contains(l, p)
			}
			if ok {
				facts = append(facts, fact)
				return
			}
		}
	}
	has(factNetdev, "nic_netdev_", `device="capv0"`)
	if slices.Contains(args, "--collector.ethtool.netns=/run/netns/capns") {
		has(factNetns, "nic_ethtool_", `device="capn0"`)
	} else {
		has(factEthtool, "nic_ethtool_", `device="capv0"`)
	}
	has(factInfiniBand, "nic_infiniband_", `device="rxe0"`)
	has(factDevlink, "nic_devlink_health_reporter_healthy{", `reporter="dummy"`, "} 0")
	has(factInfo, "nic_devlink_info{", "netdevsim10")
	has(factEvent, "nic_devlink_health_events_total{", `reporter="dummy"`, `state="error"`)
	has(factKmsg, "nic_kernel_log_events_total{", `event="mlx5_health_compromised"`)
	has(factVMA, "nic_vma_process_info{", `pid="`+strconv.Itoa(vmaPid)+`"`)
	has(factHandshake, "nic_vma_reader_handshake{", `pid="`+strconv.Itoa(vmaPid)+`"`, "} 1")
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "nic_app_log_lines_total{") && !strings.HasSuffix(l, " 0") {
			facts = append(facts, factApplog)
			break
		}
	}
	if captures != "" && diagnosed(t, captures) {
		facts = append(facts, factDiagnose)
	}
	return facts
}

// checkCapabilities fails the test unless the process runs as uid 65534
// with exactly caps effective, read from its /proc status.
func checkCapabilities(t *testing.T, pid int, caps []uintptr) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	var want uint64
	for _, c := range caps {
		want |= 1 << c
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) >= 2 && f[0] == "Uid:" && f[1] != "65534":
			t.Errorf("exporter runs as uid %s, want 65534", f[1])
		case len(f) == 2 && f[0] == "CapEff:":
			got, err := strconv.ParseUint(f[1], 16, 64)
			if err != nil || got != want {
				t.Errorf("exporter's effective capabilities %s, want %016x", f[1], want)
			}
		}
	}
}

func scrape(addr string) string {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return "\n" + string(b)
}

// diagnosed reports whether an evidence file in dir holds diagnose and
// dump output rather than their errors; it logs what the files say.
func diagnosed(t *testing.T, dir string) bool {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	ok := false
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var ev struct {
			Diagnose      json.RawMessage `json:"diagnose"`
			DiagnoseError string          `json:"diagnose_error"`
			Dump          json.RawMessage `json:"dump"`
			DumpError     string          `json:"dump_error"`
		}
		if err := json.Unmarshal(b, &ev); err != nil {
			t.Errorf("evidence file %s: %v", e.Name(), err)
			continue
		}
		t.Logf("evidence file %s: diagnose error %q, dump error %q", e.Name(), ev.DiagnoseError, ev.DumpError)
		if ev.DiagnoseError == "" && ev.DumpError == "" && len(ev.Diagnose) > 0 && len(ev.Dump) > 0 {
			ok = true
		}
	}
	return ok
}
