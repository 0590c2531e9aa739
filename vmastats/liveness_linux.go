package vmastats

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ProcLiveness verifies writers through procfs. A file is accepted only
// if all of these hold:
//
//   - /proc/<pid> exists (else: stale, the process exited, for example
//     after SIGKILL, which leaves the file behind);
//   - the file's ctime is not older than the process start (else: stale,
//     the pid was reused by a process that cannot have written it; ctime
//     changes with every write and cannot be set back by the owner);
//   - the file's owner is the real, effective or filesystem uid of the
//     process (else: refused);
//   - the process maps the file: /proc/<pid>/maps has a mapping with the
//     file's device and inode (else: refused). libvma keeps the file
//     mapped MAP_SHARED for its whole life, so this holds for every real
//     writer and fails for a different process that happens to hold the
//     same pid number, such as a process in another PID namespace whose
//     container shares the statistics directory, or a planted file.
type ProcLiveness struct {
	// ProcPath is the procfs mount point, normally /proc.
	ProcPath string
	// ClockTick is the kernel's USER_HZ; zero means 100, the value on
	// every Linux architecture Go supports.
	ClockTick int
}

// clockSlack absorbs the one-second resolution of btime.
const clockSlack = 2 * time.Second

// Verify implements Liveness.
func (l ProcLiveness) Verify(pid int, fi FileInfo) (Process, error) {
	dir := filepath.Join(l.ProcPath, strconv.Itoa(pid))
	stat, err := os.ReadFile(filepath.Join(dir, "stat"))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH) {
		return Process{}, fmt.Errorf("%w: process %d does not exist", ErrStale, pid)
	}
	if err != nil {
		return Process{}, fmt.Errorf("reading process %d: %w", pid, err)
	}
	p, err := parseProcStat(stat)
	if err != nil {
		return Process{}, fmt.Errorf("process %d: %w", pid, err)
	}
	p.PID = pid
	btime, err := l.bootTime()
	if err != nil {
		return Process{}, err
	}
	hz := l.ClockTick
	if hz <= 0 {
		hz = 100
	}
	p.Start = btime.Add(time.Duration(p.StartTicks) * time.Second / time.Duration(hz))
	if fi.Ctime.Before(p.Start.Add(-clockSlack)) {
		return Process{}, fmt.Errorf("%w: file last changed %s, before process %d started %s (pid reused)", ErrStale,
			fi.Ctime.UTC().Format(time.RFC3339), pid, p.Start.UTC().Format(time.RFC3339))
	}
	status, err := os.ReadFile(filepath.Join(dir, "status"))
	if err != nil {
		return Process{}, fmt.Errorf("reading process %d status: %w", pid, err)
	}
	uids, err := parseUids(status)
	if err != nil {
		return Process{}, fmt.Errorf("process %d: %w", pid, err)
	}
	if fi.UID != uids[0] && fi.UID != uids[1] && fi.UID != uids[3] {
		return Process{}, fmt.Errorf("%w: file owner uid %d is not the owner (uid %d) of process %d", ErrRefused, fi.UID, uids[1], pid)
	}
	maps, err := os.ReadFile(filepath.Join(dir, "maps"))
	if err != nil {
		return Process{}, fmt.Errorf("%w: cannot verify that process %d maps the file: %w", ErrRefused, pid, err)
	}
	if !mapsFile(maps, fi.Dev, fi.Ino) {
		return Process{}, fmt.Errorf("%w: process %d does not map this file (another PID namespace, PID reuse or a planted file)", ErrRefused, pid)
	}
	return p, nil
}

func (l ProcLiveness) bootTime() (time.Time, error) {
	data, err := os.ReadFile(filepath.Join(l.ProcPath, "stat"))
	if err != nil {
		return time.Time{}, fmt.Errorf("reading boot time: %w", err)
	}
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("btime ")); ok {
			sec, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
			if err != nil {
				return time.Time{}, fmt.Errorf("parsing btime: %w", err)
			}
			return time.Unix(sec, 0), nil
		}
	}
	return time.Time{}, errors.New("no btime in /proc/stat")
}

// parseProcStat reads comm and starttime (field 22) of /proc/<pid>/stat.
// comm may contain spaces and parentheses, so fields are counted after
// the last ')'.
func parseProcStat(b []byte) (Process, error) {
	open := bytes.IndexByte(b, '(')
	end := bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return Process{}, errors.New("malformed stat")
	}
	fields := strings.Fields(string(b[end+1:]))
	// fields[0] is field 3 (state); starttime is field 22.
	if len(fields) < 20 {
		return Process{}, errors.New("short stat")
	}
	st, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return Process{}, fmt.Errorf("parsing starttime: %w", err)
	}
	return Process{Comm: string(b[open+1 : end]), StartTicks: st}, nil
}

// parseUids returns the real, effective, saved and filesystem uids.
func parseUids(b []byte) ([4]uint32, error) {
	var out [4]uint32
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		v, ok := strings.CutPrefix(sc.Text(), "Uid:")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 4 {
			return out, errors.New("malformed Uid line")
		}
		for i := range f {
			u, err := strconv.ParseUint(f[i], 10, 32)
			if err != nil {
				return out, fmt.Errorf("parsing uid: %w", err)
			}
			out[i] = uint32(u)
		}
		return out, nil
	}
	return out, errors.New("no Uid line")
}

// mapsFile reports whether a /proc/<pid>/maps text has a mapping of the
// file with device dev and inode ino. Lines look like
// "7f..-7f.. rw-s 00000000 00:1f 1234   /tmp/vmastat.42".
func mapsFile(maps []byte, dev, ino uint64) bool {
	major, minor := devMajor(dev), devMinor(dev)
	want := fmt.Sprintf("%02x:%02x", major, minor)
	inoS := strconv.FormatUint(ino, 10)
	for line := range bytes.SplitSeq(maps, []byte("\n")) {
		f := bytes.Fields(line)
		if len(f) < 5 {
			continue
		}
		if string(f[4]) == inoS && string(f[3]) == want && bytes.HasSuffix(f[1], []byte("s")) {
			return true
		}
	}
	return false
}

// devMajor and devMinor split a Linux dev_t as glibc encodes it.
func devMajor(dev uint64) uint64 { return ((dev >> 8) & 0xfff) | ((dev >> 32) &^ 0xfff) }
func devMinor(dev uint64) uint64 { return (dev & 0xff) | ((dev >> 12) &^ 0xff) }
