package ethtoolioctl

import "testing"

func TestModuleTypeString(t *testing.T) {
	for ty, want := range map[ModuleType]string{ModuleSFF8079: "SFF-8079", ModuleSFF8472: "SFF-8472", ModuleSFF8636: "SFF-8636", ModuleSFF8436: "SFF-8436", 9: "module type 0x9"} {
		if got := ty.String(); got != want {
			t.Errorf("%d: %q, want %q", uint32(ty), got, want)
		}
	}
}
