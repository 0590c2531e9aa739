package collect

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nic-exporter/nic_exporter/collector/phy"
	"github.com/nic-exporter/nic_exporter/diagnose"
)

// TestRenderFECReadBack checks that what collect writes for FEC is read
// back by diagnose as the phy collector's values.
func TestRenderFECReadBack(t *testing.T) {
	f := phy.FEC{Mode: "rs",
		CorrectedBlocks:     &phy.FECCounter{Total: 282465527, Lanes: []uint64{70616374, 70616374, 70616405, 70616374}},
		UncorrectableBlocks: &phy.FECCounter{Total: 3},
		CorrectedBits:       &phy.FECCounter{Total: 9}}
	got, err := diagnose.ParseFEC(renderFEC("enp8s0f1np1", f))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]uint64{"corrected_blocks": 282465527, "uncorrectable_blocks": 3, "corrected_bits": 9}
	if got.Interface != "enp8s0f1np1" || got.Mode != "rs" {
		t.Errorf("interface %q mode %q", got.Interface, got.Mode)
	}
	if d := cmp.Diff(want, got.Counters); d != "" {
		t.Errorf("counters (-want +got):\n%s", d)
	}
	if got, _ := diagnose.ParseFEC(renderFEC("eth0", phy.FEC{})); got.Mode != "" || len(got.Counters) != 0 {
		t.Errorf("no FEC: %+v", got)
	}
}
