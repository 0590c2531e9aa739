package nodehealth

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// metrics returns the families a rule reads.
func (r Rule) metrics() []string {
	m := []string{r.Metric}
	if r.Than != nil {
		m = append(m, r.Than.Metric)
	}
	for _, g := range r.And {
		m = append(m, g.Metric)
	}
	return m
}

// matches reports whether the sample has every label value of the
// selector.
func (s Selector) matches(x sample) bool {
	for k, v := range s.Match {
		if x.labels[k] != v {
			return false
		}
	}
	return true
}

// partner returns the first sample of j's family that matches its
// selector and shares the labels of On with x.
func (j Join) partner(all samples, x sample) (sample, bool) {
	for _, y := range all[j.Metric] {
		if !j.matches(y) {
			continue
		}
		same := true
		for _, l := range j.On {
			if x.labels[l] != y.labels[l] {
				same = false
				break
			}
		}
		if same {
			return y, true
		}
	}
	return sample{}, false
}

func compare(op Op, v, threshold float64) bool {
	switch op {
	case OpEqual:
		return v == threshold
	case OpNotEqual:
		return v != threshold
	case OpLess:
		return v < threshold
	case OpGreater:
		return v > threshold
	}
	return false
}

// evidence is one series that shows a condition: its identity, the
// device it names and a line that says what was seen.
type evidence struct {
	key    string
	device string
	text   string
}

// riseState remembers, per counter series, its last value and when it
// last rose.
type riseState struct {
	value float64
	rose  time.Time
}

// find returns the evidence of rule r in all at now. For OpRise it
// updates rises, the state of the rule's counters; series that vanished
// are dropped from it.
func (r Rule) find(all samples, now time.Time, rises map[string]*riseState) []evidence {
	var out []evidence
	seen := make(map[string]bool)
	for _, x := range all[r.Metric] {
		if !r.matches(x) {
			continue
		}
		k := x.key(r.Metric)
		var text string
		switch {
		case r.Op == OpRise:
			seen[k] = true
			st, ok := rises[k]
			if !ok {
				// The first value is the baseline: a counter that
				// is already above zero when it is first seen rose
				// at an unknown time, as for the alert, which needs
				// the counter to move within its window.
				rises[k] = &riseState{value: x.value}
				continue
			}
			if x.value > st.value {
				st.rose = now
			}
			st.value = x.value
			if st.rose.IsZero() || now.Sub(st.rose) >= r.Window {
				continue
			}
			text = fmt.Sprintf("%s = %s, rose at %s (within %s)", k, fmtValue(x.value), st.rose.UTC().Format(time.RFC3339), r.Window)
		case r.Than != nil:
			y, ok := r.Than.partner(all, x)
			if !ok || !compare(r.Op, x.value, y.value) {
				continue
			}
			text = fmt.Sprintf("%s = %s %s %s = %s", k, fmtValue(x.value), r.Op, y.key(r.Than.Metric), fmtValue(y.value))
		default:
			if !compare(r.Op, x.value, r.Value) {
				continue
			}
			text = fmt.Sprintf("%s = %s (%s %s)", k, fmtValue(x.value), r.Op, fmtValue(r.Value))
		}
		if !r.guarded(all, x) {
			continue
		}
		out = append(out, evidence{key: k, device: deviceOf(x), text: text})
	}
	if r.Op == OpRise {
		for k := range rises {
			if !seen[k] {
				delete(rises, k)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

// guarded reports whether every guard of r holds for x.
func (r Rule) guarded(all samples, x sample) bool {
	for _, g := range r.And {
		y, ok := g.partner(all, x)
		if !ok || !compare(g.Op, y.value, g.Value) {
			return false
		}
	}
	return true
}

// deviceOf names the device of a series: its device label with the port
// or lane when it has one.
func deviceOf(x sample) string {
	d := x.labels["device"]
	if p := x.labels["port"]; p != "" {
		d += " port " + p
	}
	if l := x.labels["lane"]; l != "" {
		d += " lane " + l
	}
	return d
}

func fmtValue(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// joinDevices lists devices without repeats, in order.
func joinDevices(ev []evidence) string {
	var ds []string
	seen := make(map[string]bool)
	for _, e := range ev {
		if !seen[e.device] {
			seen[e.device] = true
			ds = append(ds, e.device)
		}
	}
	return strings.Join(ds, ", ")
}
