package vmastats

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/procfs"
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
//   - the process maps the file: /proc/<pid>/maps has a shared mapping
//     with the file's device and inode (else: refused). libvma keeps the
//     file mapped MAP_SHARED for its whole life, so this holds for every
//     real writer and fails for a different process that happens to hold
//     the same pid number, such as a process in another PID namespace
//     whose container shares the statistics directory, or a planted file.
//
// /proc is read through github.com/prometheus/procfs: Proc.Stat for comm
// and starttime, Proc.NewStatus for the uids, Proc.ProcMaps for the
// mappings (device, inode, shared flag) and FS.Stat for the boot time.
// Where procfs falls short (checked in procfs v0.23.0):
//
//   - ProcStat.StartTime re-reads and parses all of /proc/stat on every
//     call. ProcLiveness reads the boot time with FS.Stat once, at its
//     first successful Verify, and converts starttime itself, assuming
//     USER_HZ is 100 as procfs does (it is on every architecture Go
//     supports).
//   - FS.Stat returns boot time 0 without an error when /proc/stat has no
//     btime line; ProcLiveness treats 0 as an error.
//   - Proc.ProcMaps ignores the error of its line scanner, so a read that
//     fails part-way (the process exiting meanwhile) returns the mappings
//     read so far without an error. The file is then refused as not
//     mapped, never accepted, so the loss is on the safe side.
//   - Proc.NewStatus reports a status without a Uid line as uid 0 with no
//     error, and indexes its four-element uid array with the number of
//     tab-separated fields, so a Uid line of more than four would panic.
//     The kernel always prints exactly four; only a --path.procfs that is
//     not a procfs could differ.
//
// The kernel's btime is the wall clock minus CLOCK_BOOTTIME, so it moves
// whenever the wall clock is stepped. A boot time read once and kept
// would then be off by the step: after a step back by S, a process whose
// file last changed less than S after it started would seem to have
// started after that change, and the file would count as stale until a
// restart. So the boot time read once is kept as an offset from the wall
// clock minus CLOCK_BOOTTIME, which gives at every check the btime the
// kernel would print then, without reading /proc/stat again.
//
// A ProcLiveness is safe for concurrent use. Create it with
// NewProcLiveness.
type ProcLiveness struct {
	root string
	// clock returns the wall clock and CLOCK_BOOTTIME; tests replace it.
	clock func() (wall time.Time, sinceBoot time.Duration, err error)

	mu    sync.Mutex
	fs    procfs.FS
	ready bool
	// offset is btime as read from procfs minus wall - sinceBoot at the
	// read: sub-second on a real procfs, and whatever a procfs of other
	// clocks (a fixture, another time namespace) differs by.
	offset time.Duration
}

// NewProcLiveness returns a ProcLiveness for the procfs mounted at root,
// normally /proc. Nothing is read until the first Verify, so a root that
// is not yet mounted is an error of that Verify, not of the constructor.
func NewProcLiveness(root string) *ProcLiveness {
	return &ProcLiveness{root: root, clock: systemClock}
}

// systemClock reads the wall clock and CLOCK_BOOTTIME, the clocks whose
// difference the kernel prints as btime.
func systemClock() (time.Time, time.Duration, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return time.Time{}, 0, fmt.Errorf("reading CLOCK_BOOTTIME: %w", err)
	}
	return time.Now(), time.Duration(ts.Nano()), nil
}

// userHZ is the unit of starttime in /proc/<pid>/stat (USER_HZ).
const userHZ = 100

// clockSlack absorbs the one-second resolution of btime.
const clockSlack = 2 * time.Second

// open returns the procfs and the boot time now. The procfs is opened
// and its btime read at the first call that succeeds; later calls only
// read the clocks.
func (l *ProcLiveness) open() (procfs.FS, time.Time, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	wall, since, err := l.clock()
	if err != nil {
		return procfs.FS{}, time.Time{}, err
	}
	if !l.ready {
		pfs, err := procfs.NewFS(l.root)
		if err != nil {
			return procfs.FS{}, time.Time{}, fmt.Errorf("opening procfs at %s: %w", l.root, err)
		}
		st, err := pfs.Stat()
		if err != nil {
			return procfs.FS{}, time.Time{}, fmt.Errorf("reading boot time: %w", err)
		}
		if st.BootTime == 0 {
			return procfs.FS{}, time.Time{}, fmt.Errorf("reading boot time: no btime in %s/stat", l.root)
		}
		l.fs, l.ready = pfs, true
		l.offset = time.Unix(int64(st.BootTime), 0).Sub(wall.Add(-since))
	}
	// btime is whole seconds; rounding drops the jitter of reading two
	// clocks one after the other.
	return l.fs, wall.Add(-since).Add(l.offset).Round(time.Second), nil
}

// Alive implements PIDChecker: whether <root>/<pid> exists. An error other
// than "does not exist" answers true, so Verify reports it.
func (l *ProcLiveness) Alive(pid int) bool {
	var st unix.Stat_t
	err := unix.Stat(l.root+"/"+strconv.Itoa(pid), &st)
	return !errors.Is(err, unix.ENOENT)
}

// Verify implements Liveness.
func (l *ProcLiveness) Verify(pid int, fi FileInfo) (Process, error) {
	pfs, boot, err := l.open()
	if err != nil {
		return Process{}, err
	}
	proc, err := pfs.Proc(pid)
	if err != nil {
		return Process{}, procError(pid, err)
	}
	stat, err := proc.Stat()
	if err != nil {
		return Process{}, procError(pid, err)
	}
	p := Process{PID: pid, Comm: stat.Comm, StartTicks: stat.Starttime, Start: startTime(boot, stat.Starttime)}
	if fi.Ctime.Before(p.Start.Add(-clockSlack)) {
		return Process{}, fmt.Errorf("%w: file last changed %s, before process %d started %s (pid reused)", ErrStale,
			fi.Ctime.UTC().Format(time.RFC3339), pid, p.Start.UTC().Format(time.RFC3339))
	}
	status, err := proc.NewStatus()
	if err != nil {
		return Process{}, fmt.Errorf("reading process %d status: %w", pid, err)
	}
	uids, owner := status.UIDs, uint64(fi.UID)
	if owner != uids[0] && owner != uids[1] && owner != uids[3] {
		return Process{}, fmt.Errorf("%w: file owner uid %d is not the owner (uid %d) of process %d", ErrRefused, fi.UID, uids[1], pid)
	}
	maps, err := proc.ProcMaps()
	if err != nil {
		return Process{}, fmt.Errorf("%w: cannot verify that process %d maps the file: %w", ErrRefused, pid, err)
	}
	if !mapsFile(maps, fi.Dev, fi.Ino) {
		return Process{}, fmt.Errorf("%w: process %d does not map this file (another PID namespace, PID reuse or a planted file)", ErrRefused, pid)
	}
	return p, nil
}

// procError classifies an error reading /proc/<pid> or its stat: a
// process that does not exist or is exiting makes the file stale.
func procError(pid int, err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("%w: process %d does not exist", ErrStale, pid)
	}
	return fmt.Errorf("reading process %d: %w", pid, err)
}

// startTime converts starttime, in USER_HZ ticks after boot, to wall-clock
// time. Whole seconds and the remainder are converted apart so that the
// product with time.Second cannot overflow (ticks×10^9 would, after 2.9
// years of uptime).
func startTime(boot time.Time, ticks uint64) time.Time {
	return boot.Add(time.Duration(ticks/userHZ)*time.Second + time.Duration(ticks%userHZ)*time.Second/userHZ)
}

// mapsFile reports whether maps has a shared mapping of the file with
// device dev and inode ino. procfs encodes the device of a mapping with
// unix.Mkdev, the encoding stat(2) uses for FileInfo.Dev.
func mapsFile(maps []*procfs.ProcMap, dev, ino uint64) bool {
	for _, m := range maps {
		if m.Inode == ino && m.Dev == dev && m.Perms != nil && m.Perms.Shared {
			return true
		}
	}
	return false
}
