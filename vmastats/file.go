package vmastats

import (
	"errors"
	"time"
)

// Loaded is one verified and decoded statistics file.
type Loaded struct {
	Stats   *Stats
	Process Process
	Info    FileInfo
	// Handshake reports whether the reader counter was incremented. It
	// is false when the exporter may not write the file; libvma then
	// keeps the counters it copied last, which may be none.
	Handshake bool
	// Raw is the file's content that Stats was decoded from: the second
	// of the two identical reads, reader counter included. nic_exporter
	// collect copies it into a support bundle under the file's name.
	Raw []byte
}

// LoadOptions configures Load.
type LoadOptions struct {
	// Liveness verifies the writer. Nil means a new ProcLiveness on
	// /proc for this call alone, which reads the boot time again; a
	// caller that loads repeatedly should keep one and set it here.
	Liveness Liveness
	// NoHandshake skips the reader counter increment.
	NoHandshake bool
	// Settle, when positive, is how long to wait after the increment
	// before reading, so libvma can copy its counters (vma_stats waits
	// about 15 ms).
	Settle time.Duration
	// Accept, when set, is asked after the writer is verified and before
	// the file is opened for I/O; false makes Load return ErrFiltered.
	Accept func(Process) bool
	// MaxSize, when positive, is the largest file read: a larger one is
	// refused with ErrTooLarge after the writer is verified and before a
	// byte of it is read or written. The layouts bound the size already
	// (a few MiB at most); this is a caller's own, smaller bound.
	MaxSize int64
}

// ErrTooLarge says a file is larger than LoadOptions.MaxSize.
var ErrTooLarge = errors.New("statistics file larger than the caller's limit")

// ErrFiltered says LoadOptions.Accept declined the process.
var ErrFiltered = errors.New("process excluded by the filter")

// ErrUnstable says the file changed on every read.
var ErrUnstable = errors.New("statistics file changed during every read attempt")
