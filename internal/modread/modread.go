// Package modread reads the memory of a network interface's plug-in
// module (SFP, QSFP, QSFP-DD, OSFP) into an sff.Memory for sff.Decode.
//
// With ethtool netlink MODULE_EEPROM (kernel 5.13+) it reads exactly the
// regions the module advertises, 128 bytes per request, as
// sff.NextRegions decides (ReadModule). On older kernels it falls back to
// the legacy ETHTOOL_GMODULEINFO and ETHTOOL_GMODULEEEPROM ioctls, which
// return one flat dump whose layout the module type implies
// (ReadLegacy). Reader tries netlink first and remembers per interface
// which path works, and that neither does, so a driver without module
// support costs one failed request per interface, not one per poll.
//
// It is a package of its own rather than part of internal/ethtoolnl
// because the fallback joins two kernel interfaces (ethtoolnl and
// ethtoolioctl) that do not import each other, and the page loop is
// reading policy, not netlink protocol. It does no decoding (internal/sff)
// and keeps no metrics: the collector counts what the errors say.
//
// Both kernel paths need CAP_NET_ADMIN: MODULE_EEPROM_GET is a
// GENL_UNS_ADMIN_PERM operation and the module ioctls are not among the
// unprivileged ethtool commands.
package modread

import (
	"errors"
	"fmt"
	"syscall"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/internal/errclass"
	"github.com/nic-exporter/nic_exporter/internal/ethtoolioctl"
	"github.com/nic-exporter/nic_exporter/internal/ethtoolnl"
	"github.com/nic-exporter/nic_exporter/internal/sff"
)

// PageReader is one netlink MODULE_EEPROM read; *ethtoolnl.Client
// implements it.
type PageReader interface {
	ModuleEEPROM(ifname string, req ethtoolnl.ModuleEEPROMRequest) ([]byte, error)
}

// LegacyReader is the pair of legacy module ioctls;
// *ethtoolioctl.Source implements it.
type LegacyReader interface {
	ModuleInfo(ifname string) (ethtoolioctl.ModuleInfo, error)
	ModuleEEPROM(ifname string, length int) ([]byte, error)
}

var (
	_ PageReader   = (*ethtoolnl.Client)(nil)
	_ LegacyReader = (*ethtoolioctl.Source)(nil)
)

// maxRounds bounds the read loop; sff.NextRegions needs at most three.
const maxRounds = 4

// ReadModule reads the module of ifname region by region: lower memory
// first, then what it advertises (see sff.NextRegions). It returns
// sff.ErrNoModule (wrapped) when the identifier byte is 0, and the
// reader's error, wrapped with the region, when a read fails (check it
// with errclass.IsUnsupported, errclass.IsIO, errclass.IsNoDevice).
func ReadModule(r PageReader, ifname string) (*sff.Memory, error) {
	m := sff.NewMemory()
	for round := 0; round < maxRounds; round++ {
		next, err := sff.NextRegions(m)
		if err != nil {
			return nil, fmt.Errorf("modread: module of %s: %w", ifname, err)
		}
		if len(next) == 0 {
			return m, nil
		}
		for _, rg := range next {
			req := ethtoolnl.ModuleEEPROMRequest{Addr: rg.Addr, Bank: rg.Bank, Page: rg.Page, Offset: rg.Offset(), Length: sff.PageSize}
			b, err := r.ModuleEEPROM(ifname, req)
			if err != nil {
				return nil, fmt.Errorf("modread: module of %s: %s: %w", ifname, rg, err)
			}
			if err := m.Put(rg.Addr, rg.Bank, rg.Page, rg.Offset(), b); err != nil {
				return nil, fmt.Errorf("modread: module of %s: %w", ifname, err)
			}
		}
	}
	return nil, fmt.Errorf("modread: module of %s: still advertising regions after %d rounds", ifname, maxRounds)
}

// ReadLegacy reads the module of ifname with the legacy ioctls: its
// type and length, then one flat dump, converted by FromLegacy.
func ReadLegacy(r LegacyReader, ifname string) (*sff.Memory, error) {
	info, err := r.ModuleInfo(ifname)
	if err != nil {
		return nil, fmt.Errorf("modread: module of %s: %w", ifname, err)
	}
	data, err := r.ModuleEEPROM(ifname, info.Length)
	if err != nil {
		return nil, fmt.Errorf("modread: module of %s: %w", ifname, err)
	}
	m, err := FromLegacy(info.Type, data)
	if err != nil {
		return nil, fmt.Errorf("modread: module of %s: %w", ifname, err)
	}
	return m, nil
}

// FromLegacy converts an ETHTOOL_GMODULEEEPROM dump of the given type:
// SFF-8079 (A0h) and SFF-8472 (A0h then A2h) with sff.FromSFF8472Dump,
// SFF-8436 and SFF-8636 (lower memory, page 00h, then pages 01h-03h) with
// sff.FromPagedDump. An identifier of 0 gives sff.ErrNoModule.
func FromLegacy(t ethtoolioctl.ModuleType, data []byte) (*sff.Memory, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("empty %s dump", t)
	}
	if data[0] == 0 {
		return nil, sff.ErrNoModule
	}
	switch t {
	case ethtoolioctl.ModuleSFF8079:
		return sff.FromSFF8472Dump(data[:min(len(data), 2*sff.PageSize)]), nil
	case ethtoolioctl.ModuleSFF8472:
		return sff.FromSFF8472Dump(data), nil
	case ethtoolioctl.ModuleSFF8436, ethtoolioctl.ModuleSFF8636:
		return sff.FromPagedDump(data), nil
	default:
		return nil, fmt.Errorf("%s: unknown legacy module type", t)
	}
}

// Path is how Reader reads one interface's module.
type Path int

// The paths, in the order Reader tries them.
const (
	PathUnknown Path = iota
	PathNetlink
	PathLegacy
	// PathNone means both answered EOPNOTSUPP; Reader does not ask again.
	PathNone
)

// String names the path for logs.
func (p Path) String() string {
	return [...]string{"unknown", "netlink", "ioctl", "none"}[p]
}

// Reader reads modules by netlink and falls back to the ioctls,
// remembering per interface which path works. It is not safe for
// concurrent use.
type Reader struct {
	nl     PageReader
	legacy LegacyReader
	log    *zap.Logger
	path   map[string]Path
}

// New returns a Reader. Either reader may be nil when the caller could
// not open it (an ethtool family missing before kernel 5.6, say); the
// Reader then uses the other only.
func New(nl PageReader, legacy LegacyReader, log *zap.Logger) *Reader {
	return &Reader{nl: nl, legacy: legacy, log: log, path: map[string]Path{}}
}

// errNotSupported is the remembered answer for PathNone.
var errNotSupported = fmt.Errorf("no module access (remembered): %w", syscall.EOPNOTSUPP)

// Module reads the module of ifname. Errors: errclass.IsUnsupported when the
// driver has no module access (remembered: later calls fail at once
// without I/O until Forget), errclass.IsIO when the module failed the
// read, errclass.IsNoDevice when the interface is gone (its path is forgotten),
// errors.Is(err, sff.ErrNoModule) for an empty or half-inserted cage.
func (r *Reader) Module(ifname string) (*sff.Memory, error) {
	p := r.path[ifname]
	var m *sff.Memory
	var err error
	switch {
	case p == PathNone:
		return nil, fmt.Errorf("modread: module of %s: %w", ifname, errNotSupported)
	case p == PathLegacy || (p == PathUnknown && r.nl == nil):
		p = PathLegacy
		m, err = r.readLegacy(ifname)
	default:
		m, err = ReadModule(r.nl, ifname)
		if p == PathUnknown {
			p = PathNetlink
			if errclass.IsUnsupported(err) {
				r.log.Debug("module eeprom netlink not supported; trying the ioctls", zap.String("interface", ifname), zap.Error(err))
				p = PathLegacy
				m, err = r.readLegacy(ifname)
			}
		}
	}
	switch {
	case errclass.IsNoDevice(err):
		delete(r.path, ifname)
	case errclass.IsUnsupported(err):
		if p == PathLegacy || r.legacy == nil {
			r.log.Debug("no module access; not asking again", zap.String("interface", ifname), zap.Error(err))
			r.path[ifname] = PathNone
		}
	case err == nil || errclass.IsIO(err) || errors.Is(err, sff.ErrNoModule):
		// The path answered: keep it, whatever the module said.
		r.path[ifname] = p
	}
	return m, err
}

func (r *Reader) readLegacy(ifname string) (*sff.Memory, error) {
	if r.legacy == nil {
		return nil, fmt.Errorf("modread: module of %s: no ioctl source: %w", ifname, syscall.EOPNOTSUPP)
	}
	return ReadLegacy(r.legacy, ifname)
}

// Path returns the path Reader uses for ifname.
func (r *Reader) Path(ifname string) Path { return r.path[ifname] }

// Forget drops what Reader remembers of ifname, for an interface that
// went away or whose driver was reloaded.
func (r *Reader) Forget(ifname string) { delete(r.path, ifname) }
