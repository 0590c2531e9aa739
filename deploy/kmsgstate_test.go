package deploy

import (
	"os"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// kmsgStateFlag is the flag that keeps the kernel log counters across
// restarts (README "Kernel log across exporter restarts").
const kmsgStateFlag = "--collector.kmsg.state-file="

// TestSystemdKmsgStateFile checks that the unit saves the kernel log
// state in its own StateDirectory, which systemd creates writable for the
// service's user under ProtectSystem=strict.
func TestSystemdKmsgStateFile(t *testing.T) {
	b, err := os.ReadFile(systemdUnit)
	if err != nil {
		t.Fatal(err)
	}
	var stateDir, stateFile string
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "StateDirectory="); ok {
			stateDir = "/var/lib/" + strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "ExecStart="); ok {
			for _, f := range strings.Fields(v) {
				if p, ok := strings.CutPrefix(f, kmsgStateFlag); ok {
					stateFile = p
				}
			}
		}
	}
	if stateDir == "" || stateFile == "" {
		t.Fatalf("StateDirectory %q, state file %q: want both", stateDir, stateFile)
	}
	if path.Dir(stateFile) != stateDir {
		t.Errorf("state file %s is not in the StateDirectory %s, the only place the unit may write", stateFile, stateDir)
	}
}

// TestHelmKernelLogStateDir checks the kernelLog.stateDir value: another
// node directory moves the hostPath only, an empty one drops the mount
// and the flag (and leaves /dev/kmsg), and paths are refused where the
// chart does not mount them.
func TestHelmKernelLogStateDir(t *testing.T) {
	base := privilegesOf(t, helmTemplate(t).daemonSet)

	moved := privilegesOf(t, helmTemplate(t, "kernelLog.enabled=true", "kernelLog.stateDir=/srv/nic").daemonSet)
	want := base.clone()
	wantKernelLog(&want)
	delete(want.HostPaths, "/var/lib/nic_exporter")
	want.HostPaths["/srv/nic"] = "rw /var/lib/nic_exporter"
	if diff := cmp.Diff(want, moved); diff != "" {
		t.Errorf("stateDir=/srv/nic (-want +got):\n%s", diff)
	}

	r := helmTemplate(t, "kernelLog.enabled=true", "kernelLog.stateDir=")
	off := privilegesOf(t, r.daemonSet)
	want = base.clone()
	wantKernelLog(&want)
	delete(want.HostPaths, "/var/lib/nic_exporter")
	want.Args = slices.DeleteFunc(want.Args, func(a string) bool { return strings.HasPrefix(a, kmsgStateFlag) })
	if diff := cmp.Diff(want, off); diff != "" {
		t.Errorf("stateDir empty (-want +got):\n%s", diff)
	}
	checkVolumes(t, r.daemonSet)
	checkArgs(t, container(t, r.daemonSet).Args)

	for _, bad := range [][]string{
		{"kernelLog.enabled=true", "kernelLog.stateDir=relative/dir"},
		{"collectors.kmsg.flags.state-file=/tmp/kmsg.state"},
	} {
		args := []string{"template", "nic-exporter", helmChart}
		for _, s := range bad {
			args = append(args, "--set", s)
		}
		if out, err := helmRun(args...); err == nil {
			t.Errorf("helm template with %v succeeded, want a refusal:\n%.300s", bad, out)
		}
	}
}
