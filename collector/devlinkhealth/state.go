package devlinkhealth

import (
	"strconv"

	"github.com/nic-exporter/nic_exporter/devlink"
)

// devlinkState is what the collector knows of the kernel's devlink
// objects: the last read applied, and the health events since.
type devlinkState struct {
	polled    bool
	devices   []devlink.Handle
	netdevs   map[portKey]string
	infos     map[devlink.Handle]devlink.Info
	reporters map[reporterKey]*reporterState
	events    map[eventKey]uint64
	captures  map[reporterKey]uint64
	// gen counts the health events applied to reporters; a read records
	// it before it starts, so apply knows which reporters an event
	// updated while the read was under way.
	gen uint64
	// reads counts the reads started (polls and refreshes after events,
	// which run concurrently); applied is the number of the latest one
	// applied, so an older read never replaces a newer one.
	reads, applied uint64
}

// portKey identifies a devlink port by its device and index.
type portKey struct {
	h     devlink.Handle
	index uint32
}

// reporterKey identifies a health reporter: its device, its port (for
// port reporters) and its name.
type reporterKey struct {
	h    devlink.Handle
	port string // decimal index, "" for device reporters
	name string
}

// eventKey counts the health events of a reporter by the state they
// announce.
type eventKey struct {
	r     reporterKey
	state string
}

// reporterState is the latest view of one health reporter.
type reporterState struct {
	r devlink.HealthReporter
	// baseline is the error count evidence was last captured for (or
	// that was found at the first sighting).
	baseline uint64
	// eventGen is the devlinkState.gen of the health event that set r,
	// 0 if a read set it.
	eventGen uint64
}

// readStamp says when a read started: its number and the health event
// generation.
type readStamp struct{ seq, gen uint64 }

// startRead numbers a read that is about to start; apply takes the stamp.
func (d *Collector) startRead() readStamp {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.state.reads++
	return readStamp{seq: d.state.reads, gen: d.state.gen}
}

// apply replaces the state with what a read stamped st found and returns
// the reporters whose error count rose (or that are in error when first
// seen). A read that started before the last applied one is dropped. A
// reporter that a health event updated after the read started keeps the
// event's attributes unless the read's counts are newer: the read may
// predate the event.
func (d *Collector) apply(r *devlinkRead, st readStamp) []pendingCapture {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := &d.state
	if st.seq < s.applied {
		return nil
	}
	s.applied = st.seq
	s.polled = true
	s.devices = r.devices
	s.infos = r.infos
	s.netdevs = map[portKey]string{}
	for _, p := range r.ports {
		if p.Netdev != "" {
			s.netdevs[portKey{p.Handle, p.Index}] = p.Netdev
		}
	}
	out, seen := s.observeRead(r.reporters, st.gen)
	s.dropUnseen(seen)
	return out
}

// observeRead records the reporters a read found, except those that a
// health event after generation gen updated with counts the read's do not
// pass, and returns the captures due and the keys of every reporter read.
func (s *devlinkState) observeRead(reps []devlink.HealthReporter, gen uint64) ([]pendingCapture, map[reporterKey]bool) {
	var out []pendingCapture
	seen := make(map[reporterKey]bool, len(reps))
	for _, rep := range reps {
		k := keyOf(rep.ReporterID)
		seen[k] = true
		if prev, ok := s.reporters[k]; ok && prev.eventGen > gen && !olderCounts(prev.r, rep) {
			continue
		}
		if c, ok := s.observe(k, rep); ok {
			out = append(out, c)
		}
	}
	return out, seen
}

// dropUnseen forgets the reporters a read did not find, with their event
// and capture counts.
func (s *devlinkState) dropUnseen(seen map[reporterKey]bool) {
	for k := range s.reporters {
		if !seen[k] {
			delete(s.reporters, k)
		}
	}
	for k := range s.events {
		if !seen[k.r] {
			delete(s.events, k)
		}
	}
	for k := range s.captures {
		if !seen[k] {
			delete(s.captures, k)
		}
	}
}

// observe records a reporter's latest attributes and says whether
// evidence should be captured: its error count rose since the last
// capture, or, without an error count, it turned to error.
func (s *devlinkState) observe(k reporterKey, r devlink.HealthReporter) (pendingCapture, bool) {
	inError := r.State != nil && *r.State == devlink.HealthStateError
	prev, known := s.reporters[k]
	st := &reporterState{r: r}
	capture := false
	switch {
	case r.ErrorCount == nil:
		wasError := known && prev.r.State != nil && *prev.r.State == devlink.HealthStateError
		capture = inError && !wasError
	case !known:
		st.baseline = *r.ErrorCount
		capture = inError
	default:
		st.baseline = prev.baseline
		if prev.r.ErrorCount != nil && *r.ErrorCount < *prev.r.ErrorCount {
			// The count went down: the reporter was destroyed and
			// created again (devlink reload), its count restarted.
			st.baseline = 0
		}
		if *r.ErrorCount > st.baseline {
			st.baseline = *r.ErrorCount
			capture = true
		}
	}
	s.reporters[k] = st
	return pendingCapture{key: k, r: r}, capture
}

// olderCounts says whether a's error and recovery counts are both known
// and not above b's, and one of them is below: a is an older view of the
// same reporter than b. Every state change moves one of the counts.
func olderCounts(a, b devlink.HealthReporter) bool {
	if a.ErrorCount == nil || a.RecoverCount == nil || b.ErrorCount == nil || b.RecoverCount == nil {
		return false
	}
	ae, ar, be, br := *a.ErrorCount, *a.RecoverCount, *b.ErrorCount, *b.RecoverCount
	return ae <= be && ar <= br && (ae < be || ar < br)
}

// keyOf returns the state key of a reporter.
func keyOf(id devlink.ReporterID) reporterKey {
	k := reporterKey{h: id.Handle, name: id.Name}
	if id.Port != nil {
		k.port = strconv.FormatUint(uint64(*id.Port), 10)
	}
	return k
}

// less orders reporters by device, then port index (numerically), then
// name, the order of the rendered series.
func (a reporterKey) less(b reporterKey) bool {
	if a.h != b.h {
		return a.h.String() < b.h.String()
	}
	if a.port != b.port {
		if len(a.port) != len(b.port) {
			return len(a.port) < len(b.port)
		}
		return a.port < b.port
	}
	return a.name < b.name
}

// netdev returns the network interface of a port reporter's port, or ""
// for device reporters and ports without one.
func (s *devlinkState) netdev(id devlink.ReporterID) string {
	if id.Port == nil {
		return ""
	}
	return s.netdevs[portKey{id.Handle, *id.Port}]
}

// forget drops everything of a removed device from the state.
func (d *Collector) forget(h devlink.Handle) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := &d.state
	devices := s.devices[:0:0]
	for _, dh := range s.devices {
		if dh != h {
			devices = append(devices, dh)
		}
	}
	s.devices = devices
	delete(s.infos, h)
	for k := range s.netdevs {
		if k.h == h {
			delete(s.netdevs, k)
		}
	}
	for k := range s.reporters {
		if k.h == h {
			delete(s.reporters, k)
		}
	}
	for k := range s.events {
		if k.r.h == h {
			delete(s.events, k)
		}
	}
	for k := range s.captures {
		if k.h == h {
			delete(s.captures, k)
		}
	}
}
