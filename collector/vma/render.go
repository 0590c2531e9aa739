package vma

import (
	"net/netip"
	"strconv"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
)

// What renderVMA and renderXLIO share: the two libraries publish the same
// kinds of objects (sockets, multicast groups, poll/select/epoll users)
// with the same meaning, under their own metric families.

// procLabels are the label values every series of one process starts
// with: pid, comm and the library's version.
type procLabels []string

func newProcLabels(pid int, comm, version string) procLabels {
	return procLabels{strconv.Itoa(pid), comm, version}
}

// with returns the process's label values followed by extra, in a new
// slice.
func (b procLabels) with(extra ...string) []string {
	return append(append(make([]string, 0, len(b)+len(extra)), b...), extra...)
}

// sockClass is a socket's protocol and whether it is offloaded.
type sockClass struct{ proto, offloaded string }

// emitSocketClasses adds the count of sockets per protocol and offload
// state: every tcp and udp class, "other" only when present.
func emitSocketClasses(p *collector.Poll, d *exposition.Desc, b procLabels, classes map[sockClass]int) {
	for _, proto := range []string{"tcp", "udp", "other"} {
		for _, off := range []string{"true", "false"} {
			if n, ok := classes[sockClass{proto, off}]; ok || proto != "other" {
				p.Add(d, float64(n), b.with(proto, off)...)
			}
		}
	}
}

// mcGroup is one multicast group entry of either library (vmastats and
// xliostats MCGroup convert to it).
type mcGroup struct {
	Index   int
	Sockets uint32
	Group   netip.Addr
}

// emitGroups adds the socket count of each multicast group address,
// once per address (an address listed twice keeps its first entry), and
// returns the address of each entry index, for the sockets' membership.
func emitGroups(p *collector.Poll, d *exposition.Desc, b procLabels, groups []mcGroup) map[int]string {
	names := make(map[int]string, len(groups))
	seen := make(map[string]bool, len(groups))
	for _, g := range groups {
		name := g.Group.String()
		names[g.Index] = name
		if seen[name] {
			continue
		}
		seen[name] = true
		p.Add(d, float64(g.Sockets), b.with(name)...)
	}
	return names
}

// iomuxFamilies are a library's poll/select/epoll families.
type iomuxFamilies struct {
	polls, timeouts, errors, ready *exposition.Desc
}

// emitIomux adds the counters of one poll, select or epoll user (c: hit,
// miss, timeouts, errors, rx ready offloaded, rx ready os), labelled with
// kind and, for epoll, its epfd.
func emitIomux(p *collector.Poll, f iomuxFamilies, b procLabels, kind, epfd string, c [6]uint64) {
	p.Add(f.polls, float64(c[0]), b.with(kind, epfd, "hit")...)
	p.Add(f.polls, float64(c[1]), b.with(kind, epfd, "miss")...)
	p.Add(f.timeouts, float64(c[2]), b.with(kind, epfd)...)
	p.Add(f.errors, float64(c[3]), b.with(kind, epfd)...)
	p.Add(f.ready, float64(c[4]), b.with(kind, epfd, "offload")...)
	p.Add(f.ready, float64(c[5]), b.with(kind, epfd, "os")...)
}

// epfdLabel is the epfd label of an iomux user: its fd for epoll, empty
// for poll and select.
func epfdLabel(kind string, fd int32) string {
	if kind == "epoll" {
		return strconv.Itoa(int(fd))
	}
	return ""
}

// firstPerEpfd returns the indexes of entries to export: epoll entries are
// labelled by epfd, not by index, and an entry left enabled for an fd
// closed behind the library's back shares its epfd with the new one; the
// first (lowest index) is exported, a second would be a duplicate series.
func firstPerEpfd(fds []int32) []int {
	seen := make(map[int32]bool, len(fds))
	var out []int
	for i, fd := range fds {
		if seen[fd] {
			continue
		}
		seen[fd] = true
		out = append(out, i)
	}
	return out
}

// fdID is the label values that name a socket's series: fd, protocol,
// local and remote address. A TCP socket that the library keeps after
// close() holds its slot and old fd while a new socket reuses the fd; the
// lower slot is exported when both have the same labels.
type fdID [4]string

// fdLabels returns the label values of a socket's series, or false for a
// socket whose labels an earlier one of the poll had.
func fdLabels(seen map[fdID]bool, b procLabels, id fdID) ([]string, bool) {
	if seen[id] {
		return nil, false
	}
	seen[id] = true
	return b.with(id[:]...), true
}

// withLast returns labels followed by extra, in a new slice, leaving
// labels' backing array alone.
func withLast(labels []string, extra ...string) []string {
	return append(labels[:len(labels):len(labels)], extra...)
}
