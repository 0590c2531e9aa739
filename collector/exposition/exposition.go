// Package exposition renders metric families into the Prometheus text
// format (version 0.0.4) and the OpenMetrics text format (version 1.0.0)
// once, when a collector publishes a snapshot, so that a scrape only copies
// bytes that were prepared earlier.
package exposition

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/common/model"
)

// Type is the type of a metric family.
type Type uint8

const (
	// Gauge is a value that can go up and down.
	Gauge Type = iota
	// Counter is a value that only goes up, except when its source resets.
	Counter
)

// String returns the name of the type as the exposition formats spell it.
func (t Type) String() string {
	if t == Counter {
		return "counter"
	}
	return "gauge"
}

// Desc describes one metric family: its name, help text, type and label
// names. A Desc is immutable and safe for concurrent use; collectors create
// theirs once and reuse them in every poll.
type Desc struct {
	name   string
	help   string
	typ    Type
	labels []string
	// detail marks a family served only at /metrics/detail: see AsDetail.
	detail bool

	textHead []byte // "# HELP ...\n# TYPE ...\n" in the text format
	omHead   []byte // the same in OpenMetrics (counter names without _total)
	prefix   []byte // the metric name as written in sample lines
}

// NewDesc returns a Desc after checking the metric and label names. Counter
// names must end in "_total". It is the constructor for names that are
// computed at run time, for example from a driver's statistic names.
func NewDesc(name, help string, typ Type, labels ...string) (*Desc, error) {
	if !ValidMetricName(name) {
		return nil, fmt.Errorf("invalid metric name %q", name)
	}
	if typ == Counter && !strings.HasSuffix(name, "_total") {
		return nil, fmt.Errorf("counter %q must end in _total", name)
	}
	seen := make(map[string]bool, len(labels))
	for _, l := range labels {
		if !ValidLabelName(l) || strings.HasPrefix(l, "__") {
			return nil, fmt.Errorf("metric %q: invalid label name %q", name, l)
		}
		if seen[l] {
			return nil, fmt.Errorf("metric %q: duplicate label name %q", name, l)
		}
		seen[l] = true
	}
	d := &Desc{name: name, help: help, typ: typ, labels: append([]string(nil), labels...)}
	d.textHead = fmt.Appendf(nil, "# HELP %s %s\n# TYPE %s %s\n", name, escapeHelp(help, false), name, typ)
	omName := name
	if typ == Counter {
		omName = strings.TrimSuffix(name, "_total")
	}
	d.omHead = fmt.Appendf(nil, "# HELP %s %s\n# TYPE %s %s\n", omName, escapeHelp(help, true), omName, typ)
	d.prefix = []byte(name)
	return d, nil
}

// MustNewDesc is NewDesc for names fixed in the source code; it panics on
// an invalid name, which is a programming error caught by any test that
// constructs the collector.
func MustNewDesc(name, help string, typ Type, labels ...string) *Desc {
	d, err := NewDesc(name, help, typ, labels...)
	if err != nil {
		panic(err)
	}
	return d
}

// AsDetail returns a copy of d that marks a detail family: its samples go
// to the detail part of a Snapshot, which the exporter serves at
// /metrics/detail instead of /metrics. Detail families are the
// high-cardinality ones (per queue, per channel, per socket) that an
// engineer reads during an incident, while the default scrape carries one
// series per interface and statistic. The copy is a distinct family for a
// Builder, so a collector creates it once, like any Desc.
func (d *Desc) AsDetail() *Desc {
	c := *d
	c.detail = true
	return &c
}

// IsDetail reports whether d is a detail family.
func (d *Desc) IsDetail() bool { return d.detail }

// Name returns the metric family name.
func (d *Desc) Name() string { return d.name }

// Help returns the help text.
func (d *Desc) Help() string { return d.help }

// Type returns the family type.
func (d *Desc) Type() Type { return d.typ }

// Labels returns a copy of the label names.
func (d *Desc) Labels() []string { return append([]string(nil), d.labels...) }

// ValidMetricName reports whether s is a legal metric name in both
// formats: the legacy character set [a-zA-Z_:][a-zA-Z0-9_:]*, which every
// Prometheus version and the text format 0.0.4 accept unquoted.
func ValidMetricName(s string) bool {
	return model.LegacyValidation.IsValidMetricName(s)
}

// ValidLabelName reports whether s is a legal label name in the legacy
// character set [a-zA-Z_][a-zA-Z0-9_]*.
func ValidLabelName(s string) bool {
	return model.LegacyValidation.IsValidLabelName(s)
}

func escapeHelp(s string, quotes bool) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '"' && quotes:
			b.WriteString(`\"`)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// ErrLabelCount is returned when a sample has a different number of label
// values than its Desc has label names.
var ErrLabelCount = errors.New("label value count does not match label names")

// appendSample appends one sample line. Label values are escaped; invalid
// UTF-8 is replaced so the output always parses.
func appendSample(dst []byte, d *Desc, value float64, values []string) []byte {
	dst = append(dst, d.prefix...)
	if len(d.labels) > 0 {
		dst = append(dst, '{')
		for i, l := range d.labels {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, l...)
			dst = append(dst, '=', '"')
			dst = appendLabelValue(dst, values[i])
			dst = append(dst, '"')
		}
		dst = append(dst, '}')
	}
	dst = append(dst, ' ')
	dst = AppendFloat(dst, value)
	return append(dst, '\n')
}

func appendLabelValue(dst []byte, v string) []byte {
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\':
			dst = append(dst, '\\', '\\')
		case c == '"':
			dst = append(dst, '\\', '"')
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c < 0x80:
			dst = append(dst, c)
		default:
			// Copy a whole rune, replacing invalid UTF-8.
			r, size := utf8.DecodeRuneInString(v[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, "\uFFFD"...)
			} else {
				dst = append(dst, v[i:i+size]...)
			}
			i += size - 1
		}
	}
	return dst
}

// AppendFloat appends v in the form both exposition formats accept.
func AppendFloat(dst []byte, v float64) []byte {
	switch {
	case math.IsNaN(v):
		return append(dst, "NaN"...)
	case math.IsInf(v, 1):
		return append(dst, "+Inf"...)
	case math.IsInf(v, -1):
		return append(dst, "-Inf"...)
	}
	if v == math.Trunc(v) && math.Abs(v) <= 1<<53 {
		return strconv.AppendInt(dst, int64(v), 10)
	}
	return strconv.AppendFloat(dst, v, 'g', -1, 64)
}
