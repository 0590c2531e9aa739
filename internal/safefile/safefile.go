// Package safefile opens files whose type the exporter does not control
// without blocking: a named pipe, socket or device planted where a
// regular file is expected would otherwise hold open(2) or read(2) until
// a writer comes, and with it the poll, the startup or the shutdown that
// reads it. Every open uses O_NONBLOCK, which opens a FIFO at once, and
// then checks the type of what was opened with fstat(2) on the descriptor,
// so a path swapped between a check and the open cannot slip through.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotRegular says a path that must be a regular file is something else.
var ErrNotRegular = errors.New("not a regular file")

// ErrNotCharDevice says a path that must be a character device is
// something else.
var ErrNotCharDevice = errors.New("not a character device")

// ErrTooLarge says a file is larger than its reader accepts.
var ErrTooLarge = errors.New("file too large")

// Open opens path read-only without blocking and returns it if its mode
// satisfies ok; otherwise it closes it and returns an *os.PathError that
// wraps typeErr and names the type found. The descriptor keeps
// O_NONBLOCK, which regular files, directories and sysfs attributes
// ignore.
func Open(path string, ok func(fs.FileMode) bool, typeErr error) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !ok(st.Mode()) {
		f.Close()
		return nil, &os.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (%s)", typeErr, TypeName(st.Mode()))}
	}
	return f, nil
}

// OpenRegular opens path read-only if it is a regular file.
func OpenRegular(path string) (*os.File, error) {
	return Open(path, fs.FileMode.IsRegular, ErrNotRegular)
}

// OpenCharDevice opens path read-only if it is a character device.
func OpenCharDevice(path string) (*os.File, error) {
	return Open(path, func(m fs.FileMode) bool {
		return m&fs.ModeCharDevice != 0
	}, ErrNotCharDevice)
}

// ReadRegular reads the regular file at path whole, refusing one larger
// than limit bytes (checked while reading, so a file that grows, or a
// special file that reports no size, cannot exhaust memory).
func ReadRegular(path string, limit int64) ([]byte, error) {
	f, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &os.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)}
	}
	return data, nil
}

// TypeName names the file type in m for error messages.
func TypeName(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "regular file"
	case m.IsDir():
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	}
	return "irregular file"
}
