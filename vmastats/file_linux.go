package vmastats

import (
	"bytes"
	"errors"
	"fmt"
	"io"
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
//  1. Open: the file is opened without following a symbolic link,
//     checked to be a regular file with one link that is no mount point,
//     its writer verified with opts.Liveness, and reopened for I/O (see
//     Open);
//  2. the header is read with pread and the size is checked against the
//     layout its version implies before anything is mapped or written
//     (checkLayout);
//  3. the reader counter alone (offset 0) is incremented atomically
//     (File.Handshake);
//  4. the whole file is read with pread into private memory until two
//     reads agree, then decoded (decodeStable).
func Load(c Candidate, opts LoadOptions) (*Loaded, error) {
	f, err := Open(c, opts)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := CheckSize(f, c.Path, opts.MaxSize); err != nil {
		return nil, err
	}
	size, err := checkLayout(f, c.Path)
	if err != nil {
		return nil, err
	}
	out := &Loaded{Process: f.Process, Info: f.Info}
	if out.Handshake, err = f.Handshake(OffsetReaderCounter, opts.Settle); err != nil {
		return nil, err
	}
	if out.Stats, out.Raw, err = decodeStable(f, c.Path, size); err != nil {
		return nil, err
	}
	return out, nil
}

// CheckSize returns an error wrapping ErrTooLarge if f is larger than
// max bytes; a max of 0 or less is no limit.
func CheckSize(f *File, path string, max int64) error {
	if max > 0 && f.Size() > max {
		return fmt.Errorf("%w: %s has %d bytes, more than the limit of %d", ErrTooLarge, path, f.Size(), max)
	}
	return nil
}

// checkLayout reads the header of f, identifies the libvma version and
// layout it names, and returns the file size that layout implies, after
// checking that f has exactly that size. Errors wrap ErrUnsupported or
// Identify's errors, with the path.
func checkLayout(f *File, path string) (int64, error) {
	hdr := make([]byte, HeaderSize)
	if _, err := f.ReadAt(hdr, 0); err != nil {
		return 0, fmt.Errorf("%w: %s: reading the header: %v", ErrUnsupported, path, err)
	}
	ver, h, size, err := Identify(hdr)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	if size != f.Size() {
		return 0, fmt.Errorf("%w: %s has %d bytes, but libvma %s (layout %s, %d sockets) writes %d", ErrUnsupported, path, f.Size(), h.Version(), ver.Layout, h.MaxSockets, size)
	}
	return size, nil
}

// decodeStable reads size bytes of f until two reads agree (the reader
// counter aside) and decodes them; it returns the bytes decoded too.
func decodeStable(f *File, path string, size int64) (*Stats, []byte, error) {
	buf, err := f.ReadStable(size, OffsetReaderCounter)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	s, err := Parse(buf)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, buf, nil
}

// File is a statistics file opened by Open: verified, and open for
// reading (and for the reader handshake, when that is allowed). It is
// shared by the readers of every library that publishes its statistics
// this way (libvma here, libxlio in package xliostats).
type File struct {
	f        *os.File
	size     int64
	writable bool
	// Process is the verified writer.
	Process Process
	// Info is what fstat said of the file when it was opened.
	Info FileInfo
}

// Open opens the statistics file of c and verifies it and its writer,
// without reading a byte of it. In order:
//
//  1. open with O_PATH|O_NOFOLLOW, so a symbolic link is never followed
//     and nothing (a FIFO, a device) is opened for I/O yet; a name that
//     something is mounted on is refused before it is asked anything;
//  2. fstat: only a regular file with one link (no hard link to another
//     user's file) is accepted;
//  3. the writer is verified with opts.Liveness (owner, start time, and
//     that the process maps this very inode);
//  4. opts.Accept is asked (ErrFiltered if it declines);
//  5. the same inode is reopened for I/O through /proc/self/fd, read-write
//     when the handshake is wanted and allowed, else read-only, and
//     checked to be the inode of step 2.
//
// Errors wrap ErrRefused, ErrStale or ErrFiltered where they apply. The
// caller must Close the File.
func Open(c Candidate, opts LoadOptions) (*File, error) {
	pfd, st, err := openPath(c.Path)
	if err != nil {
		return nil, err
	}
	defer unix.Close(pfd)
	fi := FileInfo{Dev: st.Dev, Ino: st.Ino, UID: st.Uid, Size: st.Size, Ctime: time.Unix(st.Ctim.Unix())}
	proc, err := verifyWriter(c, fi, opts)
	if err != nil {
		return nil, err
	}
	f, writable, size, err := reopen(pfd, c.Path, st, !opts.NoHandshake)
	if err != nil {
		return nil, err
	}
	return &File{f: f, size: size, writable: writable, Process: proc, Info: fi}, nil
}

// openPath opens path with O_PATH|O_NOFOLLOW (steps 1 and 2 of Open) and
// returns the descriptor, which the caller must close, and what fstat
// said of it: only a regular file with one link that is no mount point
// is accepted.
func openPath(path string) (int, unix.Stat_t, error) {
	var st unix.Stat_t
	pfd, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) {
		return -1, st, fmt.Errorf("%w: %s is a symbolic link", ErrRefused, path)
	}
	if errors.Is(err, unix.ENOENT) {
		return -1, st, fmt.Errorf("%w: %s vanished", ErrStale, path)
	}
	if err != nil {
		return -1, st, fmt.Errorf("opening %s: %w", path, err)
	}
	if err := checkPath(pfd, path, &st); err != nil {
		unix.Close(pfd)
		return -1, st, err
	}
	return pfd, st, nil
}

// checkPath refuses a mount point, fills st from fstat of pfd and refuses
// anything but a regular file with one link (no hard link to another
// user's file).
func checkPath(pfd int, path string, st *unix.Stat_t) error {
	if err := refuseMountPoint(pfd, path); err != nil {
		return err
	}
	if err := unix.Fstat(pfd, st); err != nil {
		return fmt.Errorf("stat %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		// O_PATH|O_NOFOLLOW opens the link itself, never its target.
		return fmt.Errorf("%w: %s is a symbolic link", ErrRefused, path)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("%w: %s is not a regular file (mode %#o)", ErrRefused, path, st.Mode)
	}
	if st.Nlink != 1 {
		return fmt.Errorf("%w: %s has %d hard links", ErrRefused, path, st.Nlink)
	}
	return nil
}

// verifyWriter verifies the writer of the file fi with opts.Liveness
// (procfs at /proc when nil) and asks opts.Accept about it (steps 3 and 4
// of Open).
func verifyWriter(c Candidate, fi FileInfo, opts LoadOptions) (Process, error) {
	live := opts.Liveness
	if live == nil {
		live = NewProcLiveness("/proc")
	}
	proc, err := live.Verify(c.PID, fi)
	if err != nil {
		return Process{}, fmt.Errorf("%s: %w", c.Path, err)
	}
	if opts.Accept != nil && !opts.Accept(proc) {
		return Process{}, ErrFiltered
	}
	return proc, nil
}

// reopen opens the inode of pfd for I/O through /proc/self/fd (step 5 of
// Open): read-write when wantWrite and the file allows it, else
// read-only. It checks that the inode is still the one st describes and
// returns the file, whether it is writable, and its size.
func reopen(pfd int, path string, st unix.Stat_t, wantWrite bool) (*os.File, bool, int64, error) {
	self := "/proc/self/fd/" + strconv.Itoa(pfd)
	writable := wantWrite
	fd := -1
	var err error
	if writable {
		fd, err = unix.Open(self, unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
		if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EROFS) {
			writable = false
		} else if err != nil {
			return nil, false, 0, fmt.Errorf("reopening %s: %w", path, err)
		}
	}
	if fd < 0 {
		if fd, err = unix.Open(self, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY, 0); err != nil {
			return nil, false, 0, fmt.Errorf("reopening %s: %w", path, err)
		}
	}
	f := os.NewFile(uintptr(fd), path)
	var st2 unix.Stat_t
	if err := unix.Fstat(fd, &st2); err != nil {
		f.Close()
		return nil, false, 0, fmt.Errorf("stat %s: %w", path, err)
	}
	if st2.Dev != st.Dev || st2.Ino != st.Ino {
		f.Close()
		return nil, false, 0, fmt.Errorf("%w: %s was replaced while it was opened", ErrRefused, path)
	}
	return f, writable, st2.Size, nil
}

// Close closes the file.
func (f *File) Close() error { return f.f.Close() }

// Size returns the file's size when it was opened.
func (f *File) Size() int64 { return f.size }

// Writable reports whether the file is open read-write, so that
// BumpReaderCounter can work.
func (f *File) Writable() bool { return f.writable }

// ReadAt reads len(b) bytes at off with pread.
func (f *File) ReadAt(b []byte, off int64) (int, error) { return f.f.ReadAt(b, off) }

// ReadStable reads size bytes with ReadStable semantics: see readStable.
// counterOff is the offset of the 4-byte reader counter, which is left
// out of the comparison.
func (f *File) ReadStable(size int64, counterOff int64) ([]byte, error) {
	return readStable(f.f, size, counterOff)
}

// BumpReaderCounter atomically increments the int32 reader counter at
// off, the one write a reader makes. It fails unless the file is
// writable; see bumpReaderCounter.
func (f *File) BumpReaderCounter(off int64) error {
	if !f.writable {
		return errors.New("the file is open read-only")
	}
	return bumpReaderCounter(int(f.f.Fd()), off)
}

// Handshake is the reader handshake: when the file is writable it
// increments the int32 reader counter at counterOff (BumpReaderCounter),
// waits settle so that the library's timer copies its counters into the
// file, and reports true; a read-only file is left as the library last
// wrote it, and Handshake reports false.
func (f *File) Handshake(counterOff int64, settle time.Duration) (bool, error) {
	if !f.writable {
		return false, nil
	}
	if err := f.BumpReaderCounter(counterOff); err != nil {
		return false, fmt.Errorf("%s: reader handshake: %w", f.f.Name(), err)
	}
	if settle > 0 {
		time.Sleep(settle)
	}
	return true, nil
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
// The reader counter, 4 bytes at counterOff, is excluded from the
// comparison: other readers bump it at any time.
func readStable(f io.ReaderAt, size, counterOff int64) ([]byte, error) {
	a := make([]byte, size)
	b := make([]byte, size)
	if err := readFull(f, a); err != nil {
		return nil, err
	}
	for i := 1; i < maxReadAttempts; i++ {
		if err := readFull(f, b); err != nil {
			return nil, err
		}
		if equalExcept(a, b, counterOff) {
			return b, nil
		}
		a, b = b, a
	}
	return nil, ErrUnstable
}

// equalExcept reports whether a and b are equal outside the 4 bytes at
// skip.
func equalExcept(a, b []byte, skip int64) bool {
	if skip < 0 || skip+4 > int64(len(a)) {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(a[:skip], b[:skip]) && bytes.Equal(a[skip+4:], b[skip+4:])
}

func readFull(f io.ReaderAt, b []byte) error {
	n, err := f.ReadAt(b, 0)
	if n != len(b) {
		return fmt.Errorf("%w: file shrank while it was read (%d of %d bytes): %v", ErrUnsupported, n, len(b), err)
	}
	return nil
}

// bumpReaderCounter maps the page of fd that holds off shared and
// read-write and atomically increments the int32 at off: the reader
// counter (libvma: offset 0; libxlio: 0, or past the arrays from 3.60).
// Nothing else is ever written. If the file is truncated concurrently,
// the access faults with SIGBUS; the fault becomes an error.
func bumpReaderCounter(fd int, off int64) error {
	if off < 0 || off%4 != 0 {
		return fmt.Errorf("reader counter offset %d is not an aligned int32", off)
	}
	page := int64(os.Getpagesize())
	base := off &^ (page - 1)
	mem, err := unix.Mmap(fd, base, int(page), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("mapping the page at %d: %w", base, err)
	}
	defer unix.Munmap(mem)
	return addInt32(mem[off-base:])
}

// addInt32 increments the native-endian int32 at the start of mem,
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
