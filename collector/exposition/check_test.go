package exposition

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	const help = "# HELP a_total A.\n# TYPE a_total counter\n"
	tests := []struct {
		name string
		text string
		want []string // substrings of the error; none for a valid text
	}{
		{name: "valid", text: help + "a_total{d=\"x\"} 1\na_total{d=\"y\"} 2\n# HELP b B.\n# TYPE b gauge\nb 3\n"},
		{name: "empty", text: ""},
		{name: "histogram and summary", text: "# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 1\nh_sum 0.5\nh_count 1\n" +
			"# HELP s S.\n# TYPE s summary\ns{quantile=\"0.5\"} 1\ns_sum 1\ns_count 1\n"},
		{name: "bucket of a summary", text: "# HELP s S.\n# TYPE s summary\ns_bucket{le=\"1\"} 1\n",
			want: []string{`line 3: sample of s_bucket in the block of family "s"`}},
		{name: "series twice", text: help + "a_total{d=\"x\"} 1\na_total{d=\"x\"} 2\n",
			want: []string{`line 4: series a_total{d="x"} repeated (first at line 3)`}},
		{name: "family twice", text: help + "a_total 1\n# HELP b B.\n# TYPE b gauge\nb 3\n" + help + "a_total{d=\"y\"} 1\n",
			want: []string{"line 7: HELP a_total repeated (first at line 1)", "line 7: family a_total continues after another family", "line 8: TYPE a_total repeated (first at line 2)"}},
		{name: "sample in another family's block", text: help + "b 1\n",
			want: []string{`line 3: sample of b in the block of family "a_total"`}},
		{name: "no sample", text: help + "a_total\n", want: []string{`line 3: "a_total" is no sample`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check([]byte(tt.text))
			if len(tt.want) == 0 {
				if err != nil {
					t.Errorf("Check: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Check passed, want %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestCheckBuilder checks that what one Builder renders passes Check,
// and that a series added twice, which the Builder does not refuse, is
// caught.
func TestCheckBuilder(t *testing.T) {
	d := MustNewDesc("nic_test_total", "Test.", Counter, "device")
	g := MustNewDesc("nic_test_gauge", "Test.", Gauge, "device")
	b := NewBuilder()
	b.Add(d, 1, "eth0")
	b.Add(g, 2, "eth0")
	b.Add(d, 3, "eth1")
	if err := Check([]byte(b.Snapshot().String())); err != nil {
		t.Errorf("one Builder's output: %v", err)
	}
	b = NewBuilder()
	b.Add(d, 1, "eth0")
	b.Add(d, 2, "eth0")
	if err := Check([]byte(b.Snapshot().String())); err == nil || !strings.Contains(err.Error(), "repeated") {
		t.Errorf("a series added twice: Check returned %v", err)
	}
}
