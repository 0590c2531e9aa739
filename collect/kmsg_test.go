package collect

import (
	"testing"

	"github.com/nic-exporter/nic_exporter/internal/logrules"
)

// diagnoseRules returns the built-in kernel log rules.
func diagnoseRules(t *testing.T) *logrules.Engine {
	t.Helper()
	rules, err := logrules.Load("", logrules.KernelRules())
	if err != nil {
		t.Fatal(err)
	}
	return rules
}

// TestParseKmsgRecord reads records in the format of
// Documentation/ABI/testing/dev-kmsg (the kernel's own examples).
func TestParseKmsgRecord(t *testing.T) {
	tests := []struct {
		in      string
		want    KmsgRecord
		wantErr bool
	}{
		{"7,160,424069,-;pci_root PNP0A03:00: host bridge window [io  0x0000-0x0cf7] (ignored)\n SUBSYSTEM=acpi\n DEVICE=+acpi:PNP0A03:00\n",
			KmsgRecord{Priority: 7, Seq: 160, Micros: 424069, Message: "pci_root PNP0A03:00: host bridge window [io  0x0000-0x0cf7] (ignored)"}, false},
		{"6,339,5140900,-,caller=T1;NET: Registered protocol family 10\n",
			KmsgRecord{Priority: 6, Seq: 339, Micros: 5140900, Message: "NET: Registered protocol family 10"}, false},
		{"3,1,2,-;a;b", KmsgRecord{Priority: 3, Seq: 1, Micros: 2, Message: "a;b"}, false},
		{"no separator", KmsgRecord{}, true},
		{"6,1;short prefix", KmsgRecord{}, true},
		{"x,1,2,-;bad priority", KmsgRecord{}, true},
		{"6,1,-2,-;negative time", KmsgRecord{}, true},
	}
	for _, tt := range tests {
		got, err := ParseKmsgRecord([]byte(tt.in))
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseKmsgRecord(%q) = %+v, %v; want %+v, error %t", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

// FuzzParseKmsgRecord checks that no record makes the parser panic and
// that a parsed message has no newline.
func FuzzParseKmsgRecord(f *testing.F) {
	f.Add([]byte("7,160,424069,-;pci_root PNP0A03:00: host bridge\n SUBSYSTEM=acpi\n"))
	f.Add([]byte("6,339,5140900,-,caller=T1;NET: Registered protocol family 10\n"))
	f.Add([]byte(";"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseKmsgRecord(data)
		if err == nil {
			for _, c := range r.Message {
				if c == '\n' {
					t.Fatalf("message with a newline: %q", r.Message)
				}
			}
		}
	})
}

// TestNumbered checks the ibstat names of sysfs port states, and the
// attribute's own name for a number ibstat has no name for.
func TestNumbered(t *testing.T) {
	for in, want := range map[string]string{"4: ACTIVE": "Active", "5: LinkUp": "LinkUp", "2: Polling": "Polling", "9: Future": "Future"} {
		names := ibStates
		if in != "4: ACTIVE" {
			names = ibPhysStates
		}
		if got := numbered(in, names); got != want {
			t.Errorf("numbered(%q) = %q, want %q", in, got, want)
		}
	}
}
