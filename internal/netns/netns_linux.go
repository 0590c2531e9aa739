package netns

import (
	"errors"
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// ErrNotNamespace says a path given as a network namespace is not a
// namespace file (not a file of the nsfs file system, as /run/netns/NAME
// and /proc/PID/ns/net are).
var ErrNotNamespace = errors.New("not a namespace file")

// Open opens the namespace file at path and returns its descriptor, which
// the caller closes. It opens with O_NONBLOCK, so a FIFO given as the
// namespace opens at once and is then refused instead of blocking in
// open(2), and refuses any file that is not on nsfs.
func Open(path string) (int, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return -1, fmt.Errorf("opening network namespace %s: %w", path, err)
	}
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("network namespace %s: %w", path, err)
	}
	if st.Type != unix.NSFS_MAGIC {
		unix.Close(fd)
		return -1, fmt.Errorf("network namespace %s: %w", path, ErrNotNamespace)
	}
	return fd, nil
}

// Do runs f on a thread that is in the network namespace at path (the
// current one if path is empty), then returns the thread to its own
// namespace. If that fails the thread stays locked and dies with its
// goroutine, so no other code ever runs in the wrong namespace.
func Do(path string, f func() error) error {
	if path == "" {
		return f()
	}
	target, err := Open(path)
	if err != nil {
		return err
	}
	defer unix.Close(target)
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("opening the current network namespace: %w", err)
			return
		}
		defer unix.Close(orig)
		if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("entering network namespace %s: %w", path, err)
			return
		}
		ferr := f()
		if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("leaving network namespace %s: %w", path, err)
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}
