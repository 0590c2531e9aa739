package netdev

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/internal/errclass"
	"github.com/nic-exporter/nic_exporter/internal/rtnl"
	"github.com/nic-exporter/nic_exporter/internal/sysfs"
)

// Link is what a LinkSource knows of one interface: its state, MTU and
// interface statistics. Values the source lacks are not OK.
type Link struct {
	Name  string
	Index int
	// AdminUp is 1 if IFF_UP is set.
	AdminUp sysfs.Optional
	// OperState is the operational state as sysfs spells it ("up",
	// "lowerlayerdown", ...); empty when unknown to the source.
	OperState string
	// Carrier is set only while the interface is administratively up.
	Carrier        sysfs.Optional
	CarrierChanges sysfs.Optional
	MTU            sysfs.Optional
	// Stats are the fields of struct rtnl_link_stats64 in the order of
	// rtnl.StatNames (and of netStats).
	Stats [rtnl.NumStats]sysfs.Optional
	// Address, ParentDev and ParentBus are the hardware address and the
	// device behind the interface when the source knows them (rtnetlink;
	// see rtnl.Link). Only interfaces of another network namespace use
	// them (foreign.go); the others read sysfs.
	Address              string
	ParentDev, ParentBus string
}

// LinkSource lists the interfaces of a host.
type LinkSource interface {
	// Links returns the interfaces whose names filter selects; nothing
	// is read for the others. Problems with single attributes are
	// reported to p and leave the value out; an error means no interface
	// could be listed.
	Links(filter collector.NameFilter, p *collector.Poll) ([]Link, error)
}

// RtnlLinks is the LinkSource of a real kernel: one RTM_GETLINK dump
// (internal/rtnl) per poll returns the state and the 64-bit statistics of
// every interface at once, instead of about 30 sysfs files per interface.
type RtnlLinks struct {
	conn *rtnl.Conn
}

// NewRtnlLinks opens an rtnetlink socket in the network namespace file
// netns, or in the process's namespace if netns is empty.
func NewRtnlLinks(netns string) (*RtnlLinks, error) {
	c, err := rtnl.Dial(netns)
	if err != nil {
		return nil, err
	}
	return &RtnlLinks{conn: c}, nil
}

// Close closes the socket.
func (r *RtnlLinks) Close() error { return r.conn.Close() }

// operStateNames maps IF_OPER_* (include/uapi/linux/if.h) to the names of
// /sys/class/net/<if>/operstate.
var operStateNames = [...]string{"unknown", "notpresent", "down", "lowerlayerdown", "testing", "dormant", "up"}

// Links implements LinkSource.
func (r *RtnlLinks) Links(filter collector.NameFilter, _ *collector.Poll) ([]Link, error) {
	links, err := r.conn.Links()
	if err != nil {
		return nil, err
	}
	out := make([]Link, 0, len(links))
	for _, l := range links {
		if l.Name == "" || !filter.Match(l.Name) {
			continue
		}
		out = append(out, fromRtnl(l))
	}
	return out, nil
}

// fromRtnl converts one decoded dump message.
func fromRtnl(l rtnl.Link) Link {
	up := l.Flags&syscall.IFF_UP != 0
	out := Link{Name: l.Name, Index: l.Index, AdminUp: sysfs.Optional{V: collector.Bool(up), OK: true}}
	if l.HasOperState && int(l.OperState) < len(operStateNames) {
		out.OperState = operStateNames[l.OperState]
	}
	if up && l.HasCarrier {
		out.Carrier = sysfs.Optional{V: collector.Bool(l.Carrier), OK: true}
	}
	if l.HasCarrierChanges {
		out.CarrierChanges = sysfs.Optional{V: float64(l.CarrierChanges), OK: true}
	}
	if l.HasMTU {
		out.MTU = sysfs.Optional{V: float64(l.MTU), OK: true}
	}
	for i := range l.NStats {
		out.Stats[i] = sysfs.Optional{V: float64(l.Stats[i]), OK: true}
	}
	out.Address, out.ParentDev, out.ParentBus = hwAddr(l.Address), l.ParentDev, l.ParentBus
	return out
}

// SysfsLinks is the LinkSource of a sysfs tree without rtnetlink, such as
// the demo host's: it reads /sys/class/net/<if>/{ifindex,flags,operstate,
// carrier,carrier_changes,mtu,statistics/*} through internal/sysfs.
type SysfsLinks struct {
	root        string
	unsupported *errclass.Memo
}

// NewSysfsLinks returns the LinkSource of the sysfs mounted at sysfsPath.
func NewSysfsLinks(sysfsPath string) *SysfsLinks {
	return &SysfsLinks{root: filepath.Join(sysfsPath, "class", "net"), unsupported: errclass.NewMemo(errclass.MemoConfig{})}
}

// Links implements LinkSource.
func (s *SysfsLinks) Links(filter collector.NameFilter, p *collector.Poll) ([]Link, error) {
	entries, err := os.ReadDir(s.root)
	if err != nil {
		return nil, fmt.Errorf("listing network interfaces: %w", err)
	}
	var out []Link
	seen := make(map[string]bool, len(entries))
	for _, e := range entries {
		name := e.Name()
		if !filter.Match(name) {
			continue
		}
		l, identity, err := s.read(name, p)
		if errors.Is(err, sysfs.ErrVanished) {
			continue
		}
		if err != nil {
			p.SourceError(filepath.Join(s.root, name), err)
			continue
		}
		seen[identity] = true
		out = append(out, l)
	}
	s.unsupported.Retain(seen)
	return out, nil
}

func (s *SysfsLinks) read(name string, p *collector.Poll) (Link, string, error) {
	dir := filepath.Join(s.root, name)
	ifindex, err := sysfs.ReadAttr(filepath.Join(dir, "ifindex"))
	if err != nil {
		if errclass.IsNotExist(err) {
			return Link{}, "", sysfs.ErrVanished
		}
		return Link{}, "", err
	}
	index, err := strconv.Atoi(ifindex)
	if err != nil {
		return Link{}, "", fmt.Errorf("ifindex: %w: %q", errclass.ErrParse, ifindex)
	}
	identity := name + "#" + ifindex
	r := &attrReader{dir: dir, identity: identity, unsupported: s.unsupported, p: p}
	l := Link{Name: name, Index: index}
	l.OperState, _ = r.get("operstate", false)
	if flags := r.num("flags", false); flags.OK {
		l.AdminUp = sysfs.Optional{V: float64(uint64(flags.V) & syscall.IFF_UP), OK: true}
	}
	// carrier answers EINVAL while the interface is down; that is the
	// state, not an error.
	if l.AdminUp.OK && l.AdminUp.V == 1 {
		l.Carrier = r.num("carrier", false)
	}
	l.CarrierChanges = r.counter("carrier_changes", true)
	l.MTU = r.num("mtu", false)
	for i, st := range netStats {
		l.Stats[i] = r.counter(filepath.Join("statistics", st.file), true)
	}
	if r.vanished {
		return Link{}, "", sysfs.ErrVanished
	}
	return l, identity, nil
}

// attrReader reads the attributes of one interface directory; expected
// absences are silent, other errors are reported once per attribute
// identity. vanished is set when the directory went away.
type attrReader struct {
	dir, identity string
	unsupported   *errclass.Memo
	p             *collector.Poll
	vanished      bool
}

func (r *attrReader) get(rel string, optionalFile bool) (string, bool) {
	if r.unsupported.Has(r.identity, rel) {
		return "", false
	}
	s, err := sysfs.ReadAttr(filepath.Join(r.dir, rel))
	if err == nil {
		return s, true
	}
	switch {
	case errclass.IsNotExist(err):
		if _, serr := os.Stat(r.dir); serr != nil {
			r.vanished = true
			return "", false
		}
		if optionalFile {
			return "", false
		}
	case r.unsupported.Remember(r.identity, rel, err, errclass.IsUnsupportedAttr):
		// The driver does not support it; remembered, so it is not read
		// again for this interface.
		if rel == "speed" {
			// Drivers without a speed (loopback, IPoIB, many virtual
			// devices) answer EINVAL: documented as an absent series,
			// not an error.
			return "", false
		}
	}
	r.p.SourceError(filepath.Join(r.dir, rel), err)
	return "", false
}

func (r *attrReader) num(rel string, optionalFile bool) sysfs.Optional {
	s, ok := r.get(rel, optionalFile)
	if !ok {
		return sysfs.Optional{}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		if u, uerr := sysfs.ParseUint(s); uerr == nil {
			return sysfs.Optional{V: float64(u), OK: true}
		}
		r.p.SourceError(filepath.Join(r.dir, rel), fmt.Errorf("%w: %q", errclass.ErrParse, s))
		return sysfs.Optional{}
	}
	return sysfs.Optional{V: v, OK: true}
}

// counter reads a counter attribute through the one unsigned parse
// (sysfs.ParseCounter): NaN, infinities, signs, exponents and fractions
// are a parse error for that series, never a sample.
func (r *attrReader) counter(rel string, optionalFile bool) sysfs.Optional {
	s, ok := r.get(rel, optionalFile)
	if !ok {
		return sysfs.Optional{}
	}
	v, err := sysfs.ParseCounter(s)
	if err != nil {
		r.p.SourceError(filepath.Join(r.dir, rel), err)
		return sysfs.Optional{}
	}
	return sysfs.Optional{V: float64(v), OK: true}
}
