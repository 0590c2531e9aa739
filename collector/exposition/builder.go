package exposition

import (
	"bytes"
	"io"
	"sync/atomic"
)

// Builder collects the samples of one poll and turns them into an
// immutable Snapshot. Samples of one family may be added in any order
// relative to other families; the snapshot writes each family once, in the
// order its Desc was first used. A Builder is not safe for concurrent use.
type Builder struct {
	fams    []*family
	index   map[*Desc]*family
	series  int
	invalid int
	devices int
}

type family struct {
	desc *Desc
	body []byte
	n    int
}

// NewBuilder returns an empty Builder.
func NewBuilder() *Builder {
	return &Builder{index: make(map[*Desc]*family)}
}

// Reset empties the Builder but keeps its buffers for the next poll.
func (b *Builder) Reset() {
	for _, f := range b.fams {
		f.body = f.body[:0]
		f.n = 0
	}
	b.series, b.invalid, b.devices = 0, 0, 0
}

// Add appends one sample of family d. A sample whose label values do not
// match d's label names is skipped and counted in Invalid, never a panic.
func (b *Builder) Add(d *Desc, value float64, labelValues ...string) {
	if d == nil || len(labelValues) != len(d.labels) {
		b.invalid++
		return
	}
	f := b.index[d]
	if f == nil {
		f = &family{desc: d}
		b.index[d] = f
		b.fams = append(b.fams, f)
	}
	f.body = appendSample(f.body, d, value, labelValues)
	f.n++
	b.series++
}

// SetDevices records how many devices or files the poll found.
func (b *Builder) SetDevices(n int) { b.devices = n }

// AddDevices adds n to the number of devices or files the poll found.
func (b *Builder) AddDevices(n int) { b.devices += n }

// Series returns the number of samples added so far.
func (b *Builder) Series() int { return b.series }

// Invalid returns the number of samples skipped because they were malformed.
func (b *Builder) Invalid() int { return b.invalid }

// Snapshot copies the collected samples into an immutable Snapshot. The
// Builder may be Reset and reused afterwards.
func (b *Builder) Snapshot() *Snapshot {
	size := 0
	for _, f := range b.fams {
		size += len(f.body)
	}
	buf := make([]byte, 0, size)
	s := &Snapshot{series: b.series, devices: b.devices}
	for _, f := range b.fams {
		if f.n == 0 {
			continue
		}
		start := len(buf)
		buf = append(buf, f.body...)
		s.fams = append(s.fams, snapFamily{desc: f.desc, body: buf[start:len(buf):len(buf)], n: f.n})
		s.textSize += len(f.desc.textHead) + len(f.body)
		s.omSize += len(f.desc.omHead) + len(f.body)
	}
	return s
}

// Snapshot is the immutable result of one poll. It is safe for concurrent
// use by any number of scrapes.
type Snapshot struct {
	fams     []snapFamily
	series   int
	devices  int
	textSize int
	omSize   int
	deflated [2]atomic.Pointer[Segment] // by Format, computed on first use
}

type snapFamily struct {
	desc *Desc
	body []byte
	n    int
}

// Empty is a Snapshot without series.
var Empty = &Snapshot{}

// Series returns the number of samples in the snapshot.
func (s *Snapshot) Series() int { return s.series }

// Devices returns the number of devices or files the poll found.
func (s *Snapshot) Devices() int { return s.devices }

// Families returns the names of the metric families in the snapshot.
func (s *Snapshot) Families() []string {
	out := make([]string, len(s.fams))
	for i, f := range s.fams {
		out[i] = f.desc.name
	}
	return out
}

// Format selects an exposition format.
type Format uint8

const (
	// Text is the Prometheus text format, version 0.0.4.
	Text Format = iota
	// OpenMetrics is the OpenMetrics text format, version 1.0.0, without
	// the final "# EOF" line, which the caller writes after all snapshots.
	OpenMetrics
)

// Size returns the number of bytes WriteTo writes in format f.
func (s *Snapshot) Size(f Format) int {
	if f == OpenMetrics {
		return s.omSize
	}
	return s.textSize
}

// AppendTo appends the snapshot in format f to dst.
func (s *Snapshot) AppendTo(dst []byte, f Format) []byte {
	for _, fam := range s.fams {
		if f == OpenMetrics {
			dst = append(dst, fam.desc.omHead...)
		} else {
			dst = append(dst, fam.desc.textHead...)
		}
		dst = append(dst, fam.body...)
	}
	return dst
}

// WriteTo writes the snapshot in format f to w.
func (s *Snapshot) WriteTo(w io.Writer, f Format) (int64, error) {
	var n int64
	for _, fam := range s.fams {
		head := fam.desc.textHead
		if f == OpenMetrics {
			head = fam.desc.omHead
		}
		k, err := w.Write(head)
		n += int64(k)
		if err != nil {
			return n, err
		}
		k, err = w.Write(fam.body)
		n += int64(k)
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// String returns the snapshot in the text format; it is meant for tests
// and debugging.
func (s *Snapshot) String() string {
	var buf bytes.Buffer
	_, _ = s.WriteTo(&buf, Text)
	return buf.String()
}
