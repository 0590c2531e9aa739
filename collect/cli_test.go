package collect_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nic-exporter/nic_exporter/collect"
	"github.com/nic-exporter/nic_exporter/diagnose"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// TestMainDemo runs the subcommand on the demo host into an archive,
// with the exporter's /metrics served on loopback, and reads the archive
// back.
func TestMainDemo(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("# TYPE nic_exporter_build_info gauge\nnic_exporter_build_info 1\n"))
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	out := filepath.Join(t.TempDir(), "demo.tar.gz")
	var stdout, stderr bytes.Buffer
	code := collect.Main([]string{"--demo", "--demo.faults=pcie_degraded@0s", "--interval=100ms", "--timeout=1m",
		"--url=http://" + ln.Addr().String() + "/metrics", "--out=" + out}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, stdout.String(), stderr.String())
	}
	b, err := diagnose.Open(out, diagnose.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, f := range b.Files {
		files[f.Name] = f.Data
	}
	for _, n := range []string{"metrics.txt", "earlier_sample/metrics.txt", "pci_sysfs.txt", "manifest.json"} {
		if _, ok := files[n]; !ok {
			t.Errorf("no %s in the archive", n)
		}
	}
	var m collect.Manifest
	if err := json.Unmarshal(files["manifest.json"], &m); err != nil {
		t.Fatal(err)
	}
	if m.Host != "demo" || len(m.Samples) != 2 || m.Samples[0].UptimeSeconds == nil {
		t.Errorf("manifest %+v", m)
	}
	for _, bad := range [][]string{{"--interval=1m", "--timeout=1m"}, {"--demo.faults=nonsense@0s", "--demo"}, {"--demo.faults=fw@0s"}} {
		if code := collect.Main(append(bad, "--out="+filepath.Join(t.TempDir(), "x")), &stdout, &stderr); code != 2 {
			t.Errorf("%v: exit %d, want 2", bad, code)
		}
	}
}

// TestCollectAsUser runs the built command as uid 65534 on this host:
// it writes a bundle with what that user can read, and the manifest
// says why the rest could not be read.
func TestCollectAsUser(t *testing.T) {
	testenv.Root(t)
	setpriv := testenv.LookPath(t, "setpriv")
	bin, cleanup, err := testenv.BuildExporter("../cmd/nic_exporter")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	// The build directory and the output directory must be open to the
	// user.
	if err := os.Chmod(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "nic_exporter-collect-user-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "bundle.tar.gz")
	ctx, cancel := context.WithTimeout(context.Background(), testenv.HangGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
		bin, "collect", "--interval=100ms", "--timeout=1m", "--url=", "--out="+out)
	msg, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("collect as uid 65534: %v\n%s", err, msg)
	}
	b, err := diagnose.Open(out, diagnose.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	var m collect.Manifest
	for _, f := range b.Files {
		if f.Name == collect.ManifestFile {
			if err := json.Unmarshal(f.Data, &m); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, u := range m.Unreadable {
		t.Logf("not read as uid 65534: %s: %s", u.Source, u.Reason)
		if u.Reason == "" {
			t.Errorf("%s: no reason", u.Source)
		}
	}
	restrict, _ := os.ReadFile("/proc/sys/kernel/dmesg_restrict")
	if strings.TrimSpace(string(restrict)) == "1" {
		found := false
		for _, u := range m.Unreadable {
			found = found || u.Source == "/dev/kmsg" && (strings.Contains(u.Reason, "permission denied") || strings.Contains(u.Reason, "not permitted"))
		}
		if !found {
			t.Errorf("kernel.dmesg_restrict is 1 but the manifest does not say /dev/kmsg was refused: %+v", m.Unreadable)
		}
	}
}
