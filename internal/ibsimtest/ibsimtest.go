//go:build linux

// Package ibsimtest runs a simulated InfiniBand fabric for tests: Debian's
// ibsim (ibsim-utils) with a generated topology, brought up by one run of
// OpenSM (opensm --once) under libumad2sim so that ports have LIDs and
// switches have routes, plus the infiniband-diags tools run against it
// the same way. Everything it starts runs in its own process group and is
// killed, and its directory removed, by the test's cleanup; the processes
// also get SIGKILL if the test process dies first (Pdeathsig), since an
// orphaned ibsim spins on its closed console.
//
// ibsim has only 10 client slots and never frees one whose client
// vanished without detaching, so tests share one Fabric per package run
// or per test, and every tool run here detaches when it exits.
package ibsimtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// preloadGlob finds libumad2sim, which makes libibumad's users (opensm
// and the diags) talk to ibsim instead of /dev/infiniband, in Debian's
// multiarch library directory of any architecture.
const preloadGlob = "/usr/lib/*/umad2sim/libumad2sim.so"

// Topology describes a two-level fat tree: Leaves leaf switches with
// HostsPerLeaf single-port HCAs each, and Spines spine switches, each
// linked to every leaf by UplinksPerSpine cables. Switches have Ports
// ports (36 if zero). Names are leafN, spineN and hcaN, numbered from 1;
// hca1 is the first node in the net file, ibsim's default attach point
// and the port OpenSM runs on.
type Topology struct {
	Leaves, Spines, HostsPerLeaf, UplinksPerSpine int
	Ports                                         int
	// SpinePorts is the spines' port count when it differs from Ports
	// (a spine needs Leaves*UplinksPerSpine ports).
	SpinePorts int
}

// Small is the fabric of shared/fabric/README.md: 2 leaves of 4 hosts and
// one spine with 2 cables to each leaf.
var Small = Topology{Leaves: 2, Spines: 1, HostsPerLeaf: 4, UplinksPerSpine: 2}

// Link is one cable of a topology.
type Link struct {
	ANode string
	APort int
	BNode string
	BPort int
}

// Links returns every cable of the topology, host links first.
func (tp Topology) Links() []Link {
	ports := tp.ports()
	var out []Link
	h := 0
	for l := 1; l <= tp.Leaves; l++ {
		for i := 1; i <= tp.HostsPerLeaf; i++ {
			h++
			out = append(out, Link{fmt.Sprintf("hca%d", h), 1, fmt.Sprintf("leaf%d", l), i})
		}
	}
	for s := 1; s <= tp.Spines; s++ {
		for l := 1; l <= tp.Leaves; l++ {
			for u := 0; u < tp.UplinksPerSpine; u++ {
				leafPort := ports - (s-1)*tp.UplinksPerSpine - u
				spinePort := (l-1)*tp.UplinksPerSpine + u + 1 // spine ports 1..Leaves*UplinksPerSpine
				out = append(out, Link{fmt.Sprintf("leaf%d", l), leafPort, fmt.Sprintf("spine%d", s), spinePort})
			}
		}
	}
	return out
}

func (tp Topology) ports() int {
	if tp.Ports == 0 {
		return 36
	}
	return tp.Ports
}

// NetFile renders the topology in ibsim's net file format (the
// ibnetdiscover format): one record per node, its connected ports below.
func (tp Topology) NetFile() string {
	peers := map[string]map[int]string{}
	add := func(a string, ap int, b string, bp int) {
		if peers[a] == nil {
			peers[a] = map[int]string{}
		}
		peers[a][ap] = fmt.Sprintf("%q[%d]", b, bp)
	}
	for _, l := range tp.Links() {
		add(l.ANode, l.APort, l.BNode, l.BPort)
		add(l.BNode, l.BPort, l.ANode, l.APort)
	}
	var b strings.Builder
	record := func(kind string, ports int, name string) {
		fmt.Fprintf(&b, "%s\t%d %q\n", kind, ports, name)
		for p := 1; p <= ports; p++ {
			if peer, ok := peers[name][p]; ok {
				fmt.Fprintf(&b, "[%d]\t%s\n", p, peer)
			}
		}
		b.WriteString("\n")
	}
	for h := 1; h <= tp.Leaves*tp.HostsPerLeaf; h++ {
		record("Hca", 1, fmt.Sprintf("hca%d", h))
	}
	for l := 1; l <= tp.Leaves; l++ {
		record("Switch", tp.ports(), fmt.Sprintf("leaf%d", l))
	}
	spinePorts := tp.SpinePorts
	if spinePorts == 0 {
		spinePorts = tp.ports()
	}
	for s := 1; s <= tp.Spines; s++ {
		record("Switch", spinePorts, fmt.Sprintf("spine%d", s))
	}
	return b.String()
}

// Fabric is a running ibsim with its subnet brought up.
type Fabric struct {
	// Dir holds the net file, ibsim's output and OpenSM's files.
	Dir string
	// SockName is ibsim's socket base name (IBSIM_SOCKNAME), unique to
	// this Fabric so that tests and other users of ibsim do not meet.
	SockName string
	// Topology is the simulated fabric.
	Topology Topology
	// Preload is the libumad2sim.so the tools run with.
	Preload string

	cmd     *exec.Cmd
	console *os.File
	out     *syncBuffer
	mu      sync.Mutex // one console command at a time
}

var fabrics atomic.Int32

// Start starts ibsim with tp and runs OpenSM once. It skips the test when
// ibsim, opensm or libumad2sim is missing (and fails it in CI).
func Start(t testing.TB, tp Topology) *Fabric {
	t.Helper()
	ibsim := testenv.LookPath(t, "ibsim")
	lookSbin(t, "opensm")
	preload, _ := filepath.Glob(preloadGlob)
	testenv.Require(t, len(preload) > 0, preloadGlob+" (Debian package libumad2sim0)")

	f := &Fabric{
		Dir:      t.TempDir(),
		SockName: fmt.Sprintf("nicexp%d-%d", os.Getpid(), fabrics.Add(1)),
		Topology: tp,
		Preload:  preload[0],
		out:      &syncBuffer{},
	}
	net := filepath.Join(f.Dir, "net")
	if err := os.WriteFile(net, []byte(tp.NetFile()), 0o644); err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	f.console = w
	f.cmd = exec.Command(ibsim, "-s", net)
	f.cmd.Dir = f.Dir
	f.cmd.Env = append(os.Environ(), "IBSIM_SOCKNAME="+f.SockName)
	f.cmd.Stdin = r
	f.cmd.Stdout = f.out
	f.cmd.Stderr = f.out
	f.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := f.cmd.Start(); err != nil {
		t.Fatalf("starting ibsim: %v", err)
	}
	r.Close()
	t.Cleanup(f.stop)

	// ibsim is ready when its control socket is bound.
	deadline := time.Now().Add(testenv.HangGuard)
	for !f.listening() {
		if time.Now().After(deadline) {
			t.Fatalf("ibsim did not bind @%s:ctl; its output:\n%s", f.SockName, f.out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	f.SweepOnce(t)
	return f
}

// SweepOnce runs one OpenSM sweep (opensm --once): it assigns LIDs and
// programs the switches' routes, for example again after an Unlink, so
// that LID-routed MADs avoid the unplugged cable.
func (f *Fabric) SweepOnce(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testenv.HangGuard)
	defer cancel()
	sm := f.Command(ctx, "", lookSbin(t, "opensm"), "--once", "-f", filepath.Join(f.Dir, "opensm.log"))
	sm.Env = append(sm.Env, "OSM_TMP_DIR="+f.Dir, "OSM_CACHE_DIR="+f.Dir)
	if out, err := sm.CombinedOutput(); err != nil {
		t.Fatalf("opensm --once: %v\n%s\nibsim:\n%s", err, out, f.out.String())
	}
}

// lookSbin finds a tool in $PATH or in /usr/sbin, where Debian installs
// opensm and the diags (not in a normal user's $PATH).
func lookSbin(t testing.TB, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	p := filepath.Join("/usr/sbin", name)
	_, err := os.Stat(p)
	testenv.Require(t, err == nil, name+" in $PATH or /usr/sbin")
	return p
}

// Tool returns the path of an infiniband-diags tool (perfquery,
// smpquery, ibqueryerrors, ...), skipping the test when it is missing.
func Tool(t testing.TB, name string) string {
	t.Helper()
	return lookSbin(t, name)
}

// listening reports whether ibsim's control socket is bound.
func (f *Fabric) listening() bool {
	b, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		return false
	}
	return bytes.Contains(b, []byte(" @"+f.SockName+":ctl@\n")) || bytes.Contains(b, []byte(" @"+f.SockName+":ctl\n"))
}

// Command returns a command that runs a libibumad tool against the
// fabric, attached at node (the default node when empty), in a process
// group of its own that is killed when ctx ends.
func (f *Fabric) Command(ctx context.Context, node, name string, args ...string) *exec.Cmd {
	c := exec.CommandContext(ctx, name, args...)
	c.Dir = f.Dir
	c.Env = append(os.Environ(), "LD_PRELOAD="+f.Preload, "IBSIM_SOCKNAME="+f.SockName, "SIM_HOST="+node)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	c.WaitDelay = time.Second
	return c
}

// Run runs a diags tool attached at node and returns its standard
// output; it fails the test when the tool fails.
func (f *Fabric) Run(t testing.TB, node, tool string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testenv.HangGuard)
	defer cancel()
	c := f.Command(ctx, node, Tool(t, tool), args...)
	var stderr bytes.Buffer
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s%s", tool, strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

// Console sends one command to ibsim's console (PerformanceSet, Unlink,
// ReLink, Error, ...) and waits until ibsim has carried it out, which it
// shows by printing its next prompt.
func (f *Fabric) Console(t testing.TB, command string) string {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	before := f.out.Len()
	prompts := strings.Count(f.out.String(), "sim> ")
	if _, err := f.console.WriteString(command + "\n"); err != nil {
		t.Fatalf("ibsim console: %v", err)
	}
	deadline := time.Now().Add(testenv.HangGuard)
	for strings.Count(f.out.String(), "sim> ") <= prompts {
		if time.Now().After(deadline) {
			t.Fatalf("ibsim did not finish %q; its output:\n%s", command, f.out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	return f.out.String()[before:]
}

// Signal sends sig to ibsim, for example SIGSTOP to make it stop
// answering (a hung fabric) and SIGCONT to resume it.
func (f *Fabric) Signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(f.cmd.Process.Pid, sig); err != nil {
		t.Fatalf("signalling ibsim: %v", err)
	}
}

// StartSM runs OpenSM as a daemon on the fabric's default node until the
// test ends, for the tools that need the subnet administrator
// (ibqueryerrors, perfquery -G). It returns once OpenSM is the master
// (it prints "SUBNET UP" only when its own sweep changed the subnet,
// which opensm --once already configured).
func (f *Fabric) StartSM(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sm := f.Command(ctx, "", lookSbin(t, "opensm"), "-f", filepath.Join(f.Dir, "opensm-daemon.log"))
	sm.Env = append(sm.Env, "OSM_TMP_DIR="+f.Dir, "OSM_CACHE_DIR="+f.Dir)
	out := &syncBuffer{}
	sm.Stdout, sm.Stderr = out, out
	if err := sm.Start(); err != nil {
		cancel()
		t.Fatalf("starting opensm: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		_ = sm.Wait()
	})
	deadline := time.Now().Add(testenv.HangGuard)
	for !strings.Contains(out.String(), "Entering MASTER state") {
		if time.Now().After(deadline) {
			t.Fatalf("opensm did not become the master:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Output returns what ibsim printed so far.
func (f *Fabric) Output() string { return f.out.String() }

// stop kills ibsim's process group and waits for it.
func (f *Fabric) stop() {
	f.console.Close()
	if f.cmd.Process != nil {
		_ = syscall.Kill(-f.cmd.Process.Pid, syscall.SIGKILL)
		err := f.cmd.Wait()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			fmt.Fprintf(os.Stderr, "ibsimtest: waiting for ibsim: %v\n", err)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and many readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Len()
}
