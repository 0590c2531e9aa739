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
}

// ErrFiltered says LoadOptions.Accept declined the process.
var ErrFiltered = errors.New("process excluded by the filter")

// ErrUnstable says the file changed on every read.
var ErrUnstable = errors.New("statistics file changed during every read attempt")
