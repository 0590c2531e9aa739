package vma

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/internal/testenv"
	"github.com/nic-exporter/nic_exporter/xliostats"
	"github.com/nic-exporter/nic_exporter/xliostats/xliostatstest"
)

// TestXLIOLiveHandshakeAndFileStates publishes the real 3.70.2 no-device
// file for this test process, with a stand-in for libxlio's timer that
// copies the golden counters in only after reader_counter changes, beside
// a planted symlink, a file of a dead process and (as root) a file of
// another owner. The collector, with the real procfs checks, must
// export the live process with its counters after its handshakes, and
// count the others as refused and stale without reading them.
func TestXLIOLiveHandshakeAndFileStates(t *testing.T) {
	dir := t.TempDir()
	empty, err := os.ReadFile(filepath.Join(xlioGoldenDir, "3.70.2", "xliostat-nodevice.bin"))
	if err != nil {
		t.Fatal(err)
	}
	full, err := os.ReadFile(filepath.Join(xlioGoldenDir, "3.70.2", "xliostat.bin"))
	if err != nil {
		t.Fatal(err)
	}
	pub, err := xliostatstest.NewPublisher(dir, os.Getpid(), empty)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); pub.Serve(ctx, time.Millisecond, func() []byte { return full }) }()
	defer func() { cancel(); wg.Wait() }()

	// A symlink named for a live pid (init) pointing at /etc/passwd.
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, xliostats.FilePrefix+"1")); err != nil {
		t.Fatal(err)
	}
	// A file left by a process that is gone.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, xliostats.FilePrefix+strconv.Itoa(dead.Process.Pid)), full, 0o644); err != nil {
		t.Fatal(err)
	}
	wantRefused := 1.0
	if os.Geteuid() == 0 {
		// A file of another owner, named for a live process of root.
		sleep := exec.Command("sleep", "30")
		if err := sleep.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sleep.Process.Kill(); sleep.Wait() })
		foreign := filepath.Join(dir, xliostats.FilePrefix+strconv.Itoa(sleep.Process.Pid))
		if err := os.WriteFile(foreign, full, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(foreign, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		wantRefused = 2
	}

	c := NewXLIO(XLIOConfig{Dirs: []string{dir}}, zap.NewNop())
	deadline := time.Now().Add(testenv.HangGuard)
	var ss []sample
	var text string
	for {
		text, _, err = poll(t, c)
		if err != nil {
			t.Fatal(err)
		}
		ss = parseSamples(t, text)
		if strings.Contains(text, "nic_xlio_socket_packets_total") && get(t, ss, "nic_xlio_socket_packets_total", "direction", "rx", "path", "offload") > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no counters after the handshakes:\n%s", text)
		}
	}
	for state, want := range map[string]float64{"live": 1, "stale": 1, "refused": wantRefused, "unsupported": 0, "error": 0} {
		if got := get(t, ss, "nic_xlio_files", "state", state); got != want {
			t.Errorf("state %s: %v, want %v", state, got, want)
		}
	}
	me := strconv.Itoa(os.Getpid())
	if get(t, ss, "nic_xlio_reader_handshake", "pid", me) != 1 || get(t, ss, "nic_xlio_process_info", "pid", me, "layout", "G2+utls") != 1 {
		t.Error("live process series")
	}
	if pub.ReaderCounter() == 0 || pub.Copies() == 0 {
		t.Errorf("reader_counter %d, %d copies", pub.ReaderCounter(), pub.Copies())
	}
	if strings.Contains(text, "root:") {
		t.Error("/etc/passwd content exported")
	}
}

// TestXLIONoHandshakeWritesNothing: with NoHandshake the collector reads
// what is there (the empty file libxlio wrote) and writes nothing.
func TestXLIONoHandshakeWritesNothing(t *testing.T) {
	dir := t.TempDir()
	empty, err := os.ReadFile(filepath.Join(xlioGoldenDir, "3.21.2", "xliostat-nodevice.bin"))
	if err != nil {
		t.Fatal(err)
	}
	pub, err := xliostatstest.NewPublisher(dir, os.Getpid(), empty)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	c := NewXLIO(XLIOConfig{Dirs: []string{dir}, NoHandshake: true}, zap.NewNop())
	for i := 0; i < 3; i++ {
		text, _, err := poll(t, c)
		if err != nil {
			t.Fatal(err)
		}
		ss := parseSamples(t, text)
		if get(t, ss, "nic_xlio_reader_handshake") != 0 || get(t, ss, "nic_xlio_sockets", "protocol", "tcp", "offloaded", "true") != 0 {
			t.Errorf("poll %d:\n%s", i, text)
		}
	}
	got, err := os.ReadFile(pub.Path())
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(empty) {
		t.Error("the file changed")
	}
}
