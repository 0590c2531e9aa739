package vmastats

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// writeFile writes content to root/rel, creating directories.
func writeFile(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fakeProc writes a minimal procfs tree with one process, in the formats
// of Linux 6.x: stat with all 52 fields, status with tab-separated uids.
func fakeProc(t *testing.T, pid int, comm string, startTicks uint64, uids string, maps string) string {
	t.Helper()
	root := t.TempDir()
	writeFile(t, root, "stat", "cpu  1 2 3 4 5 6 7 0 0 0\ncpu0 1 2 3 4 5 6 7 0 0 0\nintr 0\nctxt 10\nbtime 1700000000\nprocesses 5\nprocs_running 1\nprocs_blocked 0\nsoftirq 0 0 0 0 0 0 0 0 0 0 0\n")
	// Fields after comm: state ppid pgrp session tty_nr tpgid flags
	// minflt cminflt majflt cmajflt utime stime cutime cstime priority
	// nice num_threads itrealvalue starttime (22) vsize rss ... exit_code (52).
	writeFile(t, root, fmt.Sprintf("%d/stat", pid), fmt.Sprintf("%d (%s) S 1 1 1 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 4 0 %d "+
		"3133440 360 18446744073709551615 94160393842688 94160393862569 140721992634048 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 "+
		"94160393878576 94160393880192 94160946843648 140721992641217 140721992641237 140721992641237 140721992642539 0\n", pid, comm, startTicks))
	writeFile(t, root, fmt.Sprintf("%d/status", pid), "Name:\tx\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t"+fmt.Sprint(pid)+"\nUid:\t"+uids+"\nGid:\t0\t0\t0\t0\n")
	writeFile(t, root, fmt.Sprintf("%d/maps", pid), maps)
	return root
}

func TestProcLiveness(t *testing.T) {
	const pid = 4321
	// Started 1000 s after boot: 2023-11-14T22:30:20Z.
	start := time.Unix(1700000000+1000, 0)
	dev := uint64(0x1f) // 00:1f
	mapped := "7f00-7f10 rw-s 00000000 00:1f 777 /tmp/vmastat.4321\n7f10-7f20 r-xp 00000000 08:01 5 /usr/lib/libvma.so\n"
	ok := FileInfo{Dev: dev, Ino: 777, UID: 1000, Ctime: start.Add(time.Minute)}
	const user = "1000\t1000\t1000\t1000"
	for _, tc := range []struct {
		name   string
		maps   string
		uids   string
		comm   string
		ticks  uint64
		start  time.Time
		fi     FileInfo
		pid    int
		want   error
		substr string
	}{
		{name: "writer", maps: mapped, uids: user, fi: ok},
		{name: "comm with spaces and parens", comm: "my (app) 2", maps: mapped, uids: user, fi: ok},
		{name: "writer by effective uid", maps: mapped, uids: "0\t1000\t1000\t0", fi: ok},
		{name: "writer by filesystem uid", maps: mapped, uids: "0\t0\t0\t1000", fi: ok},
		// 10^10 ticks (3.2 years of uptime) overflow a time.Duration
		// multiplied by time.Second before the division by USER_HZ.
		{name: "started years after boot", ticks: 10_000_000_000, start: time.Unix(1700000000+100_000_000, 0), maps: mapped, uids: user,
			fi: FileInfo{Dev: dev, Ino: 777, UID: 1000, Ctime: time.Unix(1700000000+100_000_000+60, 0)}},
		{name: "dead", pid: 999, maps: mapped, uids: user, fi: ok, want: ErrStale, substr: "process 999 does not exist"},
		{name: "file older than the process", maps: mapped, uids: user, fi: FileInfo{Dev: dev, Ino: 777, UID: 1000, Ctime: start.Add(-time.Hour)}, want: ErrStale, substr: "pid reused"},
		{name: "file older than a process started years after boot", ticks: 10_000_000_000, maps: mapped, uids: user, fi: ok, want: ErrStale, substr: "pid reused"},
		{name: "other owner", maps: mapped, uids: user, fi: FileInfo{Dev: dev, Ino: 777, UID: 0, Ctime: ok.Ctime}, want: ErrRefused, substr: "file owner uid 0"},
		{name: "owner only by saved uid", maps: mapped, uids: "0\t0\t1000\t0", fi: ok, want: ErrRefused, substr: "file owner uid 1000"},
		{name: "not mapped", maps: "7f10-7f20 r-xp 00000000 08:01 5 /usr/lib/libvma.so\n", uids: user, fi: ok, want: ErrRefused, substr: "does not map"},
		{name: "no mappings", maps: "", uids: user, fi: ok, want: ErrRefused, substr: "does not map"},
		{name: "same inode on another device", maps: mapped, uids: user, fi: FileInfo{Dev: 0x801, Ino: 777, UID: 1000, Ctime: ok.Ctime}, want: ErrRefused, substr: "does not map"},
		{name: "private mapping is not libvma's", maps: "7f00-7f10 rw-p 00000000 00:1f 777 /tmp/vmastat.4321\n", uids: user, fi: ok, want: ErrRefused, substr: "does not map"},
		// A minor above 255 is split across dev_t (the kernel's
		// new_encode_dev): its low byte at bit 0, the major at bit 8, the
		// rest of the minor from bit 20.
		{name: "large device numbers", maps: "7f00-7f10 rw-s 00000000 103:1a2b 777 /tmp/vmastat.4321\n", uids: user,
			fi: FileInfo{Dev: 0x2b | 0x103<<8 | 0x1a<<20, Ino: 777, UID: 1000, Ctime: ok.Ctime}},
		{name: "unreadable maps", maps: "garbage\n", uids: user, fi: ok, want: ErrRefused, substr: "cannot verify that process 4321 maps the file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			comm := tc.comm
			if comm == "" {
				comm = "md_feed"
			}
			ticks, want := tc.ticks, tc.start
			if ticks == 0 {
				ticks, want = 100000, start
			}
			root := fakeProc(t, pid, comm, ticks, tc.uids, tc.maps)
			qpid := pid
			if tc.pid != 0 {
				qpid = tc.pid
			}
			p, err := NewProcLiveness(root).Verify(qpid, tc.fi)
			if tc.want != nil {
				if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.substr) {
					t.Errorf("got %v, want %v containing %q", err, tc.want, tc.substr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.PID != pid || p.Comm != comm || p.StartTicks != ticks || !p.Start.Equal(want) {
				t.Errorf("process %+v, want start %s", p, want.UTC())
			}
		})
	}
}

// TestProcLivenessBootTimeOnce checks that the boot time is read at the
// first successful Verify and never again, and that a procfs that cannot
// be read yet is retried.
func TestProcLivenessBootTimeOnce(t *testing.T) {
	const pid = 4321
	root := filepath.Join(t.TempDir(), "proc")
	l := NewProcLiveness(root)
	fi := FileInfo{Dev: 0x1f, Ino: 777, UID: 1000, Ctime: time.Unix(1700000000+1000+60, 0)}
	if _, err := l.Verify(pid, fi); err == nil || !strings.Contains(err.Error(), "opening procfs at "+root) {
		t.Fatalf("missing procfs: %v", err)
	}

	src := fakeProc(t, pid, "md_feed", 100000, "1000\t1000\t1000\t1000", "7f00-7f10 rw-s 00000000 00:1f 777 /tmp/vmastat.4321\n")
	if err := os.Rename(src, root); err != nil {
		t.Fatal(err)
	}
	writeFile(t, root, "stat", "cpu  1 2 3 4 5 6 7 0 0 0\n")
	if _, err := l.Verify(pid, fi); err == nil || !strings.Contains(err.Error(), "no btime") {
		t.Fatalf("/proc/stat without btime: %v", err)
	}

	writeFile(t, root, "stat", "cpu  1 2 3 4 5 6 7 0 0 0\nbtime 1700000000\n")
	p, err := l.Verify(pid, fi)
	if err != nil {
		t.Fatal(err)
	}
	// Another btime in /proc/stat, and then no /proc/stat at all, change
	// nothing: it was read once.
	writeFile(t, root, "stat", "cpu  1 2 3 4 5 6 7 0 0 0\nbtime 1800000000\n")
	p2, err := l.Verify(pid, fi)
	if err != nil || !p2.Start.Equal(p.Start) {
		t.Errorf("after btime changed: %v, start %s, want %s", err, p2.Start, p.Start)
	}
	if err := os.Remove(filepath.Join(root, "stat")); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Verify(pid, fi); err != nil {
		t.Errorf("after /proc/stat vanished: %v", err)
	}
}

// TestProcLivenessClockStep steps the wall clock back by an hour after
// the boot time was read, as an NTP or RTC correction does. The boot time
// and start times follow the step, as the kernel's btime does, without
// /proc/stat being read again: a file written by the new clock right
// after its process started is live, not stale.
func TestProcLivenessClockStep(t *testing.T) {
	const pid = 4321
	root := fakeProc(t, pid, "md_feed", 100000, "1000\t1000\t1000\t1000", "7f00-7f10 rw-s 00000000 00:1f 777 /tmp/vmastat.4321\n")
	l := NewProcLiveness(root)
	// 2000.3 s after a boot at btime 1700000000.7 (btime is truncated).
	sinceBoot := 2000*time.Second + 300*time.Millisecond
	wall := time.Unix(1700000000, 700_000_000).Add(sinceBoot)
	l.clock = func() (time.Time, time.Duration, error) { return wall, sinceBoot, nil }
	started := time.Unix(1700000000+1000, 0) // starttime 100000 ticks
	p, err := l.Verify(pid, FileInfo{Dev: 0x1f, Ino: 777, UID: 1000, Ctime: started.Add(10 * time.Second)})
	if err != nil || !p.Start.Equal(started) {
		t.Fatalf("before the step: %v, start %s, want %s", err, p.Start.UTC(), started.UTC())
	}
	if err := os.Remove(filepath.Join(root, "stat")); err != nil {
		t.Fatal(err)
	}

	wall, sinceBoot = wall.Add(-time.Hour+time.Second), sinceBoot+time.Second
	stepped := started.Add(-time.Hour)
	p, err = l.Verify(pid, FileInfo{Dev: 0x1f, Ino: 777, UID: 1000, Ctime: stepped.Add(10 * time.Second)})
	if err != nil || !p.Start.Equal(stepped) {
		t.Errorf("after the step: %v, start %s, want %s", err, p.Start.UTC(), stepped.UTC())
	}
	// The ctime check still works on the new clock.
	if _, err := l.Verify(pid, FileInfo{Dev: 0x1f, Ino: 777, UID: 1000, Ctime: stepped.Add(-time.Minute)}); !errors.Is(err, ErrStale) {
		t.Errorf("file older than the process after the step: %v, want stale", err)
	}
}

// TestProcLivenessRealProcess verifies this test process through the real
// /proc: a shared mapping of a file of its own is accepted, a private
// one and an unmapped one are refused, and a pid that does not exist is
// stale.
func TestProcLivenessRealProcess(t *testing.T) {
	l := NewProcLiveness("/proc")
	path := filepath.Join(t.TempDir(), "vmastat.1")
	if err := os.WriteFile(path, make([]byte, os.Getpagesize()), 0o644); err != nil {
		t.Fatal(err)
	}
	fi := statFile(t, path)
	mapFile(t, path, true)
	p, err := l.Verify(os.Getpid(), fi)
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Fatal(err)
	}
	if p.PID != os.Getpid() || p.Comm != strings.TrimSpace(string(self)) || p.StartTicks == 0 ||
		p.Start.After(time.Now()) || time.Since(p.Start) > time.Hour {
		t.Errorf("process %+v", p)
	}

	private := filepath.Join(t.TempDir(), "vmastat.2")
	if err := os.WriteFile(private, make([]byte, os.Getpagesize()), 0o644); err != nil {
		t.Fatal(err)
	}
	mapFile(t, private, false)
	unmapped := filepath.Join(t.TempDir(), "vmastat.3")
	if err := os.WriteFile(unmapped, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{private, unmapped} {
		if _, err := l.Verify(os.Getpid(), statFile(t, f)); !errors.Is(err, ErrRefused) {
			t.Errorf("%s: %v, want refused", filepath.Base(f), err)
		}
	}
	// PID_MAX_LIMIT is 2^22: no process ever has a larger pid.
	if _, err := l.Verify(1<<22+1, fi); !errors.Is(err, ErrStale) {
		t.Errorf("pid that cannot exist: %v, want stale", err)
	}
}

// statFile describes path as Load does.
func statFile(t *testing.T, path string) FileInfo {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return FileInfo{Dev: uint64(st.Dev), Ino: st.Ino, UID: st.Uid, Size: st.Size, Ctime: time.Unix(st.Ctim.Unix())}
}

// mapFile maps the first page of path into this process, shared or
// private, until the test ends.
func mapFile(t *testing.T, path string, shared bool) {
	t.Helper()
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	flags := unix.MAP_PRIVATE
	if shared {
		flags = unix.MAP_SHARED
	}
	mem, err := unix.Mmap(fd, 0, os.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, flags)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(mem) })
}
