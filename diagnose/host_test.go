package diagnose

import "testing"

func TestHost(t *testing.T) {
	tests := []struct {
		name, data   string
		kind, kernel string
	}{
		// collect_debug.sh's uname -a and a bare uname -r (the cx7 bundle's
		// uname.txt, from schmaustech/containerize-mft-tools).
		{"uname.txt", "Linux node1 6.8.0-45-generic #45-Ubuntu SMP PREEMPT_DYNAMIC x86_64 GNU/Linux\n", KindUname, "6.8.0-45-generic"},
		{"uname.txt", "# a header\n5.14.0-427.47.1.el9_4.x86_64\n", KindUname, "5.14.0-427.47.1.el9_4.x86_64"},
		{"other.txt", "5.14.0-427.47.1.el9_4.x86_64\n", "", ""},
		{"uname.txt", "1234.56 789.00\n", KindUptime, ""},
	}
	for _, tt := range tests {
		r := NewAnalyzer(rules(t), alertRules(t), nil).Analyze(bundleOf(t, map[string]string{tt.name: tt.data}))
		if r.Files[0].Kind != tt.kind || r.Host.Kernel != tt.kernel {
			t.Errorf("%s %q: kind %q kernel %q, want %q %q", tt.name, tt.data, r.Files[0].Kind, r.Host.Kernel, tt.kind, tt.kernel)
		}
	}
	r := NewAnalyzer(rules(t), alertRules(t), nil).Analyze(bundleOf(t, map[string]string{"os-release.txt": readFixture(t, "cx7_collect_debug/os-release.txt")}))
	if r.Host.OS != "Debian GNU/Linux 12 (bookworm)" {
		t.Errorf("os-release: %+v", r.Host)
	}
}

func FuzzHost(f *testing.F) {
	f.Add("uname.txt", "Linux h 6.1.0 #1 SMP x86_64 GNU/Linux\n")
	f.Add("os-release", "PRETTY_NAME=\"Debian\"\nID=debian\n")
	f.Fuzz(func(t *testing.T, name, s string) {
		ls := lines([]byte(s))
		if isUname(name, ls) {
			_ = parseUname(ls)
		}
		if isOSRelease(ls) {
			_ = parseOSRelease(ls)
		}
	})
}
