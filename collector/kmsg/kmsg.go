// Package kmsg is the kmsg collector: it reads /dev/kmsg and counts the
// documented error lines of NIC drivers (mlx5_core, mlx5_ib, ena, the RDMA
// core), the netdev watchdog, PCIe AER and IOMMU faults of network
// functions as nic_kernel_log_events_total{driver,device,event}.
package kmsg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/internal/logrules"
	"github.com/nic-exporter/nic_exporter/internal/safefile"
)

// Device is the kernel log as /dev/kmsg presents it. The demo host
// implements it with a fake kernel buffer.
type Device interface {
	// Read reads exactly one record into p, blocking until one is
	// available. It returns an error wrapping syscall.EPIPE when records
	// were overwritten before they could be read; the next Read goes on
	// with the oldest record still in the buffer.
	Read(p []byte) (int, error)
	// Pending reports whether a record (or an overrun) is ready to be read
	// without blocking.
	Pending() (bool, error)
	// SeekEnd skips the records now in the buffer.
	SeekEnd() error
	// Close ends reading; a Read blocked in another goroutine returns.
	Close() error
}

// Opener opens the kernel log.
type Opener func() (Device, error)

// OpenDevKmsg returns a Opener for the character device at path,
// normally /dev/kmsg.
func OpenDevKmsg(path string) Opener {
	return func() (Device, error) {
		// The Go runtime polls character devices that support poll(2),
		// so Close unblocks a pending Read. Only a character device is
		// read, and the open does not block: a FIFO or a regular file at
		// path is refused at once.
		f, err := safefile.OpenCharDevice(path)
		if err != nil {
			return nil, err
		}
		// The descriptor's own device number, so that a path swapped
		// after a check cannot slip through: another character device
		// (/dev/zero, a terminal) never blocks, or blocks forever, and
		// its bytes are no records.
		st, err := f.Stat()
		if err == nil {
			err = CheckDevice(path, st)
		}
		if err != nil {
			f.Close()
			return nil, err
		}
		return devKmsg{f}, nil
	}
}

// ErrNotKmsg says a character device is not the kernel log.
var ErrNotKmsg = errors.New("not the kernel log")

// The device number of /dev/kmsg: character major 1 (memory devices),
// minor 11 (the kernel's admin-guide/devices.txt).
const (
	kmsgMajor = 1
	kmsgMinor = 11
)

// CheckDevice returns nil if fi, what a stat of path found, is the
// kernel log device (character device 1:11) and an error naming what it
// is otherwise; an error of another character device wraps ErrNotKmsg.
// /dev/zero in its place would be read without ever blocking, 16 KiB of
// zeros at a time, burning a core while the collector reported up.
func CheckDevice(path string, fi fs.FileInfo) error {
	if fi.Mode()&fs.ModeCharDevice == 0 {
		return fmt.Errorf("%s is not a character device", path)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%s: no device number", path)
	}
	major, minor := unix.Major(uint64(st.Rdev)), unix.Minor(uint64(st.Rdev)) // uint32 on some architectures
	if major != kmsgMajor || minor != kmsgMinor {
		return fmt.Errorf("%s is character device %d:%d, %w (%d:%d)", path, major, minor, ErrNotKmsg, kmsgMajor, kmsgMinor)
	}
	return nil
}

type devKmsg struct{ *os.File }

// Pending polls the descriptor without blocking. SyscallConn keeps the
// descriptor in the non-blocking mode the Go runtime poller uses.
func (d devKmsg) Pending() (bool, error) {
	rc, err := d.SyscallConn()
	if err != nil {
		return false, err
	}
	var ready bool
	var perr error
	err = rc.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			n, err := unix.Poll(fds, 0)
			if err == unix.EINTR {
				continue
			}
			ready, perr = n > 0 && fds[0].Revents != 0, err
			return
		}
	})
	if err != nil {
		return false, err
	}
	return ready, perr
}

func (d devKmsg) SeekEnd() error {
	_, err := d.Seek(0, io.SeekEnd)
	return err
}

// Config configures the kmsg collector.
type Config struct {
	// Open opens the kernel log: OpenDevKmsg("/dev/kmsg") or a demo fake.
	Open Opener
	// Rules is the rule table; usually logrules.Load(file, KernelRules()).
	Rules *logrules.Engine
	// Replay counts the records still in the kernel buffer at start, so
	// errors printed at boot or before a restart are seen. If false, only
	// records logged after the start are counted.
	Replay bool
	// Filter selects devices; events of excluded devices are not counted.
	Filter collector.NameFilter
	// Devices looks up the devices lines name: an RDMA device name is
	// replaced by the PCI address of its function, and events of rules
	// marked NICOnly (PCIe AER, bandwidth, IOMMU faults) are counted only
	// when the PCI function is a network or InfiniBand controller. A
	// function that Devices does not know (gone since the line was logged,
	// or sysfs not mounted where configured) is counted: the exporter
	// would rather report an error of an unknown device than hide one of
	// a NIC. Nil counts every match under the name the line gives.
	Devices Devices
	// BootTime is the wall-clock time of record timestamp zero; default
	// now minus CLOCK_MONOTONIC, the clock printk stamps records with.
	BootTime time.Time
	// MaxSeries bounds the (driver, device, event) combinations kept;
	// default 1000. Events past it are counted as dropped.
	MaxSeries int
	// PublishInterval coalesces the snapshots published between polls
	// when records arrive in bursts; default 250 ms.
	PublishInterval time.Duration
	// StateFile, if not empty, is where the counters are saved at each
	// poll that follows a change, and restored from at start when the file
	// is from the same boot (state.go): the records after the saved one
	// are then counted whatever Replay says, so the totals continue even
	// if the kernel rotated records out of its buffer in between.
	StateFile string
	// BootID returns the running kernel's boot id (ReadBootID); it is
	// needed, and read once, only with a StateFile.
	BootID func() (string, error)
}

// Collector counts kernel log records that match the rule table, from
// /dev/kmsg. It is an EventSource: a matching record is published within
// PublishInterval, without waiting for the next poll.
type Collector struct {
	cfg Config
	log *zap.Logger

	openMu  sync.Mutex
	dev     Device
	openErr error // permanent: the device is absent or not readable

	dirty atomic.Bool

	mu         sync.Mutex
	counts     map[kmsgKey]*kmsgCount
	records    uint64
	overruns   uint64
	unparsable uint64
	dropped    uint64
	lastSeq    uint64
	haveSeq    bool
	readErr    error
	gen        uint64 // changes of the counters, for saveState
	savedGen   uint64 // gen at the last save or restore
	resumed    bool   // restored from the state file; no record read since
	readSeq    uint64 // sequence number of the last record read from dev
	readSeqOK  bool   // readSeq is set

	// The state file (state.go). stateLoaded and stateErr are guarded by
	// openMu; saveMu serializes saves.
	stateLoaded bool
	stateErr    error // to count as a source error at the next poll
	saveMu      sync.Mutex
	lastSaveErr string
	bootIDOnce  sync.Once
	bootIDVal   string
	bootIDErr   error
}

type kmsgKey struct{ driver, device, event string }

type kmsgCount struct {
	n    uint64
	last time.Time
}

var (
	kmsgEventsDesc = exposition.MustNewDesc("nic_kernel_log_events_total",
		"Kernel log records that matched a rule, by driver, device (PCI address, interface or RDMA device the line names; empty if none) and event.",
		exposition.Counter, "driver", "device", "event")
	kmsgLastDesc = exposition.MustNewDesc("nic_kernel_log_last_event_timestamp_seconds",
		"Wall-clock time of the last kernel log record that matched, from the record's timestamp.",
		exposition.Gauge, "driver", "device", "event")
	kmsgRecordsDesc = exposition.MustNewDesc("nic_kernel_log_records_total",
		"Kernel log records read from /dev/kmsg, matched or not.", exposition.Counter)
	kmsgOverrunsDesc = exposition.MustNewDesc("nic_kernel_log_overruns_total",
		"Times the kernel overwrote records before they were read (EPIPE from /dev/kmsg); events in them are lost.", exposition.Counter)
	kmsgUnparsableDesc = exposition.MustNewDesc("nic_kernel_log_unparsable_records_total",
		"Records read from /dev/kmsg that could not be parsed.", exposition.Counter)
	kmsgDroppedDesc = exposition.MustNewDesc("nic_kernel_log_dropped_events_total",
		"Matching records not counted because the number of (driver, device, event) series reached its limit.", exposition.Counter)
)

// New returns a kmsg collector.
func New(cfg Config, log *zap.Logger) *Collector {
	if cfg.MaxSeries <= 0 {
		cfg.MaxSeries = 1000
	}
	if cfg.PublishInterval <= 0 {
		cfg.PublishInterval = 250 * time.Millisecond
	}
	if cfg.BootTime.IsZero() {
		cfg.BootTime = monotonicBootTime()
	}
	return &Collector{cfg: cfg, log: log, counts: make(map[kmsgKey]*kmsgCount)}
}

// monotonicBootTime returns the wall-clock time at which CLOCK_MONOTONIC
// was zero.
func monotonicBootTime() time.Time {
	var ts unix.Timespec
	now := time.Now()
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return now
	}
	return now.Add(-time.Duration(ts.Nano()))
}

// Name implements collector.Collector.
func (*Collector) Name() string { return "kmsg" }

// Update implements collector.Collector. It renders the counts so far;
// the reading happens in Watch. It fails if the kernel log cannot be read.
func (k *Collector) Update(ctx context.Context, p *collector.Poll) error {
	if _, err := k.open(); err != nil {
		return err
	}
	k.mu.Lock()
	err := k.readErr
	k.mu.Unlock()
	if err != nil {
		return err
	}
	k.render(p)
	k.openMu.Lock()
	stateErr := k.stateErr
	k.stateErr = nil
	k.openMu.Unlock()
	if stateErr != nil {
		p.CountSourceError(stateErr) // logged by restoreState
	}
	if err := k.saveState(); err != nil {
		p.CountSourceError(err) // logged by saveState
	}
	return nil
}

// open opens the device once. An absent device is ErrNoSource; a device
// that cannot be opened for lack of privilege is a permanent, clear error.
func (k *Collector) open() (Device, error) {
	k.openMu.Lock()
	defer k.openMu.Unlock()
	if k.dev != nil || k.openErr != nil {
		return k.dev, k.openErr
	}
	dev, err := k.cfg.Open()
	switch {
	case errors.Is(err, fs.ErrNotExist):
		k.openErr = fmt.Errorf("kernel log: %w: %v", collector.ErrNoSource, err)
		return nil, k.openErr
	case errors.Is(err, fs.ErrPermission):
		// Both the printk permission check and, in a container, the
		// device cgroup refuse with EPERM; name both.
		k.openErr = fmt.Errorf("reading the kernel log needs CAP_SYSLOG (or root) and, in a container, /dev/kmsg allowed in its device cgroup (Kubernetes: a device plugin); counting kernel log events is off: %w", err)
		return nil, k.openErr
	case errors.Is(err, ErrNotKmsg), errors.Is(err, safefile.ErrNotCharDevice):
		// Reopening cannot make it the kernel log.
		k.openErr = fmt.Errorf("opening the kernel log: %w", err)
		return nil, k.openErr
	case err != nil:
		return nil, fmt.Errorf("opening the kernel log: %w", err)
	}
	k.restoreState()
	k.mu.Lock()
	first := !k.haveSeq
	k.readSeqOK = false
	k.mu.Unlock()
	if first && !k.cfg.Replay {
		if err := dev.SeekEnd(); err != nil {
			dev.Close()
			return nil, fmt.Errorf("seeking to the end of the kernel log: %w", err)
		}
	}
	if err := k.catchUp(dev); err != nil {
		dev.Close()
		return nil, err
	}
	k.mu.Lock()
	k.readErr = nil
	k.mu.Unlock()
	k.dev = dev
	return dev, nil
}

// catchUpLimit bounds the synchronous reading at open; the kernel buffer
// is a few megabytes at most, read in well under a second.
const catchUpLimit = 10 * time.Second

// catchUp counts the records ready now, before anyone reads the device
// concurrently, so that the first poll already shows the replayed buffer
// (and output on a fixed input, such as the demo host, is reproducible).
func (k *Collector) catchUp(dev Device) error {
	buf := make([]byte, kmsgBufSize)
	deadline := time.Now().Add(catchUpLimit)
	for time.Now().Before(deadline) {
		ready, err := dev.Pending()
		if err != nil {
			return fmt.Errorf("polling the kernel log: %w", err)
		}
		if !ready {
			return nil
		}
		n, err := dev.Read(buf)
		if errors.Is(err, syscall.EPIPE) {
			k.mu.Lock()
			k.overruns++
			k.gen++
			k.mu.Unlock()
			continue
		}
		if err != nil {
			return fmt.Errorf("reading the kernel log: %w", err)
		}
		k.record(buf[:n])
	}
	return nil
}

// reset forgets the open device after a read error, so that the next
// Watch reopens it. Records already counted are skipped by sequence number.
func (k *Collector) reset(dev Device) {
	k.openMu.Lock()
	if k.dev == dev {
		k.dev = nil
	}
	k.openMu.Unlock()
	dev.Close()
}

// Watch implements collector.EventSource: it reads records until ctx is done.
func (k *Collector) Watch(ctx context.Context, publish func(render func(p *collector.Poll))) error {
	dev, err := k.open()
	if errors.Is(err, collector.ErrNoSource) {
		return err
	}
	if err != nil {
		k.openMu.Lock()
		permanent := k.openErr != nil
		k.openMu.Unlock()
		if !permanent {
			return err // the Runner retries with a back-off
		}
		// Update reports the error (up 0) at each poll, the Runner logs it
		// once; retrying cannot help, so wait for the end.
		<-ctx.Done()
		return ctx.Err()
	}

	pctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(k.cfg.PublishInterval)
		defer t.Stop()
		for {
			select {
			case <-pctx.Done():
				return
			case <-t.C:
				if k.dirty.Swap(false) {
					publish(k.render)
				}
			}
		}
	}()
	stop := context.AfterFunc(ctx, func() { dev.Close() })
	defer stop()

	err = k.readLoop(ctx, dev)
	cancel()
	wg.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	k.reset(dev)
	k.mu.Lock()
	k.readErr = err
	k.mu.Unlock()
	return err
}

// kmsgBufSize holds the largest record the kernel returns (its
// CONSOLE_EXT_LOG_MAX is 8192 bytes).
const kmsgBufSize = 16 << 10

func (k *Collector) readLoop(ctx context.Context, dev Device) error {
	buf := make([]byte, kmsgBufSize)
	for {
		n, err := dev.Read(buf)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, syscall.EPIPE) {
			k.mu.Lock()
			k.overruns++
			k.gen++
			k.mu.Unlock()
			k.dirty.Store(true)
			continue
		}
		if err != nil {
			return fmt.Errorf("reading the kernel log: %w", err)
		}
		if k.record(buf[:n]) {
			k.dirty.Store(true)
		}
		k.mu.Lock()
		k.readErr = nil
		k.mu.Unlock()
	}
}

// record counts one raw record and reports whether the exported state
// changed. Its cost per line is one parse (no allocation beyond the
// message string) and the rule table's literal prefilter; the regular
// expression of a rule runs only when its literal is in the line.
func (k *Collector) record(raw []byte) bool {
	r, err := parseKmsgRecord(raw)
	k.mu.Lock()
	defer k.mu.Unlock()
	if err != nil {
		// A record without a sequence number is new if the one read
		// before it was: after a reopen or a restart, the unparsable
		// records before the last one counted are not counted again.
		if k.haveSeq && (!k.readSeqOK || k.readSeq < k.lastSeq) {
			return false
		}
		k.unparsable++
		k.gen++
		return true
	}
	k.readSeq, k.readSeqOK = r.Seq, true
	if k.haveSeq && r.Seq <= k.lastSeq {
		return false // already counted before a reopen or a restart
	}
	if k.resumed {
		k.resumed = false
		if r.Seq > k.lastSeq+1 {
			// Rotated out of the buffer while the exporter was down.
			k.overruns++
			k.log.Warn("kernel log records were lost between the saved state and the start; the overrun is counted",
				zap.Uint64("saved_seq", k.lastSeq), zap.Uint64("first_seq", r.Seq))
		}
	}
	k.gen++
	k.lastSeq, k.haveSeq = r.Seq, true
	k.records++
	key, ok := k.classify(r.Message, r.Device)
	if !ok {
		return false
	}
	dev := key.device
	if dev != "" && !k.cfg.Filter.Match(dev) {
		return false
	}
	c := k.counts[key]
	if c == nil {
		if len(k.counts) >= k.cfg.MaxSeries {
			if k.dropped == 0 {
				k.log.Warn("too many kernel log event series; further ones are dropped",
					zap.Int("limit", k.cfg.MaxSeries))
			}
			k.dropped++
			return true
		}
		c = &kmsgCount{}
		k.counts[key] = c
	}
	c.n++
	c.last = k.cfg.BootTime.Add(r.Since)
	return true
}

// classify matches one message against the rules and returns the series
// it counts in, or false when no rule matches or the line is about a PCI
// function that is no network controller. dict is the record's DEVICE=
// dictionary value.
func (k *Collector) classify(msg, dict string) (kmsgKey, bool) {
	m, ok := k.cfg.Rules.Match(msg)
	if !ok {
		return kmsgKey{}, false
	}
	dev := m.Device
	if dev == "" && (m.Rule.Device == logrules.DevicePCI || m.Rule.Device == logrules.DeviceInterface) {
		dev = pciFromDict(dict)
	}
	if d := k.cfg.Devices; d != nil && dev != "" {
		if m.Rule.Device == logrules.DeviceName && !logrules.IsPCIAddress(dev) {
			if addr, ok := d.RDMAFunction(dev); ok {
				dev = addr
			}
		}
		// An interface rule's line that names only the PCI function
		// ("ena 0000:00:05.0: Device reset completed successfully")
		// counts under the function's interface, the device label of
		// the ethtool and netdev series of the same device (ens5), so
		// alerts and inhibit rules match on device across collectors.
		if m.Rule.Device == logrules.DeviceInterface && logrules.IsPCIAddress(dev) {
			if ifname, ok := d.NetInterface(dev); ok {
				dev = ifname
			}
		}
		if m.Rule.NICOnly && logrules.IsPCIAddress(dev) {
			if class, ok := d.PCIClass(dev); ok && !IsNICClass(class) {
				return kmsgKey{}, false
			}
		}
	}
	return kmsgKey{driver: m.Driver, device: dev, event: m.Rule.Event}, true
}

// render writes the complete current state.
func (k *Collector) render(p *collector.Poll) {
	k.mu.Lock()
	defer k.mu.Unlock()
	keys := make([]kmsgKey, 0, len(k.counts))
	devices := make(map[string]bool)
	for key := range k.counts {
		keys = append(keys, key)
		if key.device != "" {
			devices[key.device] = true
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.driver != b.driver {
			return a.driver < b.driver
		}
		if a.device != b.device {
			return a.device < b.device
		}
		return a.event < b.event
	})
	for _, key := range keys {
		p.Add(kmsgEventsDesc, float64(k.counts[key].n), key.driver, key.device, key.event)
	}
	for _, key := range keys {
		last := k.counts[key].last
		p.Add(kmsgLastDesc, float64(last.UnixNano())/1e9, key.driver, key.device, key.event)
	}
	p.Add(kmsgRecordsDesc, float64(k.records))
	p.Add(kmsgOverrunsDesc, float64(k.overruns))
	p.Add(kmsgUnparsableDesc, float64(k.unparsable))
	p.Add(kmsgDroppedDesc, float64(k.dropped))
	p.SetDevices(len(devices))
}

var _ collector.EventSource = (*Collector)(nil)
