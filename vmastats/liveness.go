package vmastats

import (
	"errors"
	"time"
)

// Errors that classify why a file is not read.
var (
	// ErrStale says the file belongs to no live process: the pid is gone,
	// or the process now holding the pid started after the file was last
	// changed (PID reuse).
	ErrStale = errors.New("stale statistics file")
	// ErrRefused says the file is not trustworthy: a symbolic link, not a
	// regular file, a hard link, a mount point, owned by someone other
	// than the process, or not mapped by the process it names.
	ErrRefused = errors.New("refused statistics file")
	// ErrNotSupported says the operation needs Linux: libvma runs only
	// there, and Load and ProcLiveness rely on Linux procfs and system
	// calls. Decoding (Parse, Identify) and Discover work everywhere.
	ErrNotSupported = errors.New("not supported on this OS: libvma statistics files can be verified and read only on Linux")
)

// FileInfo is what is known of an opened, not yet read statistics file.
type FileInfo struct {
	// Dev and Ino are the device (the Linux dev_t encoding of major and
	// minor, as stat(2) reports it) and the inode number of the file.
	Dev uint64
	Ino uint64
	// UID is the file's owner.
	UID uint32
	// Size is the file's size in bytes.
	Size int64
	// Ctime is the last change of the file's content or metadata; libvma
	// changes it with every write.
	Ctime time.Time
}

// Process identifies the live process that writes a statistics file.
type Process struct {
	PID int
	// StartTicks is the start time in clock ticks after boot; together
	// with PID it identifies the process across PID reuse.
	StartTicks uint64
	// Start is the start time as wall-clock time.
	Start time.Time
	Comm  string
}

// Liveness decides whether the process a file names is alive and is the
// file's writer.
type Liveness interface {
	// Verify returns the process for pid if it is alive and wrote the
	// file described by fi. Errors wrap ErrStale or ErrRefused.
	Verify(pid int, fi FileInfo) (Process, error)
}

// PIDChecker is implemented by a Liveness that can tell cheaply, without
// opening the statistics file, whether a pid names a process at all. The
// vma collector asks it before opening a file, so files left behind by
// exited processes (or planted in a world-writable directory under pids
// that do not exist) cost no open and never delay the files of live
// processes. Alive may answer true for a pid whose file Verify then
// refuses; it must not answer false for a live process.
type PIDChecker interface {
	Alive(pid int) bool
}
