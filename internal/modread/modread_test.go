package modread

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap/zaptest"

	"github.com/nic-exporter/nic_exporter/internal/errclass"
	"github.com/nic-exporter/nic_exporter/internal/ethtoolioctl"
	"github.com/nic-exporter/nic_exporter/internal/ethtoolnl"
	"github.com/nic-exporter/nic_exporter/internal/sff"
)

// loadDump reads a real module dump of internal/sff/testdata (format:
// "page addr=0x50 bank=0 page=0x03" then "XX: hex bytes" rows, see
// internal/sff/golden_test.go) into a Memory.
func loadDump(t testing.TB, name string) *sff.Memory {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "sff", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	m := sff.NewMemory()
	var addr, bank, page uint64
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "expect "):
		case strings.HasPrefix(line, "page "):
			if _, err := fmt.Sscanf(line, "page addr=0x%x bank=%d page=0x%x", &addr, &bank, &page); err != nil {
				t.Fatalf("%s: %q: %v", name, line, err)
			}
		default:
			off, rest, _ := strings.Cut(line, ":")
			o, err := strconv.ParseUint(off, 16, 8)
			if err != nil {
				t.Fatalf("%s: %q: %v", name, line, err)
			}
			var row []byte
			for _, f := range strings.Fields(rest) {
				b, err := strconv.ParseUint(f, 16, 8)
				if err != nil {
					t.Fatalf("%s: %q: %v", name, line, err)
				}
				row = append(row, byte(b))
			}
			if err := m.Put(uint8(addr), uint8(bank), uint8(page), int(o), row); err != nil {
				t.Fatal(err)
			}
		}
	}
	return m
}

// fakeModule serves a Memory the way the kernel's MODULE_EEPROM_GET does
// for a module: 128-byte halves, absent pages as EIO (a module NACKs a
// page it does not implement), and records every request.
type fakeModule struct {
	mem  *sff.Memory
	err  error // returned for every request when set
	reqs []ethtoolnl.ModuleEEPROMRequest
}

func (f *fakeModule) ModuleEEPROM(ifname string, req ethtoolnl.ModuleEEPROMRequest) ([]byte, error) {
	f.reqs = append(f.reqs, req)
	if f.err != nil {
		return nil, f.err
	}
	if req.Length != sff.PageSize || (req.Offset != 0 && req.Offset != sff.PageSize) || (req.Page != 0 && req.Offset == 0) {
		return nil, fmt.Errorf("request %v the kernel would refuse: %w", req, syscall.EINVAL)
	}
	var b []byte
	if req.Offset == 0 {
		b = f.mem.Lower[req.Addr]
	} else {
		b = f.mem.Upper[sff.PageKey{Addr: req.Addr, Bank: req.Bank, Page: req.Page}]
	}
	if len(b) != sff.PageSize {
		return nil, fmt.Errorf("%v not implemented by the module: %w", req, syscall.EIO)
	}
	return append([]byte(nil), b...), nil
}

func TestReadModuleRealDumps(t *testing.T) {
	lower := func(addr uint8) string { return fmt.Sprintf("0x%02x/0/0x00@0", addr) }
	page := func(p uint8) string { return fmt.Sprintf("0x50/0/0x%02x@128", p) }
	cmis := []string{lower(0x50), page(0x00), page(0x01), page(0x02), page(0x11)}
	sfp := []string{lower(0x50), lower(0x51)}
	qsfp := []string{lower(0x50), page(0x00), page(0x03)}
	want := map[string][]string{
		"cmis-cig-qsfpdd-400g-lr4.dump":        cmis,
		"cmis-eoptolink-qsfpdd-dr8.dump":       cmis,
		"cmis-juniper-qsfpdd-1w1.dump":         cmis,
		"cmis-juniper-qsfpdd-2e1.dump":         cmis,
		"sff8472-amphenol-sfp-dac.dump":        {lower(0x50)},
		"sff8472-arista-sfp-10glr.dump":        sfp,
		"sff8472-fs-sfp-10g-bidi.dump":         sfp,
		"sff8472-fs-sfp-dwdm-ch44.dump":        sfp,
		"sff8636-oem-qsfp28-breakout-dac.dump": {lower(0x50), page(0x00)},
		"sff8636-qsfptek-qsfp28-er4-a.dump":    qsfp,
		"sff8636-qsfptek-qsfp28-er4-b.dump":    qsfp,
	}
	for name, wantReqs := range want {
		t.Run(name, func(t *testing.T) {
			full := loadDump(t, name)
			f := &fakeModule{mem: full}
			m, err := ReadModule(f, "eth0")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range f.reqs {
				got = append(got, fmt.Sprintf("0x%02x/%d/0x%02x@%d", r.Addr, r.Bank, r.Page, r.Offset))
			}
			if d := cmp.Diff(wantReqs, got); d != "" {
				t.Errorf("requests (-want +got)\n%s", d)
			}
			golden, err := sff.Decode(full)
			if err != nil {
				t.Fatal(err)
			}
			dec, err := sff.Decode(m)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(golden, dec); d != "" {
				t.Errorf("decode of what was read (-whole dump +read)\n%s", d)
			}
		})
	}
}

func TestReadModuleErrors(t *testing.T) {
	empty := sff.NewMemory()
	_ = empty.Put(sff.AddrA0, 0, 0, 0, make([]byte, sff.PageSize)) // identifier 0
	cut := loadDump(t, "cmis-cig-qsfpdd-400g-lr4.dump")
	delete(cut.Upper, sff.PageKey{Addr: sff.AddrA0, Page: 0x11})
	tests := []struct {
		name  string
		f     *fakeModule
		check func(error) bool
	}{
		{"half-inserted module: identifier 0", &fakeModule{mem: empty}, func(err error) bool { return errors.Is(err, sff.ErrNoModule) }},
		{"module answers EIO", &fakeModule{err: syscall.EIO}, errclass.IsIO},
		{"page 11h unreadable", &fakeModule{mem: cut}, func(err error) bool { return errclass.IsIO(err) && strings.Contains(err.Error(), "page 0x11") }},
		{"driver without module support", &fakeModule{err: syscall.EOPNOTSUPP}, errclass.IsUnsupported},
		{"interface gone", &fakeModule{err: syscall.ENODEV}, errclass.IsNoDevice},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ReadModule(tt.f, "eth0")
			if !tt.check(err) {
				t.Errorf("ReadModule = %v, %v", m, err)
			}
			if errclass.IsIO(err) && errclass.IsUnsupported(err) {
				t.Errorf("%v is both a module I/O error and not supported", err)
			}
		})
	}
}

// legacyDump lays out a real dump the way ETHTOOL_GMODULEEEPROM returns it.
func legacyDump(t *testing.T, m *sff.Memory, typ ethtoolioctl.ModuleType) []byte {
	t.Helper()
	half := func(b []byte) []byte { return append(b, make([]byte, sff.PageSize-len(b))...)[:sff.PageSize] }
	up := func(addr, page uint8) []byte {
		return half(append([]byte(nil), m.Upper[sff.PageKey{Addr: addr, Page: page}]...))
	}
	lo := func(addr uint8) []byte { return half(append([]byte(nil), m.Lower[addr]...)) }
	switch typ {
	case ethtoolioctl.ModuleSFF8472:
		return bytes.Join([][]byte{lo(0x50), up(0x50, 0), lo(0x51), up(0x51, 0)}, nil)
	case ethtoolioctl.ModuleSFF8636:
		return bytes.Join([][]byte{lo(0x50), up(0x50, 0), up(0x50, 1), up(0x50, 2), up(0x50, 3)}, nil)
	}
	t.Fatalf("type %v", typ)
	return nil
}

type fakeLegacy struct {
	typ   ethtoolioctl.ModuleType
	data  []byte
	err   error
	calls int
}

func (f *fakeLegacy) ModuleInfo(string) (ethtoolioctl.ModuleInfo, error) {
	f.calls++
	if f.err != nil {
		return ethtoolioctl.ModuleInfo{}, f.err
	}
	return ethtoolioctl.ModuleInfo{Type: f.typ, Length: len(f.data)}, nil
}

func (f *fakeLegacy) ModuleEEPROM(_ string, n int) ([]byte, error) {
	f.calls++
	if n != len(f.data) {
		return nil, syscall.EINVAL
	}
	return f.data, nil
}

func TestReaderFallback(t *testing.T) {
	for _, c := range []struct {
		dump string
		typ  ethtoolioctl.ModuleType
	}{
		{"sff8472-arista-sfp-10glr.dump", ethtoolioctl.ModuleSFF8472},
		{"sff8636-qsfptek-qsfp28-er4-a.dump", ethtoolioctl.ModuleSFF8636},
	} {
		t.Run(c.dump, func(t *testing.T) {
			full := loadDump(t, c.dump)
			golden, err := sff.Decode(full)
			if err != nil {
				t.Fatal(err)
			}
			nl := &fakeModule{err: fmt.Errorf("kernel 5.10: %w", syscall.EOPNOTSUPP)}
			legacy := &fakeLegacy{typ: c.typ, data: legacyDump(t, full, c.typ)}
			r := New(nl, legacy, zaptest.NewLogger(t))
			for poll := 0; poll < 3; poll++ {
				m, err := r.Module("eth0")
				if err != nil {
					t.Fatalf("poll %d: %v", poll, err)
				}
				dec, err := sff.Decode(m)
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(golden, dec); d != "" {
					t.Fatalf("legacy decode (-netlink dump +legacy)\n%s", d)
				}
			}
			if len(nl.reqs) != 1 || legacy.calls != 6 || r.Path("eth0") != PathLegacy {
				t.Errorf("netlink asked %d times, ioctls %d times, path %v; want 1, 6, ioctl", len(nl.reqs), legacy.calls, r.Path("eth0"))
			}
		})
	}

	t.Run("neither supported: remembered", func(t *testing.T) {
		nl := &fakeModule{err: syscall.EOPNOTSUPP}
		legacy := &fakeLegacy{err: syscall.EOPNOTSUPP}
		r := New(nl, legacy, zaptest.NewLogger(t))
		for poll := 0; poll < 3; poll++ {
			if _, err := r.Module("veth0"); !errclass.IsUnsupported(err) {
				t.Fatalf("poll %d: %v", poll, err)
			}
		}
		if len(nl.reqs) != 1 || legacy.calls != 1 || r.Path("veth0") != PathNone {
			t.Errorf("netlink asked %d times, ioctls %d times, path %v; want 1, 1, none", len(nl.reqs), legacy.calls, r.Path("veth0"))
		}
		r.Forget("veth0")
		_, _ = r.Module("veth0")
		if len(nl.reqs) != 2 {
			t.Error("Forget did not make the Reader ask again")
		}
	})

	t.Run("netlink works: ioctls never asked; EIO keeps the path", func(t *testing.T) {
		nl := &fakeModule{mem: loadDump(t, "cmis-cig-qsfpdd-400g-lr4.dump")}
		legacy := &fakeLegacy{err: errors.New("must not be called")}
		r := New(nl, legacy, zaptest.NewLogger(t))
		if _, err := r.Module("eth0"); err != nil {
			t.Fatal(err)
		}
		nl.err = syscall.EIO
		if _, err := r.Module("eth0"); !errclass.IsIO(err) {
			t.Fatalf("EIO poll: %v", err)
		}
		if legacy.calls != 0 || r.Path("eth0") != PathNetlink {
			t.Errorf("ioctls asked %d times, path %v", legacy.calls, r.Path("eth0"))
		}
		nl.err = syscall.ENODEV
		if _, err := r.Module("eth0"); !errclass.IsNoDevice(err) || r.Path("eth0") != PathUnknown {
			t.Errorf("ENODEV: %v, path %v; want the path forgotten", err, r.Path("eth0"))
		}
	})

	t.Run("no netlink client: ioctls only", func(t *testing.T) {
		full := loadDump(t, "sff8472-fs-sfp-10g-bidi.dump")
		legacy := &fakeLegacy{typ: ethtoolioctl.ModuleSFF8472, data: legacyDump(t, full, ethtoolioctl.ModuleSFF8472)}
		r := New(nil, legacy, zaptest.NewLogger(t))
		if _, err := r.Module("eth0"); err != nil || r.Path("eth0") != PathLegacy {
			t.Errorf("%v, path %v", err, r.Path("eth0"))
		}
	})
}

func TestFromLegacy(t *testing.T) {
	if _, err := FromLegacy(ethtoolioctl.ModuleSFF8636, make([]byte, 256)); !errors.Is(err, sff.ErrNoModule) {
		t.Errorf("identifier 0: %v", err)
	}
	if _, err := FromLegacy(ethtoolioctl.ModuleSFF8472, nil); err == nil {
		t.Error("empty dump accepted")
	}
	if _, err := FromLegacy(9, []byte{3}); err == nil {
		t.Error("unknown type accepted")
	}
	// SFF-8079: an SFP without diagnostics, 256 bytes of A0h.
	full := loadDump(t, "sff8472-amphenol-sfp-dac.dump")
	a0 := append(append([]byte(nil), full.Lower[0x50]...), full.Upper[sff.PageKey{Addr: 0x50}]...)
	m, err := FromLegacy(ethtoolioctl.ModuleSFF8079, a0)
	if err != nil {
		t.Fatal(err)
	}
	got, err := sff.Decode(m)
	if err != nil {
		t.Fatal(err)
	}
	if got.Identity.VendorName != "Amphenol" || got.Diagnostics {
		t.Errorf("SFF-8079 decode: %+v", got.Identity)
	}
}

// BenchmarkReadModuleCMIS reads a 400G QSFP-DD module (five 128-byte
// regions) through a fake reader: the allocations of one module poll,
// without the I2C time.
func BenchmarkReadModuleCMIS(b *testing.B) {
	f := &fakeModule{mem: loadDump(b, "cmis-cig-qsfpdd-400g-lr4.dump")}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.reqs = f.reqs[:0]
		if _, err := ReadModule(f, "eth0"); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzFromLegacy converts arbitrary legacy dumps of every type and
// decodes them: no panic, whatever the driver returned.
func FuzzFromLegacy(f *testing.F) {
	f.Add(uint32(2), []byte{0x03, 0x04})
	f.Add(uint32(3), bytes.Repeat([]byte{0x11}, 640))
	f.Fuzz(func(t *testing.T, typ uint32, data []byte) {
		m, err := FromLegacy(ethtoolioctl.ModuleType(typ), data)
		if err != nil {
			return
		}
		_, _ = sff.Decode(m)
		_, _ = sff.NextRegions(m)
	})
}
