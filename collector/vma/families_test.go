package vma

import (
	"testing"

	"github.com/nic-exporter/nic_exporter/xliostats"
)

// TestSockCounterFamiliesPairSameCounters checks the table both
// collectors read: each series pairs libvma's counter with the libxlio
// field of the same name (the libraries name their socket counters
// alike), every libxlio field is a socket field of some libxlio layout,
// and libvma has the families it exports whole.
func TestSockCounterFamiliesPairSameCounters(t *testing.T) {
	var layouts []*xliostats.Layout
	for _, v := range xliostats.KnownVersions() {
		for _, utls := range []bool{false, true} {
			if l, _, ok := xliostats.LookupLayout(v.MD5, utls); ok {
				layouts = append(layouts, l)
			}
		}
	}
	if len(layouts) == 0 {
		t.Fatal("no libxlio layouts")
	}
	vmaSeries := 0
	for _, f := range sockCounterFamilies {
		for _, s := range f.series {
			if len(s.extra) != len(f.labels) {
				t.Errorf("%s: %s has %d label values for labels %v", f.name, s.xlio, len(s.extra), f.labels)
			}
			if s.vma != noVMACounter && s.vma.String() != s.xlio {
				t.Errorf("%s: libvma counter %s paired with libxlio field %s", f.name, s.vma, s.xlio)
			}
			found := false
			for _, l := range layouts {
				found = found || l.HasSocketField(s.xlio)
			}
			if !found {
				t.Errorf("%s: %s is a socket field of no libxlio layout", f.name, s.xlio)
			}
			if f.hasVMA() {
				vmaSeries++
			}
		}
	}
	if len(vmaSockCounters) != vmaSeries {
		t.Errorf("libvma exports %d socket counters, the table gives it %d", len(vmaSockCounters), vmaSeries)
	}
	var xlioSeries int
	for _, f := range sockCounterFamilies {
		xlioSeries += len(f.series)
	}
	if len(xlioSockCounters) != xlioSeries {
		t.Errorf("libxlio exports %d socket counters, the table has %d", len(xlioSockCounters), xlioSeries)
	}
}
