// Package infiniband is the infiniband collector: RDMA device info, port
// state, rate and LIDs, and the counters/ and hw_counters/ files of
// /sys/class/infiniband as typed counters.
package infiniband

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/internal/errclass"
	"github.com/nic-exporter/nic_exporter/internal/sysfs"
)

// Config configures the infiniband collector.
type Config struct {
	// SysfsPath is the sysfs mount point, normally /sys.
	SysfsPath string
	// Filter selects RDMA devices (mlx5_0, rxe0, ...) by name; it is
	// applied before any file of a device is opened.
	Filter collector.NameFilter
	// FS, when set, replaces the file system rooted at SysfsPath; paths are
	// relative to the sysfs root ("class/infiniband/mlx5_0/fw_ver"). Tests
	// use it to count opens and to inject read errors. SysfsPath still
	// names files in error messages.
	FS fs.FS
}

// Collector exports RDMA devices from /sys/class/infiniband: device
// identity, port state, physical state, rate, link layer, LIDs, the
// network interfaces the ports back, the IBA port counters and the
// drivers' hw_counters.
//
// It reads sysfs through internal/sysfs rather than procfs'
// InfiniBandDevice: that drops the whole device when one port's rate or
// one hw_counters file answers EINVAL (a port without an active speed, a
// restricted ConnectX function), silently skips counters that fail, so
// they can neither be counted nor remembered and are read again on every
// poll (on some adapters each read is a firmware command that fails and
// logs), reads every file of every port, and does not read device-level
// hw_counters, LIDs or the ports' network interfaces. The package
// documentation of internal/sysfs has the details.
type Collector struct {
	cfg         Config
	fsys        fs.FS
	log         *zap.Logger
	unsupported *errclass.Memo
	// listings is a separate object so that a cleanup can close its
	// directories once the collector is unreachable (New).
	listings *listings
}

// New returns an infiniband collector.
func New(cfg Config, log *zap.Logger) *Collector {
	fsys := cfg.FS
	if fsys == nil {
		// Not os.DirFS: its Open blocks on a FIFO planted in sysfs's place.
		fsys = sysfs.DirFS(cfg.SysfsPath)
	}
	c := &Collector{cfg: cfg, fsys: fsys, log: log, unsupported: errclass.NewMemo(errclass.MemoConfig{}), listings: &listings{}}
	// The listings hold directory descriptors (sysfs.Dir); a collector
	// lives as long as the exporter, but tests make many.
	runtime.AddCleanup(c, (*listings).closeAll, c.listings)
	return c
}

// Name implements collector.Collector.
func (*Collector) Name() string { return "infiniband" }

var _ collector.Collector = (*Collector)(nil)

const ibClassDir = "class/infiniband"

// ibDevice is what one poll read of one RDMA device.
type ibDevice struct {
	name       string
	hcaType    string
	boardID    string
	fwVer      string
	nodeGUID   string
	pciAddress string
	ports      []*ibPort
	// hw holds device-level hw_counters (mlx5 in switchdev mode).
	hw []ibValue
}

// ibPort is what one poll read of one port.
type ibPort struct {
	num       string
	state     sysfs.Optional
	physState sysfs.Optional
	rate      sysfs.Optional
	linkLayer string
	lid       sysfs.Optional
	smLID     sysfs.Optional
	netdevs   []string
	counters  []ibValue
	hw        []ibValue
}

// ibValue is one counter value with its metric. fixed is true for a
// counter of a fixed width below 64 bits, saturated when it is stuck at
// its maximum.
type ibValue struct {
	counter   ibCounter
	v         float64
	fixed     bool
	saturated bool
}

// Update implements collector.Collector.
func (c *Collector) Update(ctx context.Context, p *collector.Poll) error {
	c.listings.next()
	entries, err := fs.ReadDir(c.fsys, ibClassDir)
	if err != nil {
		if errclass.IsNotExist(err) {
			return fmt.Errorf("%s: %w", c.abs(ibClassDir), collector.ErrNoSource)
		}
		return fmt.Errorf("listing RDMA devices: %w", err)
	}
	// The filter decides on the names alone: nothing below an excluded
	// device is opened, listed or stat'ed.
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if c.cfg.Filter.Match(e.Name()) {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	seen := make(map[string]bool, len(names))
	devices := 0
	buf := make([]byte, 4096)
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		dev, identity, err := c.readDevice(name, p, buf)
		if errors.Is(err, sysfs.ErrVanished) {
			c.log.Debug("RDMA device vanished during the poll", zap.String("device", name))
			continue
		}
		if err != nil {
			p.SourceError(c.abs(path.Join(ibClassDir, name)), err)
			continue
		}
		seen[identity] = true
		devices++
		emitIBDevice(p, dev)
	}
	c.unsupported.Retain(seen)
	c.listings.retain(seen)
	p.SetDevices(devices)
	return nil
}

// abs returns the host path of a path relative to the sysfs root, for
// error messages and log keys.
func (c *Collector) abs(rel string) string {
	return filepath.Join(c.cfg.SysfsPath, filepath.FromSlash(rel))
}

// ibReader reads the files of one device during one poll. Expected
// absences are silent; unsupported files are reported once and remembered;
// a file that is gone because its device or port is gone sets vanished.
type ibReader struct {
	c        *Collector
	p        *collector.Poll
	identity string
	devDir   string
	buf      []byte // one page, reused for every read of the poll
}

// memo says which read failures make the collector stop reading a file
// while its device exists.
type memo uint8

const (
	// memoNone remembers nothing.
	memoNone memo = iota
	// memoUnsupported remembers EINVAL and EOPNOTSUPP.
	memoUnsupported
	// memoCounter also remembers EIO: on a restricted ConnectX-7 PF every
	// counter read is a firmware ACCESS_REG command that fails with EINVAL
	// or EIO and logs to the kernel log, so a failing counter file is not
	// read again.
	memoCounter
)

// remembers reports whether err makes the file be remembered under m.
func (m memo) remembers(err error) bool {
	switch m {
	case memoUnsupported:
		return errclass.IsUnsupportedAttr(err)
	case memoCounter:
		return errclass.IsUnsupportedAttr(err) || errclass.IsIO(err)
	}
	return false
}

// read returns a file's content without surrounding white space. ok is
// false when the file is absent, remembered as unsupported, or failed (in
// which case the failure was reported, or the port or device vanished).
func (r *ibReader) read(rel string, optionalFile bool, m memo) (string, bool, error) {
	s, res, err := r.readAttr(rel, sysfs.Attr{}, optionalFile, m)
	return s, res == readOK, err
}

// readResult says how a read ended.
type readResult uint8

const (
	// readOK is a read that returned the file's content.
	readOK readResult = iota
	// readAbsent is an optional file that does not exist.
	readAbsent
	// readFailed is a read that was reported, remembered or skipped.
	readFailed
)

// readAttr is read for a file whose path was resolved before (attr),
// or, when attr is the zero Attr, is resolved now.
func (r *ibReader) readAttr(rel string, attr sysfs.Attr, optionalFile bool, m memo) (string, readResult, error) {
	if m != memoNone && r.c.unsupported.Has(r.identity, rel) {
		return "", readFailed, nil
	}
	var s string
	var err error
	if attr.Name() == "" {
		attr, err = sysfs.ResolveAttr(r.c.fsys, path.Join(r.devDir, rel))
	}
	if err == nil {
		s, err = attr.Read(r.buf)
	}
	if err == nil {
		return s, readOK, nil
	}
	if errclass.IsNotExist(err) {
		if r.gone(path.Dir(rel)) {
			return "", readFailed, sysfs.ErrVanished
		}
		if optionalFile {
			return "", readAbsent, nil
		}
	} else if m.remembers(err) {
		r.remember(rel, err)
	}
	r.p.SourceError(r.c.abs(path.Join(r.devDir, rel)), err)
	return "", readFailed, nil
}

// remember stops reads of rel while the device exists. The first counter
// file of a device remembered this way is logged, once per device.
func (r *ibReader) remember(rel string, err error) {
	r.c.unsupported.Add(r.identity, rel)
	switch path.Base(path.Dir(rel)) {
	case "counters", "hw_counters", "counters_ext":
	default:
		return
	}
	// The memory of the device also holds whether this was logged, so it
	// is logged again only for a re-created device.
	const logged = "\x00logged"
	if !r.c.unsupported.Has(r.identity, logged) {
		r.c.unsupported.Add(r.identity, logged)
		r.c.log.Warn("counter file of the RDMA device cannot be read; it and any other failing counter file of the device are no longer read while the device exists (a restricted PF answers EINVAL or EIO to every counter read and logs ACCESS_REG failures to the kernel log; exclude it with --collector.infiniband.device-exclude)",
			zap.String("device", r.identity), zap.String("file", r.c.abs(path.Join(r.devDir, rel))), zap.Error(err))
	}
}

// gone reports whether the device, or the directory rel below it, no
// longer exists.
func (r *ibReader) gone(rel string) bool {
	for dir := rel; ; dir = path.Dir(dir) {
		if _, err := fs.Stat(r.c.fsys, path.Join(r.devDir, dir)); errclass.IsNotExist(err) {
			return true
		}
		if dir == "." || dir == "/" {
			return false
		}
	}
}

// counter reads a counters/, counters_ext/ or hw_counters/ file. EINVAL,
// EOPNOTSUPP, EIO and "N/A (no PMA)" drop the series and are remembered,
// so the file is not read again while the device exists.
func (r *ibReader) counter(f *counterFile) (uint64, readResult, error) {
	rel := f.rel
	s, res, err := r.readAttr(rel, f.attr, true, memoCounter)
	if res != readOK || err != nil {
		return 0, res, err
	}
	v, perr := parseIBCounter(s)
	if perr != nil {
		if errclass.IsUnsupportedAttr(perr) {
			r.c.unsupported.Add(r.identity, rel)
		}
		r.p.SourceError(r.c.abs(path.Join(r.devDir, rel)), perr)
		return 0, readFailed, nil
	}
	return v, readOK, nil
}

func (c *Collector) readDevice(name string, p *collector.Poll, buf []byte) (*ibDevice, string, error) {
	devDir := path.Join(ibClassDir, name)
	dev := &ibDevice{name: name}
	r := &ibReader{c: c, p: p, devDir: devDir, identity: name, buf: buf}
	// node_guid identifies the device across re-creation under the same
	// name, so remembered unsupported files are forgotten with it.
	guid, err := sysfs.ReadFSAttr(c.fsys, path.Join(devDir, "node_guid"), buf)
	switch {
	case err == nil:
		dev.nodeGUID = guid
		r.identity = name + "#" + guid
	case errclass.IsNotExist(err):
		if r.gone(".") {
			return nil, "", sysfs.ErrVanished
		}
	default:
		p.SourceError(c.abs(path.Join(devDir, "node_guid")), err)
	}
	var verr error
	str := func(rel string) string {
		s, _, err := r.read(rel, true, memoUnsupported)
		if err != nil {
			verr = err
		}
		return s
	}
	dev.fwVer = str("fw_ver")
	dev.boardID = str("board_id")
	dev.hcaType = str("hca_type")
	if verr != nil {
		return nil, "", verr
	}
	if target, err := fs.ReadLink(c.fsys, path.Join(devDir, "device")); err == nil {
		dev.pciAddress = path.Base(filepath.ToSlash(target))
	}

	ports, err := fs.ReadDir(c.fsys, path.Join(devDir, "ports"))
	if err != nil {
		if errclass.IsNotExist(err) && r.gone(".") {
			return nil, "", sysfs.ErrVanished
		}
		return nil, "", fmt.Errorf("listing the ports of %s: %w", name, err)
	}
	for _, e := range ports {
		if _, err := strconv.ParseUint(e.Name(), 10, 8); err != nil {
			continue
		}
		port, err := c.readPort(r, e.Name(), len(ports))
		if errors.Is(err, sysfs.ErrVanished) {
			if r.gone(".") {
				return nil, "", sysfs.ErrVanished
			}
			c.log.Debug("RDMA port vanished during the poll", zap.String("device", name), zap.String("port", e.Name()))
			continue
		}
		if err != nil {
			return nil, "", err
		}
		dev.ports = append(dev.ports, port)
	}
	sort.Slice(dev.ports, func(i, j int) bool {
		a, _ := strconv.Atoi(dev.ports[i].num)
		b, _ := strconv.Atoi(dev.ports[j].num)
		return a < b
	})
	if dev.hw, err = r.hwCounters("hw_counters"); err != nil {
		return nil, "", err
	}
	return dev, r.identity, nil
}

func (c *Collector) readPort(r *ibReader, num string, nports int) (*ibPort, error) {
	dir := path.Join("ports", num)
	pt := &ibPort{num: num}
	var verr error
	str := func(rel string, optionalFile bool) (string, bool) {
		s, ok, err := r.read(path.Join(dir, rel), optionalFile, memoNone)
		if err != nil {
			verr = err
		}
		return s, ok
	}
	state := func(rel string) sysfs.Optional {
		s, ok := str(rel, false)
		if !ok {
			return sysfs.Optional{}
		}
		v, _, err := parseIBState(s)
		if err != nil {
			r.p.SourceError(c.abs(path.Join(r.devDir, dir, rel)), err)
			return sysfs.Optional{}
		}
		return sysfs.Optional{V: float64(v), OK: true}
	}
	pt.state = state("state")
	pt.physState = state("phys_state")
	pt.linkLayer, _ = str("link_layer", true)
	// The rate answers EINVAL while the port has no valid active speed,
	// which is a link state, not an error.
	if s, err := sysfs.ReadFSAttr(c.fsys, path.Join(r.devDir, dir, "rate"), r.buf); err == nil {
		if v, err := parseIBRate(s); err == nil {
			pt.rate = sysfs.Optional{V: v, OK: true}
		} else {
			r.p.SourceError(c.abs(path.Join(r.devDir, dir, "rate")), err)
		}
	} else if errclass.IsNotExist(err) && r.gone(dir) {
		return nil, sysfs.ErrVanished
	} else if !errclass.IsNotExist(err) && !errclass.IsInvalid(err) {
		r.p.SourceError(c.abs(path.Join(r.devDir, dir, "rate")), err)
	}
	if pt.linkLayer == "InfiniBand" {
		lid := func(rel string) sysfs.Optional {
			s, ok := str(rel, true)
			if !ok {
				return sysfs.Optional{}
			}
			v, err := parseIBLID(s)
			if err != nil {
				r.p.SourceError(c.abs(path.Join(r.devDir, dir, rel)), err)
				return sysfs.Optional{}
			}
			return sysfs.Optional{V: float64(v), OK: true}
		}
		pt.lid = lid("lid")
		pt.smLID = lid("sm_lid")
	}
	if verr != nil {
		return nil, verr
	}

	var err error
	if pt.counters, err = r.portCounters(path.Join(dir, "counters")); err != nil {
		return nil, err
	}
	if pt.hw, err = r.hwCounters(path.Join(dir, "hw_counters")); err != nil {
		return nil, err
	}
	if pt.netdevs, err = r.netdevs(pt, nports); err != nil {
		return nil, err
	}
	return pt, nil
}

// portCounters reads the known files of a port's counters/ directory.
// Where mlx4 offers a 64-bit counters_ext/<file>_64 next to a 32-bit data
// or packet counter, the 64-bit file is read instead.
func (r *ibReader) portCounters(dir string) ([]ibValue, error) {
	return r.readListed(dir, r.listPortCounters)
}

// hwCounters reads the known files of a hw_counters/ directory, in name
// order.
func (r *ibReader) hwCounters(dir string) ([]ibValue, error) {
	return r.readListed(dir, r.listHWCounters)
}

// readListed reads the counter files of dir that list found, from the
// device's listing of dir when it is recent (see relistEvery).
func (r *ibReader) readListed(dir string, list func(string) (listed, bool, error)) ([]ibValue, error) {
	cd := r.c.listings.get(r.identity, dir)
	if cd == nil {
		l, keep, err := list(dir)
		if err != nil {
			return nil, err
		}
		cd = &counterDir{files: l.files, dirs: l.dirs}
		if keep {
			r.c.listings.put(r.identity, dir, cd)
		} else {
			defer cd.close()
		}
	}
	out := make([]ibValue, 0, len(cd.files))
	for i := range cd.files {
		f := &cd.files[i]
		v, res, err := r.counter(f)
		if err != nil {
			return nil, err
		}
		if res == readAbsent {
			// The listing is stale: the next poll lists dir again.
			r.c.listings.drop(r.identity, dir)
		}
		if res != readOK {
			continue
		}
		val := ibValue{counter: f.ctr, v: float64(v) * f.ctr.scale}
		if limit, fixed := saturatedAt(f.bits); fixed {
			val.fixed, val.saturated = true, v == limit
		}
		out = append(out, val)
	}
	return out, nil
}

// listPortCounters lists the known files of a port's counters/ directory
// and its counters_ext/. keep is false when a listing failed (it was
// reported) and should not be remembered.
func (r *ibReader) listPortCounters(dir string) (out listed, keep bool, err error) {
	present, keep, err := r.list(dir)
	if err != nil || present == nil {
		return listed{}, keep, err
	}
	extDir := path.Join(path.Dir(dir), "counters_ext")
	ext, extKeep, err := r.list(extDir)
	if err != nil {
		return listed{}, false, err
	}
	defer func() {
		if err != nil {
			out.close()
		}
	}()
	d, err := r.openDir(dir, &out)
	if err != nil {
		return out, false, err
	}
	var e *sysfs.Dir
	if ext != nil {
		if e, err = r.openDir(extDir, &out); err != nil {
			return out, false, err
		}
	}
	for _, ctr := range ibPortCounters {
		in, rel, name, bits := d, dir, ctr.file, ctr.bits
		if ext[ctr.file+"_64"] {
			in, rel, name, bits = e, extDir, ctr.file+"_64", 0
		} else if !present[ctr.file] {
			continue
		}
		f, err := r.counterFile(ctr, bits, in, rel, name)
		if err != nil {
			return out, false, err
		}
		out.files = append(out.files, f)
	}
	return out, keep && extKeep, nil
}

// listed is what a listing found: the counter files, and the directories
// they are opened in, which the listing's owner closes.
type listed struct {
	files []counterFile
	dirs  []*sysfs.Dir
}

// close releases the directories.
func (l *listed) close() {
	for _, d := range l.dirs {
		d.Close()
	}
	l.dirs = nil
}

// openDir opens the directory rel below the device and adds it to l.
func (r *ibReader) openDir(rel string, l *listed) (*sysfs.Dir, error) {
	d, err := sysfs.OpenDir(r.c.fsys, path.Join(r.devDir, rel))
	if err != nil {
		if errclass.IsNotExist(err) && r.gone(path.Dir(rel)) {
			return nil, sysfs.ErrVanished
		}
		return nil, fmt.Errorf("opening %s: %w", r.c.abs(path.Join(r.devDir, rel)), err)
	}
	l.dirs = append(l.dirs, d)
	return d, nil
}

// listHWCounters lists the known files of a hw_counters/ directory, in
// name order.
func (r *ibReader) listHWCounters(dir string) (out listed, keep bool, err error) {
	present, keep, err := r.list(dir)
	if err != nil || present == nil {
		return listed{}, keep, err
	}
	defer func() {
		if err != nil {
			out.close()
		}
	}()
	d, err := r.openDir(dir, &out)
	if err != nil {
		return out, false, err
	}
	names := make([]string, 0, len(present))
	for f := range present {
		if ibHWCounters[f] != nil {
			names = append(names, f)
		}
	}
	sort.Strings(names)
	out.files = make([]counterFile, 0, len(names))
	for _, name := range names {
		f, err := r.counterFile(ibCounter{file: name, scale: 1, desc: ibHWCounters[name]}, 0, d, dir, name)
		if err != nil {
			return out, false, err
		}
		out.files = append(out.files, f)
	}
	return out, keep, nil
}

// counterFile resolves the counter file name of the directory d, which
// is dir below the device directory.
func (r *ibReader) counterFile(ctr ibCounter, bits uint, d *sysfs.Dir, dir, name string) (counterFile, error) {
	attr, err := d.Attr(name)
	if err != nil {
		return counterFile{}, fmt.Errorf("counter file %s: %w", path.Join(dir, name), err)
	}
	return counterFile{ctr: ctr, bits: bits, rel: path.Join(dir, name), attr: attr}, nil
}

// list returns the names in a directory below the device, or nil when it
// does not exist (devices without a PMA have no counters/; rxe has none).
// keep is false when the listing failed for another reason (it was
// reported), so that its result is not remembered.
func (r *ibReader) list(dir string) (names map[string]bool, keep bool, err error) {
	entries, err := fs.ReadDir(r.c.fsys, path.Join(r.devDir, dir))
	if err != nil {
		if errclass.IsNotExist(err) {
			if r.gone(path.Dir(dir)) {
				return nil, false, sysfs.ErrVanished
			}
			return nil, true, nil
		}
		r.p.SourceError(r.c.abs(path.Join(r.devDir, dir)), err)
		return nil, false, nil
	}
	out := make(map[string]bool, len(entries))
	for _, e := range entries {
		out[e.Name()] = true
	}
	return out, true, nil
}

// netdevs finds the network interfaces a port backs. A RoCE port names its
// interface in gid_attrs/ndevs/0, the attribute of its default GID (rxe
// has nothing else). Otherwise, as for IPoIB on mlx5, the interfaces are
// those of the device's PCI function, device/net/*; on a device with
// several ports, an interface belongs to port dev_port+1.
func (r *ibReader) netdevs(pt *ibPort, nports int) ([]string, error) {
	if pt.linkLayer == "Ethernet" {
		// EINVAL here means the GID entry has no interface right now; it
		// is neither remembered nor reported.
		s, err := sysfs.ReadFSAttr(r.c.fsys, path.Join(r.devDir, "ports", pt.num, "gid_attrs", "ndevs", "0"), r.buf)
		if err == nil && s != "" {
			return []string{s}, nil
		}
	}
	entries, err := fs.ReadDir(r.c.fsys, path.Join(r.devDir, "device", "net"))
	if err != nil {
		if !errclass.IsNotExist(err) {
			r.p.SourceError(r.c.abs(path.Join(r.devDir, "device", "net")), err)
		}
		return nil, nil
	}
	var out []string
	for _, e := range entries {
		if nports > 1 {
			s, err := sysfs.ReadFSAttr(r.c.fsys, path.Join(r.devDir, "device", "net", e.Name(), "dev_port"), r.buf)
			if err != nil {
				continue
			}
			dp, err := strconv.ParseUint(s, 0, 8)
			if err != nil || strconv.FormatUint(dp+1, 10) != pt.num {
				continue
			}
		}
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out, nil
}

// emitIBDevice adds the series of one device.
func emitIBDevice(p *collector.Poll, d *ibDevice) {
	p.Add(ibInfo, 1, d.name, d.hcaType, d.boardID, d.fwVer, d.nodeGUID, d.pciAddress)
	for _, pt := range d.ports {
		sysfs.AddOpt(p, ibPortState, pt.state, d.name, pt.num)
		sysfs.AddOpt(p, ibPortPhysState, pt.physState, d.name, pt.num)
		sysfs.AddOpt(p, ibPortRate, pt.rate, d.name, pt.num)
		if pt.linkLayer != "" {
			p.Add(ibPortInfo, 1, d.name, pt.num, pt.linkLayer)
		}
		for _, n := range pt.netdevs {
			p.Add(ibPortNetdev, 1, d.name, pt.num, n)
		}
		sysfs.AddOpt(p, ibPortLID, pt.lid, d.name, pt.num)
		sysfs.AddOpt(p, ibPortSMLID, pt.smLID, d.name, pt.num)
		for _, v := range pt.counters {
			p.Add(v.counter.desc, v.v, d.name, pt.num)
			if v.fixed {
				sat := 0.0
				if v.saturated {
					sat = 1
				}
				p.Add(ibCounterSaturated, sat, d.name, pt.num, v.counter.file)
			}
		}
		for _, v := range pt.hw {
			p.Add(v.counter.desc, v.v, d.name, pt.num)
		}
	}
	// Device-level hw_counters are exported with port="0". A device that
	// also has a port 0 (a switch's management port) exports that port's
	// hw_counters with the same labels: the port's value wins, so no
	// series is exported twice.
	var port0 map[string]bool
	for _, pt := range d.ports {
		if pt.num == "0" {
			port0 = make(map[string]bool, len(pt.hw))
			for _, v := range pt.hw {
				port0[v.counter.file] = true
			}
		}
	}
	for _, v := range d.hw {
		if port0[v.counter.file] {
			continue
		}
		p.Add(v.counter.desc, v.v, d.name, "0")
	}
}
