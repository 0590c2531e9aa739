// Package xliostatstest publishes libxlio statistics files the way libxlio
// does, for tests and for the demo host: a file of mode 0644 kept mapped
// MAP_SHARED by the publishing process, whose counters are copied in only
// after a reader increments reader_counter.
package xliostatstest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/nic-exporter/nic_exporter/xliostats"
)

// Publisher is one statistics file, created and kept mapped by this
// process. A test that publishes a file for its own pid gets a writer
// that passes every liveness check of xliostats.Load, because the test
// process really maps it.
type Publisher struct {
	path string
	mem  []byte
	rc   int // offset of reader_counter

	mu     sync.Mutex
	last   int32
	copies int
}

// NewPublisher creates <dir>/xliostat.<pid> holding initial, which must be
// a file of a known layout (its reader_counter offset is taken from it),
// the way libxlio's xlio_shmem_stats_open does: mode 0644, zero-filled,
// then mapped shared. Unlike libxlio it refuses an existing name
// (O_EXCL).
func NewPublisher(dir string, pid int, initial []byte) (*Publisher, error) {
	h, err := xliostats.Identify(initial)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, xliostats.FilePrefix+strconv.Itoa(pid))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", path, err)
	}
	defer f.Close()
	if _, err := f.Write(initial); err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, len(initial), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("mapping %s: %w", path, err)
	}
	p := &Publisher{path: path, mem: mem, rc: h.Layout.ReaderCounterOffset()}
	p.last = p.ReaderCounter()
	return p, nil
}

// Path returns the file's path.
func (p *Publisher) Path() string { return p.path }

// ReaderCounter returns reader_counter, which readers increment.
func (p *Publisher) ReaderCounter() int32 {
	return atomic.LoadInt32((*int32)(unsafe.Pointer(&p.mem[p.rc])))
}

// Copy writes b into the file, all but reader_counter, the way libxlio's
// timer copies its counters. b must have the file's size.
func (p *Publisher) Copy(b []byte) error {
	if len(b) != len(p.mem) {
		return fmt.Errorf("%d bytes for a file of %d", len(b), len(p.mem))
	}
	copy(p.mem[:p.rc], b[:p.rc])
	copy(p.mem[p.rc+4:], b[p.rc+4:])
	return nil
}

// Poll is one tick of libxlio's stats timer: if reader_counter changed
// since the last tick, the counters (b) are copied into the file. It
// reports whether it copied.
func (p *Publisher) Poll(b []byte) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	rc := p.ReaderCounter()
	if rc == p.last {
		return false, nil
	}
	p.last = rc
	if err := p.Copy(b); err != nil {
		return false, err
	}
	p.copies++
	return true, nil
}

// Copies returns how many times Poll copied.
func (p *Publisher) Copies() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.copies
}

// Serve runs Poll with next() every interval until ctx ends (libxlio's
// timer runs every 10 ms).
func (p *Publisher) Serve(ctx context.Context, interval time.Duration, next func() []byte) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if _, err := p.Poll(next()); err != nil {
				return err
			}
		}
	}
}

// Close unmaps and removes the file, as libxlio does at a clean exit.
func (p *Publisher) Close() error {
	err := unix.Munmap(p.mem)
	if rerr := os.Remove(p.path); err == nil {
		err = rerr
	}
	return err
}
