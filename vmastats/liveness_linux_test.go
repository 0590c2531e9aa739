package vmastats

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeProc writes a minimal procfs tree with one process.
func fakeProc(t *testing.T, pid int, comm string, startTicks uint64, uids string, maps string) string {
	t.Helper()
	root := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("stat", "cpu  1 2 3\nbtime 1700000000\nprocesses 5\n")
	// Fields after comm: state ppid pgrp session tty tpgid flags minflt
	// cminflt majflt cmajflt utime stime cutime cstime priority nice
	// num_threads itrealvalue starttime ...
	write(fmt.Sprintf("%d/stat", pid), fmt.Sprintf("%d (%s) S 1 1 1 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 4 0 %d 1000 200\n", pid, comm, startTicks))
	write(fmt.Sprintf("%d/status", pid), "Name:\tx\nUid:\t"+uids+"\nGid:\t0 0 0 0\n")
	write(fmt.Sprintf("%d/maps", pid), maps)
	return root
}

func TestProcLiveness(t *testing.T) {
	const pid = 4321
	// Started 1000 s after boot: 2023-11-14T22:30:20Z.
	start := time.Unix(1700000000+1000, 0)
	dev := uint64(0x1f) // 00:1f
	mapped := "7f00-7f10 rw-s 00000000 00:1f 777 /tmp/vmastat.4321\n7f10-7f20 r-xp 00000000 08:01 5 /usr/lib/libvma.so\n"
	ok := FileInfo{Dev: dev, Ino: 777, UID: 1000, Ctime: start.Add(time.Minute)}
	for _, tc := range []struct {
		name   string
		maps   string
		uids   string
		comm   string
		fi     FileInfo
		pid    int
		want   error
		substr string
	}{
		{name: "writer", maps: mapped, uids: "1000 1000 1000 1000", fi: ok},
		{name: "comm with spaces and parens", comm: "my (app) 2", maps: mapped, uids: "1000 1000 1000 1000", fi: ok},
		{name: "dead", pid: 999, maps: mapped, uids: "1000 1000 1000 1000", fi: ok, want: ErrStale, substr: "does not exist"},
		{name: "file older than the process", maps: mapped, uids: "1000 1000 1000 1000", fi: FileInfo{Dev: dev, Ino: 777, UID: 1000, Ctime: start.Add(-time.Hour)}, want: ErrStale, substr: "pid reused"},
		{name: "other owner", maps: mapped, uids: "1000 1000 1000 1000", fi: FileInfo{Dev: dev, Ino: 777, UID: 0, Ctime: ok.Ctime}, want: ErrRefused, substr: "file owner uid 0"},
		{name: "not mapped", maps: "7f10-7f20 r-xp 00000000 08:01 5 /usr/lib/libvma.so\n", uids: "1000 1000 1000 1000", fi: ok, want: ErrRefused, substr: "does not map"},
		{name: "same inode on another device", maps: mapped, uids: "1000 1000 1000 1000", fi: FileInfo{Dev: 0x801, Ino: 777, UID: 1000, Ctime: ok.Ctime}, want: ErrRefused, substr: "does not map"},
		{name: "private mapping is not libvma's", maps: "7f00-7f10 rw-p 00000000 00:1f 777 /tmp/vmastat.4321\n", uids: "1000 1000 1000 1000", fi: ok, want: ErrRefused, substr: "does not map"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			comm := tc.comm
			if comm == "" {
				comm = "md_feed"
			}
			root := fakeProc(t, pid, comm, 100000, tc.uids, tc.maps)
			qpid := pid
			if tc.pid != 0 {
				qpid = tc.pid
			}
			p, err := ProcLiveness{ProcPath: root}.Verify(qpid, tc.fi)
			if tc.want != nil {
				if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.substr) {
					t.Errorf("got %v, want %v containing %q", err, tc.want, tc.substr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.PID != pid || p.Comm != comm || p.StartTicks != 100000 || !p.Start.Equal(start) {
				t.Errorf("process %+v", p)
			}
		})
	}
}
