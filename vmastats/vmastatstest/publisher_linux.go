package vmastatstest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/nic-exporter/nic_exporter/vmastats"
)

// Publisher writes a statistics file the way libvma does: it creates
// <dir>/vmastat.<pid> with mode 0644, sizes it for the layout, keeps it
// mapped MAP_SHARED and rewrites the counters in place. A test that
// publishes a file for its own pid gets a writer that passes every
// liveness check of vmastats.Load, because the test process really maps
// it.
type Publisher struct {
	path string
	mem  []byte
	buf  []byte
}

// NewPublisher creates the file for pid in dir and writes s into it.
func NewPublisher(dir string, pid int, s *vmastats.Stats) (*Publisher, error) {
	b, err := Encode(s)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, vmastats.FilePrefix+strconv.Itoa(pid))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", path, err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, len(b), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("mapping %s: %w", path, err)
	}
	return &Publisher{path: path, mem: mem, buf: b}, nil
}

// Path returns the file's path.
func (p *Publisher) Path() string { return p.path }

// ReaderCounter returns the reader counter that readers increment.
func (p *Publisher) ReaderCounter() int32 {
	return atomic.LoadInt32((*int32)(unsafe.Pointer(&p.mem[0])))
}

// Update rewrites every field but the reader counter from s, which must
// keep the layout and socket count the file was created with. Like
// libvma it writes without a lock; readers may see a torn block.
func (p *Publisher) Update(s *vmastats.Stats) error {
	if err := EncodeInto(p.buf, s); err != nil {
		return err
	}
	copy(p.mem[4:], p.buf[4:])
	return nil
}

// Close unmaps the file and removes it, as libvma does at a normal exit.
func (p *Publisher) Close() error {
	err := unix.Munmap(p.mem)
	if rerr := os.Remove(p.path); err == nil {
		err = rerr
	}
	return err
}

// Detach unmaps the file and leaves it behind, as after a SIGKILL.
func (p *Publisher) Detach() error { return unix.Munmap(p.mem) }
