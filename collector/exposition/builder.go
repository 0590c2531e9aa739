package exposition

import (
	"bytes"
	"io"
	"sync"
	"sync/atomic"
)

// Builder collects the samples of one poll and turns them into an
// immutable Snapshot. Samples of one family may be added in any order
// relative to other families; the snapshot writes each family once, in the
// order its Desc was first used. A Builder is not safe for concurrent use.
//
// Snapshot hands the rendered families to the snapshot without copying
// them; the next Reset gives the Builder fresh buffers sized like the last
// poll's, so a poll allocates its text once and the process holds one
// copy of each collector's series between polls, not two.
type Builder struct {
	fams    []*family
	index   map[*Desc]*family
	series  int
	invalid int
	devices int
	// shared is set when a Snapshot refers to the family buffers, which
	// must then never be written again below their length.
	shared bool
	// deferred are the detail renders of this poll (AddDeferred), and
	// deferredSeries the number of samples they declared.
	deferred       []func(*Builder)
	deferredSeries int
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

// Reset empties the Builder for the next poll. Its buffers are reused
// unless a Snapshot refers to them; then each family gets a new buffer as
// large as its last content, so the next poll does not grow it again.
func (b *Builder) Reset() {
	for _, f := range b.fams {
		if b.shared {
			f.body = make([]byte, 0, len(f.body)+len(f.body)/16)
		} else {
			f.body = f.body[:0]
		}
		f.n = 0
	}
	b.series, b.invalid, b.devices = 0, 0, 0
	b.shared = false
	// The last snapshot keeps the old slice; start a new one.
	b.deferred, b.deferredSeries = nil, 0
}

// AddDeferred adds series detail samples that render adds to a Builder of
// its own later: when the snapshot's detail part is first written, which
// is on the first /metrics/detail scrape after the poll, or never. A poll
// then pays for keeping what render needs (for example a copy of the
// values it read), not for rendering text nobody may ask for. render must
// add exactly series samples, all of detail families, must not do I/O,
// and must only read data that nothing changes after the poll: it may run
// at any time after Snapshot, in another goroutine, at most once.
func (b *Builder) AddDeferred(series int, render func(*Builder)) {
	if series <= 0 {
		return
	}
	b.deferred = append(b.deferred, render)
	b.deferredSeries += series
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

// Snapshot returns the collected samples as an immutable Snapshot: the
// samples of detail families (see Desc.AsDetail) go to its detail part,
// the others to the snapshot itself. The
// snapshot shares the Builder's buffers (capped at their current length,
// so later Adds never change what it holds); Reset gives the Builder new
// ones. The Builder may be Reset and reused afterwards.
func (b *Builder) Snapshot() *Snapshot {
	s := &Snapshot{devices: b.devices}
	for _, f := range b.fams {
		if f.n == 0 {
			continue
		}
		part := s
		if f.desc.detail {
			if s.detail == nil {
				s.detail = &Snapshot{devices: b.devices}
			}
			part = s.detail
		}
		part.fams = append(part.fams, snapFamily{desc: f.desc, body: f.body[:len(f.body):len(f.body)], n: f.n})
		part.series += f.n
		part.textSize += len(f.desc.textHead) + len(f.body)
		part.omSize += len(f.desc.omHead) + len(f.body)
	}
	if len(b.deferred) > 0 {
		if s.detail == nil {
			s.detail = &Snapshot{devices: b.devices}
		}
		s.detail.pending = b.deferred[:len(b.deferred):len(b.deferred)]
		s.detail.series += b.deferredSeries
	}
	b.shared = true
	return s
}

// Snapshot is the immutable result of one poll. It is safe for concurrent
// use by any number of scrapes.
//
// A snapshot has two parts. The snapshot itself is the default part,
// served at /metrics; Detail returns the detail part, served at
// /metrics/detail. Each part caches its own compressed segments, so the
// detail part is compressed only when a detail scrape first asks for it.
type Snapshot struct {
	fams     []snapFamily
	detail   *Snapshot // nil when the poll added no detail samples
	series   int
	devices  int
	textSize int
	omSize   int
	deflated [2]atomic.Pointer[Segment] // by Format, computed on first use
	// deflateOnce makes concurrent first uses share one compression.
	deflateOnce [2]sync.Once
	// pending are the deferred renders of a detail part (see
	// Builder.AddDeferred), fixed when the snapshot is made; renderOnce
	// runs them on the first use of the part's bytes and merges their
	// families into fams. series already counts their samples.
	pending    []func(*Builder)
	renderOnce sync.Once
}

type snapFamily struct {
	desc *Desc
	body []byte
	n    int
}

// Empty is a Snapshot without series.
var Empty = &Snapshot{}

// Series returns the number of samples in the snapshot's default part.
func (s *Snapshot) Series() int { return s.series }

// Detail returns the detail part of the snapshot: the samples of its
// detail families, from the same poll. It is never nil; a snapshot without
// detail samples returns Empty. The detail part of a detail part is Empty.
func (s *Snapshot) Detail() *Snapshot {
	if s.detail == nil {
		return Empty
	}
	return s.detail
}

// Devices returns the number of devices or files the poll found.
func (s *Snapshot) Devices() int { return s.devices }

// materialize runs the deferred renders of a detail part once and merges
// their families into it; every method that reads the families calls it
// first. Concurrent first calls wait for the one render. A snapshot
// without deferred renders returns at once.
func (s *Snapshot) materialize() {
	if len(s.pending) == 0 {
		return
	}
	s.renderOnce.Do(func() {
		b := NewBuilder()
		for _, render := range s.pending {
			render(b)
		}
		at := make(map[*Desc]int, len(s.fams))
		for i, f := range s.fams {
			at[f.desc] = i
		}
		for _, f := range b.fams {
			if f.n == 0 {
				continue
			}
			if i, ok := at[f.desc]; ok {
				// The poll added samples of this family directly too:
				// one family, one header.
				old := s.fams[i]
				body := make([]byte, 0, len(old.body)+len(f.body))
				s.fams[i] = snapFamily{desc: f.desc, body: append(append(body, old.body...), f.body...), n: old.n + f.n}
			} else {
				s.fams = append(s.fams, snapFamily{desc: f.desc, body: f.body, n: f.n})
				s.textSize += len(f.desc.textHead)
				s.omSize += len(f.desc.omHead)
			}
			s.textSize += len(f.body)
			s.omSize += len(f.body)
		}
	})
}

// Families returns the names of the metric families in the snapshot.
func (s *Snapshot) Families() []string {
	s.materialize()
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
	s.materialize()
	if f == OpenMetrics {
		return s.omSize
	}
	return s.textSize
}

// AppendTo appends the snapshot in format f to dst.
func (s *Snapshot) AppendTo(dst []byte, f Format) []byte {
	s.materialize()
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

// AppendFamilies appends, in format f, only the families of the
// snapshot's part whose names want accepts. A reader that needs a few
// families of a large snapshot (the node verdict) copies and parses those
// instead of every series.
func (s *Snapshot) AppendFamilies(dst []byte, f Format, want func(name string) bool) []byte {
	s.materialize()
	for _, fam := range s.fams {
		if !want(fam.desc.name) {
			continue
		}
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
	s.materialize()
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

// String returns the snapshot's default part in the text format (the
// detail part is s.Detail().String()); it is meant for tests and
// debugging.
func (s *Snapshot) String() string {
	var buf bytes.Buffer
	_, _ = s.WriteTo(&buf, Text)
	return buf.String()
}

// FamilySeries returns the number of samples of each family in the
// snapshot's part, by family name.
func (s *Snapshot) FamilySeries() map[string]int {
	s.materialize()
	out := make(map[string]int, len(s.fams))
	for _, f := range s.fams {
		out[f.desc.name] = f.n
	}
	return out
}
