package vmastats_test

import (
	"bytes"
	"crypto/sha256"
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

	"golang.org/x/sys/unix"

	"github.com/nic-exporter/nic_exporter/internal/testenv"
	"github.com/nic-exporter/nic_exporter/vmastats"
	"github.com/nic-exporter/nic_exporter/vmastats/vmastatstest"
)

// publishSelf publishes s as this test process's own statistics file in
// a new directory, so the real procfs liveness checks apply to it.
func publishSelf(t *testing.T, s *vmastats.Stats) (*vmastatstest.Publisher, vmastats.Candidate) {
	t.Helper()
	dir := t.TempDir()
	p, err := vmastatstest.NewPublisher(dir, os.Getpid(), s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, vmastats.Candidate{Path: p.Path(), PID: os.Getpid()}
}

func TestLoadLiveFileHandshake(t *testing.T) {
	want := vmastatstest.Sample(vmastats.LayoutB)
	pub, c := publishSelf(t, want)
	for i := 1; i <= 3; i++ {
		l, err := vmastats.Load(c, vmastats.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !l.Handshake || pub.ReaderCounter() != int32(i) {
			t.Fatalf("after %d loads: handshake %v, reader_counter %d", i, l.Handshake, pub.ReaderCounter())
		}
		if l.Process.PID != os.Getpid() || l.Process.StartTicks == 0 || l.Process.Comm == "" {
			t.Errorf("process %+v", l.Process)
		}
		if len(l.Stats.Sockets) != 2 || l.Stats.Sockets[1].Counters[vmastats.TxBytes] != want.Sockets[1].Counters[vmastats.TxBytes] {
			t.Errorf("decoded %+v", l.Stats.Sockets)
		}
	}
	// Nothing but the reader counter was written.
	got, err := os.ReadFile(c.Path)
	if err != nil {
		t.Fatal(err)
	}
	enc, _ := vmastatstest.Encode(want)
	if !bytes.Equal(got[4:], enc[4:]) {
		t.Error("the file changed beyond the reader counter")
	}
	// NoHandshake reads without writing.
	if l, err := vmastats.Load(c, vmastats.LoadOptions{NoHandshake: true}); err != nil || l.Handshake || pub.ReaderCounter() != 3 {
		t.Errorf("NoHandshake: %v, counter %d", err, pub.ReaderCounter())
	}
}

// TestLoadRawAndMaxSize checks that Load returns the bytes it decoded
// (the file as it is after the handshake) and that a file above
// LoadOptions.MaxSize is refused before a byte of it is read or written.
func TestLoadRawAndMaxSize(t *testing.T) {
	pub, c := publishSelf(t, vmastatstest.Sample(vmastats.LayoutB))
	st, err := os.Stat(c.Path)
	if err != nil {
		t.Fatal(err)
	}
	l, err := vmastats.Load(c, vmastats.LoadOptions{MaxSize: st.Size()})
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(c.Path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(l.Raw, got) {
		t.Errorf("Raw has %d bytes, not the file's %d", len(l.Raw), len(got))
	}
	_, err = vmastats.Load(c, vmastats.LoadOptions{MaxSize: st.Size() - 1})
	if !errors.Is(err, vmastats.ErrTooLarge) || pub.ReaderCounter() != 1 {
		t.Errorf("over MaxSize: %v, reader_counter %d (want ErrTooLarge, 1)", err, pub.ReaderCounter())
	}
}

func sha(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

func TestLoadRefusesSymlinks(t *testing.T) {
	// A symbolic link to a file the exporter must never touch, and one to
	// a perfectly valid statistics file: both are refused unread.
	pub, _ := publishSelf(t, vmastatstest.Sample(vmastats.LayoutB))
	dir := t.TempDir()
	before := sha(t, "/etc/passwd")
	var st0 unix.Stat_t
	if err := unix.Stat("/etc/passwd", &st0); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{"/etc/passwd", pub.Path()} {
		link := filepath.Join(dir, vmastats.FilePrefix+strconv.Itoa(os.Getpid()))
		os.Remove(link)
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		_, err := vmastats.Load(vmastats.Candidate{Path: link, PID: os.Getpid()}, vmastats.LoadOptions{})
		if !errors.Is(err, vmastats.ErrRefused) || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("link to %s: %v, want refused as a symbolic link", target, err)
		}
	}
	if pub.ReaderCounter() != 0 {
		t.Error("the reader counter was bumped through a symbolic link")
	}
	var st1 unix.Stat_t
	if err := unix.Stat("/etc/passwd", &st1); err != nil {
		t.Fatal(err)
	}
	if sha(t, "/etc/passwd") != before || st1.Mtim != st0.Mtim || st1.Ctim != st0.Ctim {
		t.Error("/etc/passwd changed")
	}
}

func TestLoadRefusesOddFiles(t *testing.T) {
	pid := os.Getpid()
	name := vmastats.FilePrefix + strconv.Itoa(pid)
	t.Run("fifo", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), name)
		if err := unix.Mkfifo(path, 0o644); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := vmastats.Load(vmastats.Candidate{Path: path, PID: pid}, vmastats.LoadOptions{})
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, vmastats.ErrRefused) || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("fifo: %v", err)
			}
		case <-time.After(testenv.HangGuard):
			t.Fatal("Load blocked on a FIFO")
		}
	})
	t.Run("directory", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), name)
		if err := os.Mkdir(path, 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := vmastats.Load(vmastats.Candidate{Path: path, PID: pid}, vmastats.LoadOptions{}); !errors.Is(err, vmastats.ErrRefused) {
			t.Errorf("directory: %v", err)
		}
	})
	t.Run("hard link", func(t *testing.T) {
		pub, _ := publishSelf(t, vmastatstest.Sample(vmastats.LayoutB))
		sub := filepath.Join(filepath.Dir(pub.Path()), "sub") // same file system
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(sub, name)
		if err := os.Link(pub.Path(), path); err != nil {
			t.Fatal(err)
		}
		if _, err := vmastats.Load(vmastats.Candidate{Path: path, PID: pid}, vmastats.LoadOptions{}); !errors.Is(err, vmastats.ErrRefused) || !strings.Contains(err.Error(), "hard links") {
			t.Errorf("hard link: %v", err)
		}
	})
}

func TestLoadWrongOwner(t *testing.T) {
	testenv.Root(t)
	pub, c := publishSelf(t, vmastatstest.Sample(vmastats.LayoutB))
	const nobody = 65534
	if err := os.Chown(pub.Path(), nobody, nobody); err != nil {
		t.Fatal(err)
	}
	_, err := vmastats.Load(c, vmastats.LoadOptions{})
	if !errors.Is(err, vmastats.ErrRefused) || !strings.Contains(err.Error(), "file owner uid 65534") {
		t.Errorf("file owned by nobody for a root process: %v", err)
	}
	if pub.ReaderCounter() != 0 {
		t.Error("reader counter written in a refused file")
	}
}

func TestLoadWrongSizeAndVersion(t *testing.T) {
	t.Run("size", func(t *testing.T) {
		pub, c := publishSelf(t, vmastatstest.Sample(vmastats.LayoutB))
		f, err := os.OpenFile(pub.Path(), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte{0})
		f.Close()
		_, err = vmastats.Load(c, vmastats.LoadOptions{})
		if !errors.Is(err, vmastats.ErrUnsupported) || !strings.Contains(err.Error(), "bytes, but libvma 9.8.84.0 (layout B, 8 sockets) writes") {
			t.Errorf("size: %v", err)
		}
		if pub.ReaderCounter() != 0 {
			t.Error("reader counter written in a file of the wrong size")
		}
	})
	t.Run("version", func(t *testing.T) {
		s := vmastatstest.Sample(vmastats.LayoutB)
		s.ProtocolVer = "ffffffffffffffffffffffffffffffff"
		s.VerInfo = [4]uint8{9, 9, 1, 0}
		pub, c := publishSelf(t, s)
		_, err := vmastats.Load(c, vmastats.LoadOptions{})
		if !errors.Is(err, vmastats.ErrUnsupported) || !strings.Contains(err.Error(), "libvma 9.9.1.0") {
			t.Errorf("version: %v", err)
		}
		if pub.ReaderCounter() != 0 {
			t.Error("reader counter written in a file of unknown version")
		}
	})
}

func TestLoadDeadAndForeignPID(t *testing.T) {
	dir := t.TempDir()
	b, err := vmastatstest.Encode(vmastatstest.Sample(vmastats.LayoutB))
	if err != nil {
		t.Fatal(err)
	}
	// A process that has exited: its file is stale, and left in place.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := cmd.Process.Pid
	deadPath := filepath.Join(dir, vmastats.FilePrefix+strconv.Itoa(dead))
	if err := os.WriteFile(deadPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := vmastats.Load(vmastats.Candidate{Path: deadPath, PID: dead}, vmastats.LoadOptions{}); !errors.Is(err, vmastats.ErrStale) {
		t.Errorf("dead pid %d: %v", dead, err)
	}
	if _, err := os.Stat(deadPath); err != nil {
		t.Errorf("stale file was removed: %v", err)
	}

	// A live process of the same user that does not map the file: the
	// pid belongs to someone else (another PID namespace, PID reuse, or a
	// planted file).
	sleep := exec.Command("sleep", "30")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleep.Process.Kill(); sleep.Wait() }()
	// Wait until the child has exec'd so its comm and maps are sleep's.
	for i := 0; i < 100; i++ {
		if c, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", sleep.Process.Pid)); string(c) == "sleep\n" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	foreign := filepath.Join(dir, vmastats.FilePrefix+strconv.Itoa(sleep.Process.Pid))
	if err := os.WriteFile(foreign, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = vmastats.Load(vmastats.Candidate{Path: foreign, PID: sleep.Process.Pid}, vmastats.LoadOptions{})
	if !errors.Is(err, vmastats.ErrRefused) || !strings.Contains(err.Error(), "does not map this file") {
		t.Errorf("file not mapped by its pid: %v", err)
	}
}

// TestLoadTruncationLoop truncates, regrows and replaces a live file
// while it is loaded over and over. Every Load must return a result or
// an error; none may crash the process (SIGBUS on a mapped page).
func TestLoadTruncationLoop(t *testing.T) {
	pub, c := publishSelf(t, vmastatstest.Sample(vmastats.LayoutB))
	good, err := os.ReadFile(pub.Path())
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			switch i % 4 {
			case 0:
				os.Truncate(c.Path, 0)
			case 1:
				os.Truncate(c.Path, 100)
			case 2:
				os.WriteFile(c.Path, good, 0o644) // regrow in place
			case 3:
				os.Truncate(c.Path, int64(len(good))/2)
			}
		}
	}()
	var ok, failed int
	for i := 0; i < 2000; i++ {
		if _, err := vmastats.Load(c, vmastats.LoadOptions{}); err != nil {
			failed++
		} else {
			ok++
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("%d loads succeeded, %d failed cleanly", ok, failed)
	if failed == 0 {
		t.Error("no load saw the truncation")
	}
}

// BenchmarkLoad measures one poll of one live file with the default 100
// socket slots: procfs verification, open, handshake, two reads, decode.
// Like the collector, it keeps one ProcLiveness, which has read the boot
// time before the first poll.
func BenchmarkLoad(b *testing.B) {
	s := vmastatstest.Sample(vmastats.LayoutB)
	s.MaxSockets = 100
	dir := b.TempDir()
	p, err := vmastatstest.NewPublisher(dir, os.Getpid(), s)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	c := vmastats.Candidate{Path: p.Path(), PID: os.Getpid()}
	opts := vmastats.LoadOptions{Liveness: vmastats.NewProcLiveness("/proc")}
	if _, err := vmastats.Load(c, opts); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := vmastats.Load(c, opts); err != nil {
			b.Fatal(err)
		}
	}
}

// TestLoadRefusesMountPoints mounts a file over the name vmastat.<pid>
// in the statistics directory. An unprivileged user can do the same
// with fusermount over a file he owns in /tmp, and a FUSE daemon can then
// hold every stat or read of it forever, hanging the collector. Even
// when the mounted file is a valid, mapped statistics file (here, this
// process's own), a name that is a mount point must be refused: its
// inode belongs to another file system than the directory.
func TestLoadRefusesMountPoints(t *testing.T) {
	testenv.Root(t)
	src := t.TempDir()
	if err := unix.Mount("tmpfs", src, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(src, unix.MNT_DETACH) })
	pub, err := vmastatstest.NewPublisher(src, os.Getpid(), vmastatstest.Sample(vmastats.LayoutB))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pub.Close() })
	if _, err := vmastats.Load(vmastats.Candidate{Path: pub.Path(), PID: os.Getpid()}, vmastats.LoadOptions{NoHandshake: true}); err != nil {
		t.Fatalf("the file itself: %v", err)
	}
	dir := t.TempDir()
	name := filepath.Join(dir, vmastats.FilePrefix+strconv.Itoa(os.Getpid()))
	if err := os.WriteFile(name, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(pub.Path(), name, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(name, unix.MNT_DETACH) })
	_, err = vmastats.Load(vmastats.Candidate{Path: name, PID: os.Getpid()}, vmastats.LoadOptions{})
	if !errors.Is(err, vmastats.ErrRefused) || !strings.Contains(err.Error(), "mount point") {
		t.Errorf("file mounted over %s: %v, want refused as a mount point", name, err)
	}
	if pub.ReaderCounter() != 0 {
		t.Errorf("reader_counter of the mounted file was written: %d", pub.ReaderCounter())
	}
}
