//go:build linux

package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nic-exporter/nic_exporter/internal/testenv"
	"github.com/nic-exporter/nic_exporter/nodehealth"
)

// slurmCluster is a single-node Slurm (munged, slurmctld, slurmd) of a
// test: its own configuration, state, logs and munge socket in a
// temporary directory, its daemons on 127.0.0.1 only, on ports of their
// own. It never reads or changes the host's Slurm or munge setup.
type slurmCluster struct {
	dir  string
	conf string
	env  []string
}

// slurmDaemon starts a Slurm or munge daemon in the foreground in a process
// group of its own, which the test's cleanup ends (SIGTERM, then SIGKILL
// after the hang guard).
func slurmDaemon(t *testing.T, log string, env []string, name string, args ...string) {
	t.Helper()
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(name, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("%s: %v", name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(done)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(testenv.HangGuard):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
}

// freeTCPPort returns a port no one listens on at 127.0.0.1 now.
func freeTCPPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startSlurm starts the cluster with healthCheck as slurmd's
// HealthCheckProgram, run every 2 s, and waits until the node is idle.
func startSlurm(t *testing.T, healthCheck string) *slurmCluster {
	t.Helper()
	for _, tool := range []string{"mungekey", "munged", "slurmctld", "slurmd", "scontrol", "sinfo", "sbatch"} {
		testenv.LookPath(t, tool)
	}
	// slurmd runs jobs as their users and slurmctld here as root
	// (SlurmUser=root), so that the test needs no slurm account.
	testenv.Root(t)
	dir, err := os.MkdirTemp("", "nic-slurm-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	for _, d := range []string{"munge", "ctld", "slurmd", "log"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	c := &slurmCluster{dir: dir, conf: filepath.Join(dir, "slurm.conf")}
	c.env = append(os.Environ(), "SLURM_CONF="+c.conf)
	sock := filepath.Join(dir, "munge", "munge.sock")
	conf := fmt.Sprintf(`ClusterName=nictest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=%d
SlurmdPort=%d
CommunicationParameters=NoInAddrAny,NoCtldInAddrAny
AuthType=auth/munge
AuthInfo=socket=%[3]s
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=%[4]s/ctld
SlurmdSpoolDir=%[4]s/slurmd
SlurmctldPidFile=%[4]s/slurmctld.pid
SlurmdPidFile=%[4]s/slurmd.pid
SlurmctldLogFile=%[4]s/log/slurmctld.log
SlurmdLogFile=%[4]s/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
HealthCheckProgram=%[5]s
HealthCheckInterval=2
HealthCheckNodeState=ANY
NodeName=localhost NodeAddr=127.0.0.1 CPUs=1 RealMemory=100
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
`, freeTCPPort(t), freeTCPPort(t), sock, dir, healthCheck)
	if err := os.WriteFile(c.conf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(dir, "munge", "munge.key")
	if out, err := exec.Command("mungekey", "-c", "-k", key).CombinedOutput(); err != nil {
		t.Fatalf("mungekey: %v\n%s", err, out)
	}
	slurmDaemon(t, filepath.Join(dir, "log", "munged.out"), c.env, "munged", "-F", "--force", "--socket="+sock, "--key-file="+key,
		"--pid-file="+filepath.Join(dir, "munge", "munged.pid"), "--seed-file="+filepath.Join(dir, "munge", "seed"),
		"--log-file="+filepath.Join(dir, "log", "munged.log"))
	waitFor(t, "the munge socket", func() bool { _, err := os.Stat(sock); return err == nil })
	slurmDaemon(t, filepath.Join(dir, "log", "slurmctld.out"), c.env, "slurmctld", "-D", "-f", c.conf)
	slurmDaemon(t, filepath.Join(dir, "log", "slurmd.out"), c.env, "slurmd", "-D", "-f", c.conf, "-N", "localhost")
	waitFor(t, "the Slurm node idle", func() bool { return c.run(t, "sinfo", "-h", "-o", "%T") == "idle" })
	t.Cleanup(func() {
		if t.Failed() {
			for _, l := range []string{"slurmctld.log", "slurmd.log"} {
				b, _ := os.ReadFile(filepath.Join(dir, "log", l))
				t.Logf("%s:\n%s", l, b)
			}
		}
	})
	return c
}

// run runs a Slurm client command of the cluster and returns its
// trimmed output, or "" when it fails.
func (c *slurmCluster) run(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = c.env
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return ""
	}
	return strings.TrimSpace(out.String())
}

// waitFor polls cond until it holds, within the hang guard.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testenv.HangGuard)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within the hang guard", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSlurmDrain runs nic_exporter check as the HealthCheckProgram of a
// real single-node Slurm against a demo exporter with the fw_fatal fault:
// the node is drained with the verdict's reason (sinfo -R), a job
// submitted meanwhile stays pending, and once the fault is over and the
// verdict has held healthy for --health.clear-after the check resumes
// the node and the job runs. It logs the time from the verdict's
// transition (the exporter's own timestamp) to the drain Slurm recorded.
func TestSlurmDrain(t *testing.T) {
	dir := t.TempDir()
	e := &exporter{addr: freePort(t), stderr: &lockedBuffer{}, done: make(chan error, 1)}
	hc := filepath.Join(dir, "healthcheck.sh")
	scontrol := testenv.LookPath(t, "scontrol")
	// The script finds the cluster's slurm.conf next to itself: startSlurm
	// writes it, after the script, into its own directory.
	confLink := filepath.Join(dir, "slurm.conf")
	script := fmt.Sprintf("#!/bin/sh\nexport SLURM_CONF=%s\nexec %s check --url=http://%s --format=nhc --slurm.drain --slurm.resume --slurm.min-drained=0s --slurm.scontrol=%s >>%s 2>&1\n",
		confLink, binary, e.addr, scontrol, filepath.Join(dir, "healthcheck.log"))
	if err := os.WriteFile(hc, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	c := startSlurm(t, hc)
	if err := os.Symlink(c.conf, confLink); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "healthcheck.log"))
			t.Logf("healthcheck.log:\n%s", b)
		}
	})
	// The fault starts once the exporter runs and lasts 20 s: the
	// checks every 2 s see it; then the hold time of 3 s.
	e.cmd = startCmd(t, e, "--demo", "--demo.faults=fw_fatal@2s-22s", "--health.interval=200ms", "--collector.devlink.interval=500ms", "--health.clear-after=3s")
	set := e.waitVerdict(t, "NICFirmwareFatal set", func(v *nodehealth.Verdict) bool {
		return v.Status == nodehealth.VerdictUnhealthy
	})
	setAt := fwFatal(set).LastTransitionTime
	const want = "nic_exporter: NICFirmwareFatal (FirmwareFatalError) on pci/0000:08:00.0, pci/0000:08:00.1"
	var reason string
	waitFor(t, "the node drained", func() bool {
		reason = c.run(t, "sinfo", "-R", "-h", "-o", "%E|%H")
		return strings.HasPrefix(reason, want+"|")
	})
	seen := time.Now()
	if got := c.run(t, "sinfo", "-h", "-o", "%T"); got != "drained" {
		t.Errorf("node state %q, want drained", got)
	}
	// sinfo's %H is the time slurmctld recorded the drain, to the
	// second, in its local time.
	drainedAt, err := time.ParseInLocation("2006-01-02T15:04:05", strings.TrimPrefix(reason, want+"|"), time.Local)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("time to drain: %s from the verdict's transition (%s) until sinfo -R showed the reason (polled every 50 ms); Slurm recorded the drain at %s",
		seen.Sub(setAt).Round(10*time.Millisecond), setAt.Format(time.RFC3339Nano), drainedAt.Format(time.RFC3339))
	if drainedAt.Before(setAt.Truncate(time.Second)) {
		t.Errorf("Slurm recorded the drain at %s, before the verdict's transition at %s", drainedAt, setAt)
	}

	job := c.run(t, "sbatch", "--parsable", "-o", "/dev/null", "--wrap", "true")
	if job == "" {
		t.Fatal("sbatch failed")
	}
	waitFor(t, "the job pending", func() bool { return strings.Contains(c.run(t, "scontrol", "show", "job", job), "JobState=PENDING") })
	if st := c.run(t, "sinfo", "-h", "-o", "%T"); st != "drained" {
		t.Fatalf("the job went pending but the node is %q", st)
	}

	cleared := e.waitVerdict(t, "NICFirmwareFatal cleared", func(v *nodehealth.Verdict) bool { return v.Status == nodehealth.VerdictOK })
	waitFor(t, "the node resumed", func() bool { return c.run(t, "sinfo", "-R", "-h") == "" })
	waitFor(t, "the job run", func() bool { return strings.Contains(c.run(t, "scontrol", "show", "job", job), "JobState=COMPLETED") })
	t.Logf("cleared at %s; the node resumed and job %s completed", fwFatal(cleared).LastTransitionTime.Format(time.RFC3339Nano), job)
}

// TestSlurmKeepsForeignDrain checks that the check leaves a node drained
// by someone else (an administrator) drained when the verdict is ok, and
// does not overwrite its reason.
func TestSlurmKeepsForeignDrain(t *testing.T) {
	dir := t.TempDir()
	hc := filepath.Join(dir, "healthcheck.sh")
	if err := os.WriteFile(hc, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := startSlurm(t, hc)
	e := start(t, "--demo", "--health.interval=200ms")
	e.waitVerdict(t, "ok", func(v *nodehealth.Verdict) bool { return v.Status == nodehealth.VerdictOK })
	if out := c.run(t, "scontrol", "update", "nodename=localhost", "state=drain", "reason=bad DIMM, ticket 42"); out != "" {
		t.Fatalf("scontrol: %s", out)
	}
	waitFor(t, "drained", func() bool { return strings.HasPrefix(c.run(t, "sinfo", "-R", "-h", "-o", "%E"), "bad DIMM") })
	cmd := exec.Command(binary, "check", "--url=http://"+e.addr, "--slurm.drain", "--slurm.resume", "--slurm.min-drained=0s", "--slurm.node=localhost")
	cmd.Env = c.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("check: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "not by nic_exporter; left drained") {
		t.Errorf("check did not say why it left the node:\n%s", out)
	}
	if r := c.run(t, "sinfo", "-R", "-h", "-o", "%E"); r != "bad DIMM, ticket 42" {
		t.Errorf("reason after the check: %q", r)
	}
}
