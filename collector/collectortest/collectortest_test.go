package collectortest

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
)

// recorder is a testing.TB that records Errorf instead of failing.
type recorder struct {
	*testing.T
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// fake adds what add says to each poll.
type fake struct{ add func(p *collector.Poll) }

func (fake) Name() string { return "fake" }
func (f fake) Update(_ context.Context, p *collector.Poll) error {
	f.add(p)
	return nil
}

// TestPollChecks checks that Poll fails a collector that adds a series
// twice, in the default or the detail exposition, or a sample that does not match its descriptor,
// and passes one that does not.
func TestPollChecks(t *testing.T) {
	d := exposition.MustNewDesc("nic_fake_total", "Fake.", exposition.Counter, "device")
	detail := exposition.MustNewDesc("nic_fake_queue_total", "Fake.", exposition.Counter, "device", "queue").AsDetail()
	tests := []struct {
		name string
		add  func(p *collector.Poll)
		want string // substring of the recorded error; "" for none
	}{
		{"clean", func(p *collector.Poll) { p.Add(d, 1, "eth0"); p.Add(d, 2, "eth1"); p.Add(detail, 3, "eth0", "0") }, ""},
		{"series twice", func(p *collector.Poll) { p.Add(d, 1, "eth0"); p.Add(d, 2, "eth0") }, "default exposition: exposition: line 4: series nic_fake_total{device=\"eth0\"} repeated"},
		{"detail series twice", func(p *collector.Poll) { p.Add(detail, 1, "eth0", "0"); p.Add(detail, 1, "eth0", "0") }, "detail exposition"},
		{"label count", func(p *collector.Poll) { p.Add(d, 1, "eth0", "extra") }, "1 invalid samples"},
		{"no descriptor", func(p *collector.Poll) { p.Add(nil, 1) }, "1 invalid samples"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{T: t}
			Poll(r, fake{tt.add}, nil)
			got := strings.Join(r.errs, "\n")
			switch {
			case tt.want == "" && got != "":
				t.Errorf("Poll failed a clean collector: %s", got)
			case tt.want != "" && !strings.Contains(got, tt.want):
				t.Errorf("Poll recorded %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSeries(t *testing.T) {
	got := Series(t, "# TYPE a gauge\na{z=\"1\",b=\"2\"} 3\n")
	if len(got) != 1 || got[`a{b="2",z="1"}`] != 3 {
		t.Errorf("Series = %v", got)
	}
}

func TestGolden(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "x.prom")
	golden(t, path, "a 1\nb 2\n", true)
	Golden(t, path, "a 1\nb 2\n")
	r := &recorder{T: t}
	Golden(r, path, "a 1\nb 3\n")
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], "-b 2\n+b 3") {
		t.Errorf("a changed line gave %q", r.errs)
	}
}
