package exposition

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"math"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func TestNewDescRejectsInvalid(t *testing.T) {
	tests := []struct {
		name   string
		metric string
		typ    Type
		labels []string
	}{
		{"empty name", "", Gauge, nil},
		{"leading digit", "1abc", Gauge, nil},
		{"dash", "nic-x", Gauge, nil},
		{"counter without _total", "nic_x", Counter, nil},
		{"bad label", "nic_x", Gauge, []string{"a-b"}},
		{"reserved label", "nic_x", Gauge, []string{"__name"}},
		{"duplicate label", "nic_x", Gauge, []string{"a", "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewDesc(tt.metric, "help", tt.typ, tt.labels...); err == nil {
				t.Fatalf("NewDesc(%q, %v) succeeded, want error", tt.metric, tt.labels)
			}
		})
	}
}

func TestSnapshotFormats(t *testing.T) {
	c := MustNewDesc("nic_test_events_total", "Events with a \\ backslash,\nnewline and \"quotes\".", Counter, "device", "queue")
	g := MustNewDesc("nic_test_temperature", "A gauge.", Gauge)
	b := NewBuilder()
	b.Add(c, 3, "eth0", "0")
	b.Add(g, 21.5)
	b.Add(c, 1<<53, "eth\"1\\\n", "1")
	b.Add(c, 7, "only-one-label") // skipped: label count
	b.Add(g, math.Inf(1))
	b.SetDevices(2)
	s := b.Snapshot()

	wantText := `# HELP nic_test_events_total Events with a \\ backslash,\nnewline and "quotes".
# TYPE nic_test_events_total counter
nic_test_events_total{device="eth0",queue="0"} 3
nic_test_events_total{device="eth\"1\\\n",queue="1"} 9007199254740992
# HELP nic_test_temperature A gauge.
# TYPE nic_test_temperature gauge
nic_test_temperature 21.5
nic_test_temperature +Inf
`
	if diff := cmp.Diff(wantText, s.String()); diff != "" {
		t.Errorf("text format mismatch (-want +got):\n%s", diff)
	}
	wantOM := `# HELP nic_test_events Events with a \\ backslash,\nnewline and \"quotes\".
# TYPE nic_test_events counter
nic_test_events_total{device="eth0",queue="0"} 3
nic_test_events_total{device="eth\"1\\\n",queue="1"} 9007199254740992
# HELP nic_test_temperature A gauge.
# TYPE nic_test_temperature gauge
nic_test_temperature 21.5
nic_test_temperature +Inf
`
	var om bytes.Buffer
	if _, err := s.WriteTo(&om, OpenMetrics); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantOM, om.String()); diff != "" {
		t.Errorf("OpenMetrics format mismatch (-want +got):\n%s", diff)
	}
	if got := string(s.AppendTo(nil, OpenMetrics)); got != wantOM {
		t.Errorf("AppendTo(OpenMetrics) differs from WriteTo")
	}
	if s.Size(Text) != len(wantText) || s.Size(OpenMetrics) != len(wantOM) {
		t.Errorf("Size = %d/%d, want %d/%d", s.Size(Text), s.Size(OpenMetrics), len(wantText), len(wantOM))
	}
	if s.Series() != 4 || s.Devices() != 2 || b.Invalid() != 1 {
		t.Errorf("Series/Devices/Invalid = %d/%d/%d, want 4/2/1", s.Series(), s.Devices(), b.Invalid())
	}
	if diff := cmp.Diff([]string{"nic_test_events_total", "nic_test_temperature"}, s.Families()); diff != "" {
		t.Errorf("Families mismatch: %s", diff)
	}
}

func TestBuilderResetKeepsSnapshotsImmutable(t *testing.T) {
	g := MustNewDesc("nic_test_value", "A gauge.", Gauge, "k")
	b := NewBuilder()
	b.Add(g, 1, "a")
	first := b.Snapshot()
	b.Reset()
	b.Add(g, 2, "b")
	second := b.Snapshot()
	if !strings.Contains(first.String(), `{k="a"} 1`) || strings.Contains(first.String(), `"b"`) {
		t.Errorf("first snapshot changed after Reset: %q", first.String())
	}
	if !strings.Contains(second.String(), `{k="b"} 2`) || strings.Contains(second.String(), `"a"`) {
		t.Errorf("second snapshot wrong: %q", second.String())
	}
	if Empty.String() != "" || Empty.Series() != 0 {
		t.Errorf("Empty is not empty")
	}
}

func TestAppendFloat(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0"}, {-3, "-3"}, {1.5, "1.5"}, {1 << 53, "9007199254740992"},
		{1e300, "1e+300"}, {math.NaN(), "NaN"}, {math.Inf(-1), "-Inf"}, {0.000123, "0.000123"},
	}
	for _, tt := range tests {
		if got := string(AppendFloat(nil, tt.in)); got != tt.want {
			t.Errorf("AppendFloat(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// parseText parses the text format with the Prometheus parser.
func parseText(t testing.TB, s string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(s))
	if err != nil {
		t.Fatalf("output does not parse: %v\n%s", err, s)
	}
	return fams
}

func FuzzLabelValues(f *testing.F) {
	f.Add("eth0", 1.0)
	f.Add("a\"b\\c\nd", -2.5)
	f.Add("\xff\xfeinvalid utf8 \xc3", math.Inf(1))
	f.Add("", 0.0)
	d := MustNewDesc("nic_fuzz_value", "Fuzzed.", Gauge, "label")
	f.Fuzz(func(t *testing.T, value string, v float64) {
		b := NewBuilder()
		b.Add(d, v, value)
		out := b.Snapshot().String()
		fams := parseText(t, out)
		m := fams["nic_fuzz_value"].GetMetric()
		if len(m) != 1 {
			t.Fatalf("got %d samples, want 1:\n%s", len(m), out)
		}
		got := m[0].GetLabel()[0].GetValue()
		want := validUTF8(value)
		if got != want || !utf8.ValidString(got) {
			t.Fatalf("label round trip: got %q, want %q", got, want)
		}
		gv := m[0].GetGauge().GetValue()
		if !(gv == v || (math.IsNaN(gv) && math.IsNaN(v))) {
			t.Fatalf("value round trip: got %v, want %v", gv, v)
		}
	})
}

// validUTF8 replaces each invalid byte with U+FFFD, as the encoder does.
func validUTF8(s string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(r) // range yields RuneError for each invalid byte
	}
	return b.String()
}

func TestSnapshotUnchangedByLaterAdds(t *testing.T) {
	g := MustNewDesc("nic_test_value", "A gauge.", Gauge, "k")
	b := NewBuilder()
	for poll := 0; poll < 3; poll++ {
		b.Reset()
		b.Add(g, float64(poll), "a")
		snap := b.Snapshot()
		want := snap.String()
		// Adds after Snapshot, with or without a Reset, never show in it.
		b.Add(g, 100, "late")
		b.Reset()
		b.Add(g, 200, "next")
		if got := snap.String(); got != want {
			t.Fatalf("poll %d: snapshot changed from %q to %q", poll, want, got)
		}
	}
}

// BenchmarkBuilderCycle measures one poll's Reset, Adds and Snapshot of
// 100,000 series, and reports the heap the Builder and the latest
// snapshot keep between polls, per series.
func BenchmarkBuilderCycle(b *testing.B) {
	const n = 100_000
	descs := make([]*Desc, 100)
	for i := range descs {
		descs[i] = MustNewDesc(fmt.Sprintf("nic_test_queue_stat_%d_total", i), "A counter.", Counter, "device", "queue")
	}
	queues := make([]string, n/len(descs))
	for i := range queues {
		queues[i] = strconv.Itoa(i)
	}
	bld := NewBuilder()
	var snap *Snapshot
	cycle := func() {
		bld.Reset()
		for _, d := range descs {
			for q, name := range queues {
				bld.Add(d, float64(q*1000003), "enp16s0np0", name)
			}
		}
		snap = bld.Snapshot()
	}
	cycle()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for b.Loop() {
		cycle()
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(bld) // the Runner keeps its Builder between polls
	if snap.Series() != n {
		b.Fatalf("%d series", snap.Series())
	}
	b.ReportMetric(float64(after.HeapAlloc)/n, "live-heap-B/series")
	b.ReportMetric(float64(snap.Size(Text))/n, "text-B/series")
}

func TestNewDescValidatesNames(t *testing.T) {
	tests := []struct {
		name    string
		typ     Type
		labels  []string
		wantErr string // "" for a valid Desc
	}{
		{"nic_ok", Gauge, []string{"device", "_queue", "lane0"}, ""},
		{"nic:recorded_total", Counter, nil, ""},
		{"_leading_underscore", Gauge, nil, ""},
		{"", Gauge, nil, "invalid metric name"},
		{"0starts_with_digit", Gauge, nil, "invalid metric name"},
		{"has-dash", Gauge, nil, "invalid metric name"},
		{"has space", Gauge, nil, "invalid metric name"},
		{"nïc_utf8", Gauge, nil, "invalid metric name"},
		{"nic_counter", Counter, nil, "must end in _total"},
		{"nic_x", Gauge, []string{""}, "invalid label name"},
		{"nic_x", Gauge, []string{"has:colon"}, "invalid label name"},
		{"nic_x", Gauge, []string{"1queue"}, "invalid label name"},
		{"nic_x", Gauge, []string{"__reserved"}, "invalid label name"},
		{"nic_x", Gauge, []string{"déviсe"}, "invalid label name"},
		{"nic_x", Gauge, []string{"device", "device"}, "duplicate label name"},
	}
	for _, tt := range tests {
		_, err := NewDesc(tt.name, "Help.", tt.typ, tt.labels...)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("NewDesc(%q, %q): %v, want no error", tt.name, tt.labels, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("NewDesc(%q, %q): error %v, want one containing %q", tt.name, tt.labels, err, tt.wantErr)
		}
	}
}

func TestSnapshotSplitsDetailFamilies(t *testing.T) {
	sum := MustNewDesc("nic_q_total", "Summed.", Counter, "device")
	perQueue := MustNewDesc("nic_q_per_queue_total", "Per queue.", Counter, "device", "queue").AsDetail()
	if sum.IsDetail() || !perQueue.IsDetail() {
		t.Fatalf("IsDetail: sum %v, perQueue %v; want false, true", sum.IsDetail(), perQueue.IsDetail())
	}
	b := NewBuilder()
	b.Add(perQueue, 1, "eth0", "0")
	b.Add(sum, 3, "eth0")
	b.Add(perQueue, 2, "eth0", "1")
	s := b.Snapshot()

	tests := []struct {
		name   string
		part   *Snapshot
		series int
		want   string
	}{
		{"default", s, 1, "# HELP nic_q_total Summed.\n# TYPE nic_q_total counter\nnic_q_total{device=\"eth0\"} 3\n"},
		{"detail", s.Detail(), 2, "# HELP nic_q_per_queue_total Per queue.\n# TYPE nic_q_per_queue_total counter\n" +
			"nic_q_per_queue_total{device=\"eth0\",queue=\"0\"} 1\nnic_q_per_queue_total{device=\"eth0\",queue=\"1\"} 2\n"},
		{"detail of detail", s.Detail().Detail(), 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if _, err := tt.part.WriteTo(&buf, Text); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, buf.String()); diff != "" {
				t.Errorf("part (-want +got):\n%s", diff)
			}
			if got := tt.part.Series(); got != tt.series {
				t.Errorf("Series() = %d, want %d", got, tt.series)
			}
			if got := tt.part.Size(Text); got != len(tt.want) {
				t.Errorf("Size(Text) = %d, want %d", got, len(tt.want))
			}
			seg := tt.part.Deflated(Text)
			if seg.Size != len(tt.want) || seg.CRC != crc32.ChecksumIEEE([]byte(tt.want)) {
				t.Errorf("Deflated: size %d crc %08x, want %d %08x", seg.Size, seg.CRC, len(tt.want), crc32.ChecksumIEEE([]byte(tt.want)))
			}
		})
	}
	if Empty.Detail() != Empty {
		t.Error("Empty.Detail() is not Empty")
	}
}
