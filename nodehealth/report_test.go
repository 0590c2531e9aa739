package nodehealth

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestReport(t *testing.T) {
	sick := &Verdict{Status: VerdictUnhealthy, Reason: "NICFirmwareFatal (FirmwareFatalError) on pci/0000:08:00.0, pci/0000:08:00.1; PCIeLinkDegraded (PCIeLinkBelowCapability) on enp8s0f1np1",
		Conditions: []Condition{{Type: "NICFirmwareFatal", Status: StatusTrue, Reason: "FirmwareFatalError", Severity: "page", Message: "the firmware stopped"}, {Type: "NICLinkDown", Status: StatusFalse}}}
	ok := &Verdict{Status: VerdictOK, Reason: "no NIC condition is true"}
	unknown := &Verdict{Status: VerdictUnknown, Reason: "the collectors have not all polled once yet"}
	down := errors.New("reading the node health: connection refused")
	for _, tc := range []struct {
		name   string
		v      *Verdict
		err    error
		format string
		want   string
		code   int
	}{
		{"text ok", ok, nil, FormatText, "OK: no NIC condition is true\n", 0},
		{"text sick", sick, nil, FormatText, "UNHEALTHY: " + sick.Reason + "\n  NICFirmwareFatal (FirmwareFatalError, page): the firmware stopped\n", 1},
		{"text unknown", unknown, nil, FormatText, "UNKNOWN: the collectors have not all polled once yet\n", 2},
		{"text error", nil, down, FormatText, "UNKNOWN: reading the node health: connection refused\n", 2},
		{"nhc ok", ok, nil, FormatNHC, "OK\n", 0},
		{"nhc sick", sick, nil, FormatNHC, "UNHEALTHY: " + sick.Reason + "\n", 1},
		{"nhc error", nil, down, FormatNHC, "UNKNOWN: reading the node health: connection refused\n", 2},
		{"npd ok", ok, nil, FormatNPD, "no NIC condition is true\n", 0},
		{"npd sick", sick, nil, FormatNPD, "NICFirmwareFatal (FirmwareFatalError) on pci/0000:08:00.0, pci/0000:08:00.1; ...\n", 1},
		{"npd unknown", unknown, nil, FormatNPD, "the collectors have not all polled once yet\n", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, code := Report(tc.v, tc.err, tc.format, 0)
			if got != tc.want || code != tc.code {
				t.Errorf("got %q, %d; want %q, %d", got, code, tc.want, tc.code)
			}
			if tc.format != FormatText && strings.Count(got, "\n") != 1 {
				t.Errorf("%s is not one line: %q", tc.format, got)
			}
			if tc.format == FormatNPD && len(strings.TrimSuffix(got, "\n")) > DefaultNPDMaxOutput {
				t.Errorf("npd message longer than %d: %d", DefaultNPDMaxOutput, len(got))
			}
		})
	}
}

func TestReportNPDCutsOnRunes(t *testing.T) {
	v := &Verdict{Status: VerdictUnhealthy, Reason: strings.Repeat("é", 50)}
	got, _ := Report(v, nil, FormatNPD, 20)
	got = strings.TrimSuffix(got, "\n")
	if len(got) > 20 || !utf8.ValidString(got) || !strings.HasSuffix(got, "...") {
		t.Errorf("%q", got)
	}
}

func TestVerdictOnly(t *testing.T) {
	v := &Verdict{Status: VerdictUnhealthy, Reason: "x", Conditions: []Condition{
		{Type: "NICFirmwareFatal", Status: StatusTrue, Reason: "FirmwareFatalError", Devices: []string{"pci/0000:08:00.0"}},
		{Type: "NICLinkDown", Status: StatusFalse, Reason: HealthyReason},
	}}
	only, err := v.Only([]string{"NICLinkDown"})
	if err != nil || only.Status != VerdictOK || len(only.Conditions) != 1 {
		t.Errorf("NICLinkDown only: %+v, %v", only, err)
	}
	only, err = v.Only([]string{"NICFirmwareFatal"})
	if err != nil || only.Status != VerdictUnhealthy || only.Reason != "NICFirmwareFatal (FirmwareFatalError) on pci/0000:08:00.0" {
		t.Errorf("NICFirmwareFatal only: %+v, %v", only, err)
	}
	if _, err := v.Only([]string{"NICFirmwareFatl"}); err == nil || !strings.Contains(err.Error(), "NICFirmwareFatl") {
		t.Errorf("a typo: %v", err)
	}
	u := &Verdict{Status: VerdictUnknown, Reason: "starting", Conditions: v.Conditions}
	if only, err := u.Only([]string{"NICFirmwareFatal"}); err != nil || only.Status != VerdictUnknown {
		t.Errorf("unknown: %+v, %v", only, err)
	}
}
