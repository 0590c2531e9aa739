package exposition

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDeferredDetail checks that deferred detail samples read like
// samples added directly: the same text, sizes, series count and
// compressed segment, one header per family when a family has both
// kinds of samples, and that the render runs only when the detail part's
// bytes are first read, once.
func TestDeferredDetail(t *testing.T) {
	sum := MustNewDesc("nic_q_total", "Summed.", Counter, "device")
	perQueue := MustNewDesc("nic_q_per_queue_total", "Per queue.", Counter, "device", "queue").AsDetail()
	perSocket := MustNewDesc("nic_s_per_socket", "Per socket.", Gauge, "fd").AsDetail()
	const header = "# HELP nic_q_per_queue_total Per queue.\n# TYPE nic_q_per_queue_total counter\n"

	tests := []struct {
		name   string
		poll   func(b *Builder, render func(func(*Builder)) func(*Builder))
		series int
		// renders is how many renders run when the part is read: each
		// deferred render with samples, once.
		renders int32
		want    string
	}{
		{
			name: "deferred only",
			poll: func(b *Builder, counted func(func(*Builder)) func(*Builder)) {
				b.Add(sum, 3, "eth0")
				b.AddDeferred(2, counted(func(b *Builder) {
					b.Add(perQueue, 1, "eth0", "0")
					b.Add(perQueue, 2, "eth0", "1")
				}))
			},
			series:  2,
			renders: 1,
			want:    header + "nic_q_per_queue_total{device=\"eth0\",queue=\"0\"} 1\nnic_q_per_queue_total{device=\"eth0\",queue=\"1\"} 2\n",
		},
		{
			name: "direct and deferred samples of one family",
			poll: func(b *Builder, counted func(func(*Builder)) func(*Builder)) {
				b.Add(perQueue, 1, "eth0", "0")
				b.AddDeferred(1, counted(func(b *Builder) { b.Add(perQueue, 2, "eth1", "0") }))
				b.AddDeferred(1, counted(func(b *Builder) { b.Add(perSocket, 7, "12") }))
			},
			series:  3,
			renders: 2,
			want: header + "nic_q_per_queue_total{device=\"eth0\",queue=\"0\"} 1\nnic_q_per_queue_total{device=\"eth1\",queue=\"0\"} 2\n" +
				"# HELP nic_s_per_socket Per socket.\n# TYPE nic_s_per_socket gauge\nnic_s_per_socket{fd=\"12\"} 7\n",
		},
		{
			name: "nothing declared is nothing",
			poll: func(b *Builder, counted func(func(*Builder)) func(*Builder)) {
				b.AddDeferred(0, counted(func(b *Builder) { b.Add(perQueue, 1, "eth0", "0") }))
			},
			series:  0,
			renders: 0,
			want:    "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var renders atomic.Int32
			counted := func(r func(*Builder)) func(*Builder) {
				return func(b *Builder) { renders.Add(1); r(b) }
			}
			b := NewBuilder()
			tt.poll(b, counted)
			s := b.Snapshot()
			d := s.Detail()
			// What the self-metrics and /metrics read renders nothing.
			_ = s.String()
			_ = s.Deflated(Text)
			if got := d.Series(); got != tt.series {
				t.Errorf("Series() = %d, want %d", got, tt.series)
			}
			if n := renders.Load(); n != 0 {
				t.Fatalf("%d renders before the detail part was read, want 0", n)
			}
			var buf bytes.Buffer
			if _, err := d.WriteTo(&buf, Text); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, buf.String()); diff != "" {
				t.Errorf("detail (-want +got):\n%s", diff)
			}
			if got := d.Size(Text); got != len(tt.want) {
				t.Errorf("Size(Text) = %d, want %d", got, len(tt.want))
			}
			if got := d.Size(OpenMetrics); got != len(d.AppendTo(nil, OpenMetrics)) {
				t.Errorf("Size(OpenMetrics) = %d, want the length of AppendTo, %d", got, len(d.AppendTo(nil, OpenMetrics)))
			}
			seg := d.Deflated(Text)
			if seg.Size != len(tt.want) || seg.CRC != crc32.ChecksumIEEE([]byte(tt.want)) {
				t.Errorf("Deflated: size %d crc %08x, want %d %08x", seg.Size, seg.CRC, len(tt.want), crc32.ChecksumIEEE([]byte(tt.want)))
			}
			n := 0
			for _, c := range d.FamilySeries() {
				n += c
			}
			if n != tt.series {
				t.Errorf("FamilySeries() counts %d samples, Series() says %d", n, tt.series)
			}
			if got := renders.Load(); got != tt.renders {
				t.Errorf("%d renders after reading the part several times, want %d", got, tt.renders)
			}
		})
	}
}

// TestDeferredDetailOutlivesTheNextPoll checks that a snapshot's deferred
// detail renders the values of its own poll after the Builder went on to
// the next one, and that concurrent first reads share one render.
func TestDeferredDetailOutlivesTheNextPoll(t *testing.T) {
	perQueue := MustNewDesc("nic_q_per_queue_total", "Per queue.", Counter, "queue").AsDetail()
	b := NewBuilder()
	vals := make([]uint64, 100) // reused by every poll, as a collector would
	var renders atomic.Int32
	poll := func(base uint64) *Snapshot {
		b.Reset()
		for i := range vals {
			vals[i] = base + uint64(i)
		}
		own := append([]uint64(nil), vals...)
		b.AddDeferred(len(own), func(b *Builder) {
			renders.Add(1)
			for i, v := range own {
				b.Add(perQueue, float64(v), fmt.Sprint(i))
			}
		})
		return b.Snapshot()
	}
	first := poll(1000)
	second := poll(2000)

	outs := make([]string, 16)
	var wg sync.WaitGroup
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 0 {
				outs[i] = first.Detail().String()
			} else {
				_ = first.Detail().Deflated(OpenMetrics)
				outs[i] = first.Detail().String()
			}
		}()
	}
	wg.Wait()
	if n := renders.Load(); n != 1 {
		t.Errorf("%d renders of the first snapshot's detail, want 1", n)
	}
	want := "# HELP nic_q_per_queue_total Per queue.\n# TYPE nic_q_per_queue_total counter\n"
	for i := range vals {
		want += fmt.Sprintf("nic_q_per_queue_total{queue=\"%d\"} %d\n", i, 1000+i)
	}
	for i, got := range outs {
		if got != want {
			t.Fatalf("reader %d: detail of the first poll differs from its values:\n%.300s", i, got)
		}
	}
	if got := second.Detail().String(); got == want {
		t.Error("the second poll's detail shows the first poll's values")
	}
}

// TestAppendFamilies checks that only the chosen families are written,
// whole and in the snapshot's order, including deferred detail ones.
func TestAppendFamilies(t *testing.T) {
	a := MustNewDesc("nic_a_total", "A.", Counter, "device")
	b := MustNewDesc("nic_b", "B.", Gauge, "device")
	c := MustNewDesc("nic_c", "C.", Gauge).AsDetail()
	bld := NewBuilder()
	bld.Add(a, 1, "eth0")
	bld.Add(b, 2, "eth0")
	bld.Add(a, 3, "eth1")
	bld.AddDeferred(1, func(bl *Builder) { bl.Add(c, 4) })
	s := bld.Snapshot()
	tests := []struct {
		name string
		part *Snapshot
		want []string
		out  string
	}{
		{"one family", s, []string{"nic_a_total"}, "# HELP nic_a_total A.\n# TYPE nic_a_total counter\nnic_a_total{device=\"eth0\"} 1\nnic_a_total{device=\"eth1\"} 3\n"},
		{"none", s, []string{"nic_zzz"}, ""},
		{"deferred detail", s.Detail(), []string{"nic_c"}, "# HELP nic_c C.\n# TYPE nic_c gauge\nnic_c 4\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.part.AppendFamilies(nil, Text, func(n string) bool {
				for _, w := range tt.want {
					if n == w {
						return true
					}
				}
				return false
			})
			if diff := cmp.Diff(tt.out, string(got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
