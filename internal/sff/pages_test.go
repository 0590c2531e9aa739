package sff

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// regions returns every region NextRegions has a reader fetch for
// the module whose memory m holds, the ones m already has included.
// It fails when m lacks an advertised region.
func regions(m *Memory) ([]Region, error) {
	read := NewMemory()
	out := []Region{LowerA0}
	if err := copyRegion(read, m, LowerA0); err != nil {
		return nil, err
	}
	for {
		next, err := NextRegions(read)
		if err != nil {
			return nil, err
		}
		if len(next) == 0 {
			return out, nil
		}
		for _, r := range next {
			if err := copyRegion(read, m, r); err != nil {
				return nil, err
			}
			out = append(out, r)
		}
	}
}

// copyRegion copies region r from src to dst, failing when src lacks it.
func copyRegion(dst, src *Memory, r Region) error {
	var b []byte
	if r.Upper {
		b = src.Upper[PageKey{Addr: r.Addr, Bank: r.Bank, Page: r.Page}]
	} else {
		b = src.Lower[r.Addr]
	}
	if len(b) == 0 {
		return fmt.Errorf("sff: %s is advertised but not in memory", r)
	}
	return dst.Put(r.Addr, r.Bank, r.Page, r.Offset(), b)
}

func loadDump(t testing.TB, name string) *Memory {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	d, err := parseDump(data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return d.mem
}

// only returns a Memory holding just the regions rs of m.
func only(t *testing.T, m *Memory, rs []Region) *Memory {
	t.Helper()
	out := NewMemory()
	for _, r := range rs {
		if err := copyRegion(out, m, r); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestRegionsRealDumps checks, for every real dump, that the regions a
// reader fetches are exactly the advertised ones Decode needs: the module
// decodes from them alone exactly as from the whole dump, and leaving out
// any one of them changes the decode or fails it. Pages a dump carries
// beyond those (CMIS pages 03h, 04h, 10h, 12h, 13h, 25h; the SFP upper
// halves) are not read.
func TestRegionsRealDumps(t *testing.T) {
	lower := LowerA0
	a2 := Region{Addr: AddrA2}
	p := func(page uint8) Region { return upper(0, page) }
	cmis := []Region{lower, p(0x00), p(0x01), p(0x02), p(0x11)}
	want := map[string][]Region{
		"cmis-cig-qsfpdd-400g-lr4.dump":        cmis,
		"cmis-eoptolink-qsfpdd-dr8.dump":       cmis,
		"cmis-juniper-qsfpdd-1w1.dump":         cmis,
		"cmis-juniper-qsfpdd-2e1.dump":         cmis,
		"sff8472-amphenol-sfp-dac.dump":        {lower}, // passive DAC: byte 92 = 0x00, no diagnostics
		"sff8472-arista-sfp-10glr.dump":        {lower, a2},
		"sff8472-fs-sfp-10g-bidi.dump":         {lower, a2},
		"sff8472-fs-sfp-dwdm-ch44.dump":        {lower, a2},
		"sff8636-oem-qsfp28-breakout-dac.dump": {lower, p(0x00)}, // flat memory (byte 2 = 0x06)
		"sff8636-qsfptek-qsfp28-er4-a.dump":    {lower, p(0x00), p(0x03)},
		"sff8636-qsfptek-qsfp28-er4-b.dump":    {lower, p(0x00), p(0x03)},
	}
	files, err := filepath.Glob("testdata/*.dump")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(want) {
		t.Fatalf("%d dumps in testdata, %d in this table", len(files), len(want))
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			m := loadDump(t, name)
			got, err := regions(m)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want[name], got); d != "" {
				t.Fatalf("regions (-want +got)\n%s", d)
			}
			full, err := Decode(m)
			if err != nil {
				t.Fatal(err)
			}
			fromRead, err := Decode(only(t, m, got))
			if err != nil {
				t.Fatalf("decode of the read regions: %v", err)
			}
			if d := cmp.Diff(full, fromRead); d != "" {
				t.Errorf("decode of the read regions differs from the whole dump (-whole +read)\n%s", d)
			}
			for i := range got {
				less := append(append([]Region{}, got[:i]...), got[i+1:]...)
				if len(less) == 0 {
					continue
				}
				mod, err := Decode(only(t, m, less))
				if err == nil && cmp.Equal(full, mod) {
					t.Errorf("%s is read but not needed: the decode is the same without it", got[i])
				}
			}
		})
	}
}

// TestNextRegions covers the decisions the real dumps do not reach:
// more CMIS banks, address change, and the errors.
func TestNextRegions(t *testing.T) {
	lowerOnly := func(b ...byte) *Memory {
		m := NewMemory()
		lo := make([]byte, PageSize)
		copy(lo, b)
		_ = m.Put(AddrA0, 0, 0, 0, lo)
		return m
	}
	sfp := func(diag byte) *Memory {
		b := make([]byte, PageSize)
		b[0], b[sfpDiagType] = 0x03, diag
		return lowerOnly(b...)
	}
	banked := func(adv byte) *Memory {
		m := loadDump(t, "cmis-cig-qsfpdd-400g-lr4.dump")
		m.Upper[PageKey{Addr: AddrA0, Page: 1}][cmisPagesAdver-PageSize] = adv
		delete(m.Upper, PageKey{Addr: AddrA0, Page: 0x10})
		return m
	}
	tests := []struct {
		name    string
		mem     *Memory
		want    []Region
		wantErr func(error) bool
	}{
		{name: "empty memory: lower memory first", mem: NewMemory(), want: []Region{LowerA0}},
		{name: "nil memory", mem: nil, want: []Region{LowerA0}},
		{name: "identifier 0: no module", mem: lowerOnly(0x00), wantErr: func(err error) bool { return errors.Is(err, ErrNoModule) }},
		{name: "unsupported identifier", mem: lowerOnly(0x01), wantErr: func(err error) bool {
			var ue *UnsupportedError
			return errors.As(err, &ue) && ue.Identifier == 0x01
		}},
		{name: "SFP lower memory cut short", mem: func() *Memory {
			m := NewMemory()
			_ = m.Put(AddrA0, 0, 0, 0, []byte{0x03, 0, 0})
			return m
		}(), wantErr: func(err error) bool {
			var se *ShortError
			return errors.As(err, &se)
		}},
		{name: "SFP with diagnostics", mem: sfp(0x68), want: []Region{{Addr: AddrA2}}},
		{name: "SFP with diagnostics behind an address change", mem: sfp(0x6c), want: nil},
		{name: "SFP without diagnostics", mem: sfp(0x00), want: nil},
		{name: "QSFP28 paged", mem: lowerOnly(0x11, 0x07, 0x00), want: []Region{upper(0, 0), upper(0, 3)}},
		{name: "QSFP+ flat", mem: lowerOnly(0x0d, 0x07, 0x04), want: []Region{upper(0, 0)}},
		{name: "QSFP-DD flat", mem: lowerOnly(0x18, 0x40, 0x80), want: []Region{upper(0, 0)}},
		{name: "OSFP paged: round two waits for page 01h", mem: lowerOnly(0x19, 0x50, 0x00), want: []Region{upper(0, 0), upper(0, 1), upper(0, 2), upper(0, 0x11)}},
		{name: "CMIS banks 0-1 advertised (16 lanes)", mem: banked(0x25), want: []Region{upper(1, 0x11)}},
		{name: "CMIS banks 0-3 advertised (32 lanes)", mem: banked(0x26), want: []Region{upper(1, 0x11), upper(2, 0x11), upper(3, 0x11)}},
		{name: "CMIS reserved bank code", mem: banked(0x27), want: nil},
		{name: "CMIS bank 0 only, all read", mem: banked(0x24), want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NextRegions(tt.mem)
			if tt.wantErr != nil {
				if !tt.wantErr(err) {
					t.Fatalf("NextRegions = %v, %v; wrong error", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("(-want +got)\n%s", d)
			}
		})
	}
}

// TestNextRegionsAgreesWithDecode checks that NextRegions refuses exactly
// the identifiers Decode refuses.
func TestNextRegionsAgreesWithDecode(t *testing.T) {
	for id := 0; id < 256; id++ {
		m := NewMemory()
		lo := make([]byte, PageSize)
		lo[0] = byte(id)
		_ = m.Put(AddrA0, 0, 0, 0, lo)
		_, nerr := NextRegions(m)
		_, derr := Decode(m)
		var nu, du *UnsupportedError
		if errors.As(nerr, &nu) != errors.As(derr, &du) || errors.Is(nerr, ErrNoModule) != errors.Is(derr, ErrNoModule) {
			t.Errorf("identifier 0x%02x: NextRegions %v, Decode %v", id, nerr, derr)
		}
	}
}

// FuzzNextRegions feeds arbitrary lower memory and page 01h.
func FuzzNextRegions(f *testing.F) {
	f.Add([]byte{0x18, 0x40, 0x00}, []byte{})
	f.Add([]byte{0x03}, []byte{1, 2})
	f.Fuzz(func(t *testing.T, lower, page1 []byte) {
		m := NewMemory()
		if len(lower) > PageSize {
			lower = lower[:PageSize]
		}
		if len(page1) > PageSize {
			page1 = page1[:PageSize]
		}
		_ = m.Put(AddrA0, 0, 0, 0, lower)
		_ = m.Put(AddrA0, 0, 1, PageSize, page1)
		rs, err := NextRegions(m)
		if err == nil && len(rs) > 8 {
			t.Fatalf("%d regions", len(rs))
		}
	})
}
