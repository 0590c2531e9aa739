package xliostats_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nic-exporter/nic_exporter/internal/testenv"
	"github.com/nic-exporter/nic_exporter/vmastats"
	"github.com/nic-exporter/nic_exporter/xliostats"
	"github.com/nic-exporter/nic_exporter/xliostats/xliostatstest"
)

var tags = []string{"3.21.2", "3.70.2"}

func golden(t testing.TB, tag, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "golden", tag, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// publishSelf publishes b as this test process's own statistics file in
// a new directory, so the real procfs liveness checks apply to it.
func publishSelf(t *testing.T, b []byte) (*xliostatstest.Publisher, vmastats.Candidate) {
	t.Helper()
	p, err := xliostatstest.NewPublisher(t.TempDir(), os.Getpid(), b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, vmastats.Candidate{Path: p.Path(), PID: os.Getpid()}
}

// TestLoadHandshake publishes the no-device file exactly as libxlio wrote
// it and has a stand-in for libxlio's timer copy the counters in only
// when reader_counter changes. A read-only Load sees the empty file; a
// Load with the handshake increments reader_counter (at offset 0 for
// 3.21.2, 8408 for 3.70.2) and, after the copy, decodes every block.
func TestLoadHandshake(t *testing.T) {
	for _, tag := range tags {
		t.Run(tag, func(t *testing.T) {
			full := golden(t, tag, "xliostat.bin")
			pub, c := publishSelf(t, golden(t, tag, "xliostat-nodevice.bin"))

			l, err := xliostats.Load(c, vmastats.LoadOptions{NoHandshake: true})
			if err != nil {
				t.Fatal(err)
			}
			if l.Handshake || pub.ReaderCounter() != 0 || len(l.Stats.Sockets) != 0 {
				t.Fatalf("read-only: handshake %v, reader_counter %d, %d sockets", l.Handshake, pub.ReaderCounter(), len(l.Stats.Sockets))
			}
			if l.Process.PID != os.Getpid() || l.Process.StartTicks == 0 {
				t.Errorf("process %+v", l.Process)
			}

			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { defer wg.Done(); pub.Serve(ctx, time.Millisecond, func() []byte { return full }) }()
			t.Cleanup(func() { cancel(); wg.Wait() })

			// Each Load asks once; the copy comes on the next tick. On a
			// busy machine the settle time may pass first, so Load again
			// (asking again) until the counters are there.
			deadline := time.Now().Add(testenv.HangGuard)
			loads := 0
			for {
				l, err = xliostats.Load(c, vmastats.LoadOptions{Settle: 20 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				loads++
				if !l.Handshake {
					t.Fatal("no handshake on a file this process owns")
				}
				if len(l.Stats.Sockets) == 4 || time.Now().After(deadline) {
					break
				}
			}
			if len(l.Stats.Sockets) != 4 || len(l.Stats.Rings) != 2 {
				t.Fatalf("after %d handshakes: %d sockets, %d rings", loads, len(l.Stats.Sockets), len(l.Stats.Rings))
			}
			if got := pub.ReaderCounter(); got != int32(loads) {
				t.Errorf("reader_counter %d after %d handshakes", got, loads)
			}
			cancel()
			wg.Wait()
			// The file is the library's bytes but for reader_counter.
			rc := l.Stats.Layout.ReaderCounterOffset()
			got, err := os.ReadFile(c.Path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got[:rc], full[:rc]) || !bytes.Equal(got[rc+4:], full[rc+4:]) {
				t.Error("the file changed beyond reader_counter")
			}
			if binary.LittleEndian.Uint32(got[rc:]) != uint32(loads) {
				t.Errorf("reader_counter bytes at %d: %x", rc, got[rc:rc+4])
			}
		})
	}
}

// TestLoadWritesOnlyTheReaderCounter loads a file without anyone to copy
// counters: the single write is the increment.
func TestLoadWritesOnlyTheReaderCounter(t *testing.T) {
	for _, tag := range tags {
		full := golden(t, tag, "xliostat.bin")
		pub, c := publishSelf(t, full)
		if _, err := xliostats.Load(c, vmastats.LoadOptions{}); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(pub.Path())
		if err != nil {
			t.Fatal(err)
		}
		want := append([]byte(nil), full...)
		h, _ := xliostats.Identify(full)
		binary.LittleEndian.PutUint32(want[h.Layout.ReaderCounterOffset():], 1)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: the file differs from the library's beyond reader_counter+1", tag)
		}
	}
}

func TestLoadRefusesSymlinks(t *testing.T) {
	pub, _ := publishSelf(t, golden(t, "3.70.2", "xliostat.bin"))
	dir := t.TempDir()
	passwd, err := os.ReadFile("/etc/passwd")
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{"/etc/passwd", pub.Path()} {
		link := filepath.Join(dir, xliostats.FilePrefix+strconv.Itoa(os.Getpid()))
		os.Remove(link)
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		_, err := xliostats.Load(vmastats.Candidate{Path: link, PID: os.Getpid()}, vmastats.LoadOptions{})
		if !errors.Is(err, vmastats.ErrRefused) || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("link to %s: %v, want refused as a symbolic link", target, err)
		}
	}
	if pub.ReaderCounter() != 0 {
		t.Error("reader_counter was bumped through a symbolic link")
	}
	if after, _ := os.ReadFile("/etc/passwd"); !bytes.Equal(after, passwd) {
		t.Error("/etc/passwd changed")
	}
}

func TestLoadForeignOwner(t *testing.T) {
	testenv.Root(t)
	pub, c := publishSelf(t, golden(t, "3.21.2", "xliostat.bin"))
	const nobody = 65534
	if err := os.Chown(pub.Path(), nobody, nobody); err != nil {
		t.Fatal(err)
	}
	_, err := xliostats.Load(c, vmastats.LoadOptions{})
	if !errors.Is(err, vmastats.ErrRefused) || !strings.Contains(err.Error(), "file owner uid 65534") {
		t.Errorf("file owned by nobody for a root process: %v", err)
	}
	if pub.ReaderCounter() != 0 {
		t.Error("reader_counter written in a refused file")
	}
}

func TestLoadDeadAndForeignPID(t *testing.T) {
	dir := t.TempDir()
	b := golden(t, "3.70.2", "xliostat.bin")
	// A process that has exited (after SIGTERM or a crash libxlio leaves
	// its file): stale, and left in place.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := cmd.Process.Pid
	deadPath := filepath.Join(dir, xliostats.FilePrefix+strconv.Itoa(dead))
	if err := os.WriteFile(deadPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := xliostats.Load(vmastats.Candidate{Path: deadPath, PID: dead}, vmastats.LoadOptions{}); !errors.Is(err, vmastats.ErrStale) {
		t.Errorf("dead pid %d: %v", dead, err)
	}
	if after, err := os.ReadFile(deadPath); err != nil || !bytes.Equal(after, b) {
		t.Errorf("stale file removed or changed: %v", err)
	}

	// A live process of the same user that does not map the file: a file
	// planted under its pid.
	sleep := exec.Command("sleep", "30")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sleep.Process.Kill(); sleep.Wait() })
	deadline := time.Now().Add(testenv.HangGuard)
	for time.Now().Before(deadline) {
		if c, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", sleep.Process.Pid)); string(c) == "sleep\n" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	foreign := filepath.Join(dir, xliostats.FilePrefix+strconv.Itoa(sleep.Process.Pid))
	if err := os.WriteFile(foreign, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := xliostats.Load(vmastats.Candidate{Path: foreign, PID: sleep.Process.Pid}, vmastats.LoadOptions{})
	if !errors.Is(err, vmastats.ErrRefused) || !strings.Contains(err.Error(), "does not map this file") {
		t.Errorf("file not mapped by its pid: %v", err)
	}
	if after, _ := os.ReadFile(foreign); !bytes.Equal(after, b) {
		t.Error("reader_counter written in a planted file")
	}
}

// TestLoadRefusesUnknownLayoutUnwritten: a file whose layout is unknown
// is refused with the reason, and reader_counter is not touched.
func TestLoadRefusesUnknownLayoutUnwritten(t *testing.T) {
	// Map it, as libxlio does, so the liveness checks pass.
	pubDir := t.TempDir()
	pub, err := xliostatstest.NewPublisher(pubDir, os.Getpid(), golden(t, "3.21.2", "xliostat.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	_, err = xliostats.Load(vmastats.Candidate{Path: pub.Path(), PID: os.Getpid()}, vmastats.LoadOptions{NoHandshake: true})
	if err != nil {
		t.Fatal(err)
	}
	// Overwrite the protocol in the mapped file.
	bad := golden(t, "3.21.2", "xliostat.bin")
	copy(bad[8:], "0123456789abcdef0123456789abcdef")
	if err := pub.Copy(bad); err != nil {
		t.Fatal(err)
	}
	_, err = xliostats.Load(vmastats.Candidate{Path: pub.Path(), PID: os.Getpid()}, vmastats.LoadOptions{})
	if !errors.Is(err, xliostats.ErrUnsupported) || !strings.Contains(err.Error(), "unknown protocol 0123456789abcdef0123456789abcdef at 8") {
		t.Errorf("unknown layout: %v", err)
	}
	if pub.ReaderCounter() != 0 {
		t.Error("reader_counter written in a file of unknown layout")
	}
}

// TestLoadWhileOthersRead: other readers (xlio_stats, a second
// exporter) bump reader_counter at any time. For 3.70.2 it sits at 8408,
// in the middle of the file; the stable-read comparison must leave it
// out there too, or every Load would fail as unstable.
func TestLoadWhileOthersRead(t *testing.T) {
	full := golden(t, "3.70.2", "xliostat.bin")
	pub, c := publishSelf(t, full)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			if _, err := xliostats.Load(c, vmastats.LoadOptions{}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	defer func() { cancel(); wg.Wait() }()
	for i := 0; i < 50; i++ {
		l, err := xliostats.Load(c, vmastats.LoadOptions{NoHandshake: true})
		if err != nil {
			t.Fatalf("load %d while another reader bumps reader_counter: %v", i, err)
		}
		if len(l.Stats.Sockets) != 4 {
			t.Fatalf("%d sockets", len(l.Stats.Sockets))
		}
	}
	if pub.ReaderCounter() == 0 {
		t.Log("the other reader did not get to bump reader_counter")
	}
}

// TestScannerFindsXLIOFiles: the shared bounded scanner with libxlio's
// prefix finds the live file and counts the dead one, and ignores the
// other library's name.
func TestScannerFindsXLIOFiles(t *testing.T) {
	pub, _ := publishSelf(t, golden(t, "3.70.2", "xliostat-nodevice.bin"))
	dir := filepath.Dir(pub.Path())
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{xliostats.FilePrefix + strconv.Itoa(cmd.Process.Pid), vmastats.FilePrefix + strconv.Itoa(os.Getpid()), "xliostat.x"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sc := vmastats.NewScanner(vmastats.ScannerConfig{Dirs: []string{dir}, Prefix: xliostats.FilePrefix, Liveness: vmastats.NewProcLiveness("/proc")})
	got, err := sc.Scan(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Candidates) != 1 || got.Candidates[0].Path != pub.Path() || got.Stale != 1 {
		t.Errorf("scan: %+v", got)
	}
}
