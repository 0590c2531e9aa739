package vmastats

import "testing"

func TestRingTypeEnums(t *testing.T) {
	for _, tc := range []struct {
		e    RingEnum
		raw  int32
		want RingType
	}{
		{RingEnumOld, 0, RingETH}, {RingEnumOld, 1, RingETHCB}, {RingEnumOld, 2, RingETHDirect}, {RingEnumOld, 3, RingTAP}, {RingEnumOld, 4, RingIB},
		{RingEnumNew, 0, RingETH}, {RingEnumNew, 1, RingETHDirect}, {RingEnumNew, 2, RingTAP}, {RingEnumNew, 3, RingIB},
		{RingEnumNew, 4, RingUnknown}, {RingEnumOld, -1, RingUnknown}, {RingEnumOld, 99, RingUnknown},
	} {
		if got := ringType(tc.e, tc.raw); got != tc.want {
			t.Errorf("ringType(%d, %d) = %v, want %v", tc.e, tc.raw, got, tc.want)
		}
	}
}

// TestRingEnumRaw checks that Raw inverts the decoding for every type of
// each numbering and refuses a type the numbering lacks.
func TestRingEnumRaw(t *testing.T) {
	for _, e := range []RingEnum{RingEnumOld, RingEnumNew} {
		for _, rt := range []RingType{RingETH, RingETHCB, RingETHDirect, RingTAP, RingIB} {
			raw, ok := e.Raw(rt)
			if ok != (e == RingEnumOld || rt != RingETHCB) {
				t.Errorf("RingEnum(%d).Raw(%v): ok %v", e, rt, ok)
			}
			if ok && ringType(e, raw) != rt {
				t.Errorf("RingEnum(%d).Raw(%v) = %d, which decodes as %v", e, rt, raw, ringType(e, raw))
			}
		}
	}
}
