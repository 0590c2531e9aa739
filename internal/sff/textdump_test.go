package sff

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// ParseTextDump reads every real dump into the same memory as the golden
// test's own reader.
func TestParseTextDump(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.dump"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dumps: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		want, err := parseDump(data)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseTextDump(strings.NewReader(string(data)))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if !reflect.DeepEqual(got, want.mem) {
			t.Errorf("%s: ParseTextDump differs from the golden reader", f)
		}
		if c := got.Clone(); !reflect.DeepEqual(c, got) {
			t.Errorf("%s: Clone differs", f)
		} else if len(c.Lower[AddrA0]) > 0 {
			c.Lower[AddrA0][0] ^= 0xff
			if c.Lower[AddrA0][0] == got.Lower[AddrA0][0] {
				t.Errorf("%s: Clone shares memory", f)
			}
		}
	}
	for _, bad := range []string{"00: 18", "page addr=0x50 bank=0 page=0x00\nzz: 00", "page addr=0x50 bank=0 page=0x00\n00: 1g", "page addr=0x50 bank=0 page=0x00\nf8: 00 00 00 00 00 00 00 00 00"} {
		if _, err := ParseTextDump(strings.NewReader(bad)); err == nil {
			t.Errorf("ParseTextDump(%q) succeeded", bad)
		}
	}
}
