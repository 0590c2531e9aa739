package vmastats

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Load opens, verifies, handshakes and decodes the file of c. In order:
//
//  1. open with O_PATH|O_NOFOLLOW, so a symbolic link is never followed
//     and nothing (a FIFO, a device) is opened for I/O yet; a name that
//     something is mounted on is refused before it is asked anything;
//  2. fstat: only a regular file with one link (no hard link to another
//     user's file) is accepted;
//  3. the writer is verified with opts.Liveness (owner, start time, and
//     that the process maps this very inode);
//  4. the same inode is reopened for I/O through /proc/self/fd, read-write
//     when allowed, else read-only;
//  5. the header is read with pread and the size is checked against the
//     layout its version implies before anything is mapped or written;
//  6. the reader counter alone is incremented atomically through a
//     shared mapping of the first page, with faults (a concurrent
//     truncation raises SIGBUS) turned into errors;
//  7. the whole file is read with pread into private memory until two
//     reads agree, then decoded.
func Load(c Candidate, opts LoadOptions) (*Loaded, error) {
	live := opts.Liveness
	if live == nil {
		live = NewProcLiveness("/proc")
	}
	pfd, err := unix.Open(c.Path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) {
		return nil, fmt.Errorf("%w: %s is a symbolic link", ErrRefused, c.Path)
	}
	if errors.Is(err, unix.ENOENT) {
		return nil, fmt.Errorf("%w: %s vanished", ErrStale, c.Path)
	}
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", c.Path, err)
	}
	defer unix.Close(pfd)
	if err := refuseMountPoint(pfd, c.Path); err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return nil, fmt.Errorf("stat %s: %w", c.Path, err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		// O_PATH|O_NOFOLLOW opens the link itself, never its target.
		return nil, fmt.Errorf("%w: %s is a symbolic link", ErrRefused, c.Path)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%w: %s is not a regular file (mode %#o)", ErrRefused, c.Path, st.Mode)
	}
	if st.Nlink != 1 {
		return nil, fmt.Errorf("%w: %s has %d hard links", ErrRefused, c.Path, st.Nlink)
	}
	fi := FileInfo{Dev: st.Dev, Ino: st.Ino, UID: st.Uid, Size: st.Size, Ctime: time.Unix(st.Ctim.Unix())}
	proc, err := live.Verify(c.PID, fi)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Path, err)
	}
	if opts.Accept != nil && !opts.Accept(proc) {
		return nil, ErrFiltered
	}

	self := "/proc/self/fd/" + strconv.Itoa(pfd)
	writable := !opts.NoHandshake
	fd := -1
	if writable {
		fd, err = unix.Open(self, unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
		if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EROFS) {
			writable = false
		} else if err != nil {
			return nil, fmt.Errorf("reopening %s: %w", c.Path, err)
		}
	}
	if fd < 0 {
		if fd, err = unix.Open(self, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY, 0); err != nil {
			return nil, fmt.Errorf("reopening %s: %w", c.Path, err)
		}
	}
	f := os.NewFile(uintptr(fd), c.Path)
	defer f.Close()
	var st2 unix.Stat_t
	if err := unix.Fstat(fd, &st2); err != nil {
		return nil, fmt.Errorf("stat %s: %w", c.Path, err)
	}
	if st2.Dev != st.Dev || st2.Ino != st.Ino {
		return nil, fmt.Errorf("%w: %s was replaced while it was opened", ErrRefused, c.Path)
	}

	hdr := make([]byte, HeaderSize)
	if _, err := f.ReadAt(hdr, 0); err != nil {
		return nil, fmt.Errorf("%w: %s: reading the header: %v", ErrUnsupported, c.Path, err)
	}
	ver, h, size, err := Identify(hdr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Path, err)
	}
	if size != st2.Size {
		return nil, fmt.Errorf("%w: %s has %d bytes, but libvma %s (layout %s, %d sockets) writes %d", ErrUnsupported, c.Path, st2.Size, h.Version(), ver.Layout, h.MaxSockets, size)
	}

	out := &Loaded{Process: proc, Info: fi}
	if writable {
		if err := bumpReaderCounter(fd); err != nil {
			return nil, fmt.Errorf("%s: reader handshake: %w", c.Path, err)
		}
		out.Handshake = true
		if opts.Settle > 0 {
			time.Sleep(opts.Settle)
		}
	}

	buf, err := readStable(f, size)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Path, err)
	}
	s, err := Parse(buf)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Path, err)
	}
	out.Stats = s
	return out, nil
}

// refuseMountPoint refuses a name that something is mounted on. O_NOFOLLOW
// does not stop a mount over the name, and an unprivileged user can mount
// a FUSE file system over a file he owns in /tmp (fusermount), whose
// daemon can then stall any stat or read of it. The checks use statx with
// AT_STATX_DONT_SYNC, which answers from the kernel's caches and sends
// no request to a FUSE daemon: the mount-root attribute where the kernel
// reports it (5.8+), and else the device, which differs from the
// directory's on any other file system.
func refuseMountPoint(pfd int, path string) error {
	var sx unix.Statx_t
	if err := unix.Statx(pfd, "", unix.AT_EMPTY_PATH|unix.AT_STATX_DONT_SYNC, unix.STATX_TYPE, &sx); err != nil {
		return fmt.Errorf("stat %s: %w", path, err)
	}
	if sx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 {
		if sx.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0 {
			return fmt.Errorf("%w: %s is a mount point", ErrRefused, path)
		}
		return nil
	}
	var dir unix.Stat_t
	if err := unix.Stat(filepath.Dir(path), &dir); err != nil {
		return fmt.Errorf("stat %s: %w", filepath.Dir(path), err)
	}
	if unix.Mkdev(sx.Dev_major, sx.Dev_minor) != dir.Dev {
		return fmt.Errorf("%w: %s is a mount point (on another file system than its directory)", ErrRefused, path)
	}
	return nil
}

// maxReadAttempts bounds the re-reads made to get two identical copies
// of a file that its writer updates without a lock.
const maxReadAttempts = 4

// readStable reads size bytes until two consecutive reads are equal, so
// a block that libvma was rewriting during one read is not decoded torn.
// The reader counter is excluded from the comparison: other readers bump
// it at any time.
func readStable(f *os.File, size int64) ([]byte, error) {
	a := make([]byte, size)
	b := make([]byte, size)
	if err := readFull(f, a); err != nil {
		return nil, err
	}
	for i := 1; i < maxReadAttempts; i++ {
		if err := readFull(f, b); err != nil {
			return nil, err
		}
		if bytes.Equal(a[4:], b[4:]) {
			return b, nil
		}
		a, b = b, a
	}
	return nil, ErrUnstable
}

func readFull(f *os.File, b []byte) error {
	n, err := f.ReadAt(b, 0)
	if n != len(b) {
		return fmt.Errorf("%w: file shrank while it was read (%d of %d bytes): %v", ErrUnsupported, n, len(b), err)
	}
	return nil
}

// bumpReaderCounter maps the first page of fd shared and read-write and
// atomically increments the int32 at offset 0, libvma's reader_counter.
// Nothing else is ever written. If the file is truncated concurrently,
// the access faults with SIGBUS; the fault becomes an error.
func bumpReaderCounter(fd int) error {
	mem, err := unix.Mmap(fd, 0, os.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("mapping the first page: %w", err)
	}
	defer unix.Munmap(mem)
	return addInt32(mem)
}

// addInt32 increments the little-endian int32 at the start of mem,
// converting a memory fault into an error.
func addInt32(mem []byte) (err error) {
	if len(mem) < 4 {
		return errors.New("mapping too small")
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("memory fault while incrementing the reader counter (file truncated?): %v", r)
		}
	}()
	atomic.AddInt32((*int32)(unsafe.Pointer(&mem[0])), 1)
	return nil
}
