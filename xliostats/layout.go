package xliostats

import (
	"bufio"
	"embed"
	"fmt"
	"io"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// The offset tables of every libxlio header, computed from each tag's own
// src/core/util/xlio_stats.h (layouts/README.md names the source and the
// tools). The decoder reads every field through them, so a layout is
// described once, by the facts, rather than in hand-copied constants.
//
//go:embed layouts/*/layout-*.txt
var layoutFS embed.FS

// row is one line of an offset table: a member of a struct at an offset.
type row struct {
	off, size int
	typ       string
	name      string
	// count and stride are set for arrays of blocks ("T[16] stride=104").
	count, stride int
	elem          string
}

// section is one "## name (sizeof = N)" table, or an enum.
type section struct {
	size int
	rows []row
	enum map[int64]string
}

var arrayType = regexp.MustCompile(`^(\w+)\[(\d+)\] stride=(\d+)$`)

// parseTable parses one layout-*.txt file.
func parseTable(text string) (map[string]*section, error) {
	secs := map[string]*section{}
	var cur *section
	sc := bufio.NewScanner(strings.NewReader(text))
	for ln := 1; sc.Scan(); ln++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "offset "):
			continue
		case strings.HasPrefix(line, "## "):
			cur = nil
			head := strings.TrimPrefix(line, "## ")
			name, rest, ok := strings.Cut(head, "  (")
			if !ok {
				continue // "## T: not found"
			}
			cur = &section{}
			secs[name] = cur
			if strings.HasPrefix(rest, "enum") {
				cur.enum = map[int64]string{}
			}
			i := strings.Index(rest, "sizeof = ")
			if i < 0 {
				return nil, fmt.Errorf("line %d: no sizeof in %q", ln, line)
			}
			n, err := strconv.Atoi(strings.TrimSuffix(rest[i+len("sizeof = "):], ")"))
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", ln, err)
			}
			cur.size = n
		case cur == nil:
			return nil, fmt.Errorf("line %d: %q outside a section", ln, line)
		case cur.enum != nil:
			for _, item := range strings.Split(line, ", ") {
				k, v, ok := strings.Cut(item, "=")
				n, err := strconv.ParseInt(v, 10, 64)
				if !ok || err != nil {
					return nil, fmt.Errorf("line %d: enum item %q", ln, item)
				}
				if _, dup := cur.enum[n]; !dup {
					cur.enum[n] = k
				}
			}
		default:
			f := strings.Fields(line)
			if len(f) < 4 {
				return nil, fmt.Errorf("line %d: %q", ln, line)
			}
			off, err1 := strconv.Atoi(f[0])
			size, err2 := strconv.Atoi(f[1])
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("line %d: %q", ln, line)
			}
			r := row{off: off, size: size, typ: strings.Join(f[2:len(f)-1], " "), name: f[len(f)-1]}
			if m := arrayType.FindStringSubmatch(r.typ); m != nil {
				r.elem = m[1]
				r.count, _ = strconv.Atoi(m[2])
				r.stride, _ = strconv.Atoi(m[3])
			}
			cur.rows = append(cur.rows, r)
		}
	}
	return secs, sc.Err()
}

// field is one scalar member of a block, read by Values.
type field struct {
	name   string
	off    int
	size   int
	signed bool
}

// blockKind is the layout of one array of blocks in the file.
type blockKind struct {
	base, count, stride int
	// enabled is the offset of the block's b_enabled flag (or an epoll
	// entry's enabled), -1 if the block has none.
	enabled int
	fields  []field
	index   map[string]int // name -> position in fields
	// members are all members of the block, scalar or not, by FieldName
	// (b_enabled and enabled included): for encoders, see Layout.Member.
	members map[string]field
}

// Layout is the decoded form of one offset table: one libxlio header
// blob built with or without the UTLS switch.
type Layout struct {
	// Name is the first tag that carries this header blob, such as
	// "3.21.2"; the tables are named after it.
	Name string
	// UTLS reports whether the table is of a build with DEFINED_UTLS.
	UTLS bool
	// Size is sizeof(sh_mem_t); SocketStride is
	// sizeof(socket_instance_block_t). A file with n socket slots has
	// Size + n*SocketStride bytes (sh_mem_t holds one block already).
	Size, SocketStride int

	header                          map[string]field // header fields, by name, at file offsets
	cq, ring, bpool, global, entCtx blockKind
	poll, sel                       blockKind // one block each
	epoll, mc, socket               blockKind
	// ringTypes names the values of ring_type_t; nil from 3.60 (no n_type).
	ringTypes map[int64]string
	// ringLogic names the values of ring_logic_t.
	ringLogic map[int64]string
	extra     socketExtra
}

// ProtocolOffset returns the offset of stats_protocol_ver.
func (l *Layout) ProtocolOffset() int { return l.header["stats_protocol_ver"].off }

// ReaderCounterOffset returns the offset of reader_counter, the one field
// a reader writes.
func (l *Layout) ReaderCounterOffset() int { return l.header["reader_counter"].off }

// MaxSocketsOffset returns the offset of max_skt_inst_num.
func (l *Layout) MaxSocketsOffset() int { return l.header["max_skt_inst_num"].off }

// HasSocketField reports whether the socket block of this layout has the
// scalar member name (see FieldName).
func (l *Layout) HasSocketField(name string) bool {
	_, ok := l.socket.index[name]
	return ok
}

// Member returns the offset in the file and the size of one member of
// element index of a block array, for encoders such as xliostatstest.
// array is the member path of the array in sh_mem_t ("cq_inst_arr",
// "ring_inst_arr", "bpool_inst_arr", "global_inst_arr",
// "ent_ctx_inst_arr", "iomux.poll", "iomux.select", "iomux.epoll",
// "mc_info.mc_grp_tbl", "skt_inst_arr"), or "" for a header field by its
// path ("reader_counter", "ver_info.xlio_lib_maj", "max_skt_inst_num");
// name is as FieldName gives it, or "b_enabled"/"enabled".
func (l *Layout) Member(array string, index int, name string) (off, size int, ok bool) {
	if array == "" {
		f, ok := l.header[name]
		return f.off, f.size, ok
	}
	k := map[string]*blockKind{
		"cq_inst_arr": &l.cq, "ring_inst_arr": &l.ring, "bpool_inst_arr": &l.bpool, "global_inst_arr": &l.global,
		"ent_ctx_inst_arr": &l.entCtx, "iomux.poll": &l.poll, "iomux.select": &l.sel, "iomux.epoll": &l.epoll,
		"mc_info.mc_grp_tbl": &l.mc, "skt_inst_arr": &l.socket,
	}[array]
	if k == nil || k.base < 0 || index < 0 || (index >= k.count && array != "skt_inst_arr") {
		return 0, 0, false
	}
	f, ok := k.members[name]
	if !ok {
		return 0, 0, false
	}
	return k.base + index*k.stride + f.off, f.size, true
}

// LookupLayout returns the offset table of a known protocol string in
// one build variant.
func LookupLayout(md5 string, utls bool) (*Layout, Version, bool) {
	v, ok := LookupVersion(md5)
	if !ok || v.Layout == "" {
		return nil, Version{}, false
	}
	pair, err := layoutPair(v.Layout)
	if err != nil {
		return nil, Version{}, false
	}
	if utls {
		return pair[1], v, true
	}
	return pair[0], v, true
}

// FileSize returns the size of a file with n socket slots.
func (l *Layout) FileSize(n int) int64 { return int64(l.Size) + int64(n)*int64(l.SocketStride) }

// signedType reports whether a C type of the tables is signed.
func signedType(t string) bool {
	switch t {
	case "int", "pid_t", "int64_t", "int32_t", "atomic<int>", "vlog_levels_t", "dump_type_t", "ring_logic_t", "ring_type_t":
		return true
	}
	return false
}

// scalar reports whether a member of type t and size n is read as a
// number: integers, bools, enums and pointers of 1, 2, 4 or 8 bytes.
func scalar(t string, n int) bool {
	if n != 1 && n != 2 && n != 4 && n != 8 {
		return false
	}
	return !strings.ContainsAny(t, "[") && t != "union" && t != "ip_address" && !strings.HasPrefix(t, "bitset")
}

// fieldPrefixes are the struct member paths stripped from field names so
// that one counter has one name in every layout: "ring_stats.(anon).
// simple.n_rx_interrupt_requests" (before 3.60) and "ring_stats.
// n_rx_interrupt_requests" (from 3.60) are both "n_rx_interrupt_requests".
// Sub-structs that are not counters of the block itself keep their name
// ("tap.", "tls_counters.", "strq_counters.", "listen_counters.").
var fieldPrefixes = []string{"cq_stats.", "ring_stats.", "(anon).", "simple.", "bpool_stats.", "global_stats.", "entity_ctx_stats.", "skt_stats.", "counters.", "stats."}

// FieldName returns the name Values uses for a member path of a block.
func FieldName(member string) string {
	for _, p := range fieldPrefixes {
		member = strings.TrimPrefix(member, p)
	}
	return member
}

func compileBlock(secs map[string]*section, r row) (blockKind, error) {
	k := blockKind{base: r.off, count: r.count, stride: r.stride, enabled: -1, index: map[string]int{}, members: map[string]field{}}
	el := secs[r.elem]
	if el == nil {
		return k, fmt.Errorf("%s: no table for %s", r.name, r.elem)
	}
	if el.size != r.stride {
		return k, fmt.Errorf("%s: stride %d, but sizeof(%s) = %d", r.name, r.stride, r.elem, el.size)
	}
	for _, m := range el.rows {
		if m.off+m.size > el.size {
			return k, fmt.Errorf("%s.%s: beyond the block", r.elem, m.name)
		}
		if _, dup := k.members[FieldName(m.name)]; !dup {
			k.members[FieldName(m.name)] = field{name: m.name, off: m.off, size: m.size}
		}
		if m.name == "b_enabled" || m.name == "enabled" {
			k.enabled = m.off
			continue
		}
		if !scalar(m.typ, m.size) {
			continue
		}
		name := FieldName(m.name)
		if _, dup := k.index[name]; dup {
			return k, fmt.Errorf("%s: two members are named %s", r.elem, name)
		}
		k.index[name] = len(k.fields)
		k.fields = append(k.fields, field{name: name, off: m.off, size: m.size, signed: signedType(m.typ)})
	}
	return k, nil
}

// member returns the offset of a non-scalar member of a block (an
// address, the multicast bitmap), or -1.
func member(secs map[string]*section, elem, name string) int {
	if el := secs[elem]; el != nil {
		for _, m := range el.rows {
			if m.name == name {
				return m.off
			}
		}
	}
	return -1
}

// compileLayout builds a Layout from the tables of one file.
func compileLayout(name string, utls bool, secs map[string]*section) (*Layout, error) {
	top := secs["sh_mem_t"]
	if top == nil {
		return nil, fmt.Errorf("no sh_mem_t table")
	}
	l := &Layout{Name: name, UTLS: utls, Size: top.size, header: map[string]field{}}
	blocks := map[string]*blockKind{
		"cq_inst_arr": &l.cq, "ring_inst_arr": &l.ring, "bpool_inst_arr": &l.bpool, "global_inst_arr": &l.global,
		"ent_ctx_inst_arr": &l.entCtx, "iomux.epoll": &l.epoll, "mc_info.mc_grp_tbl": &l.mc, "skt_inst_arr": &l.socket,
	}
	for _, b := range blocks {
		b.base, b.enabled = -1, -1
	}
	l.poll = blockKind{base: -1, enabled: -1, index: map[string]int{}, members: map[string]field{}}
	l.sel = blockKind{base: -1, enabled: -1, index: map[string]int{}, members: map[string]field{}}
	for _, r := range top.rows {
		if r.off+r.size > top.size {
			return nil, fmt.Errorf("%s: beyond sh_mem_t", r.name)
		}
		if b, ok := blocks[r.name]; ok {
			if r.count == 0 {
				return nil, fmt.Errorf("%s is not an array of blocks: %q", r.name, r.typ)
			}
			k, err := compileBlock(secs, r)
			if err != nil {
				return nil, err
			}
			*b = k
			continue
		}
		switch {
		case strings.HasPrefix(r.name, "iomux.poll.") || strings.HasPrefix(r.name, "iomux.select."):
			b := &l.poll
			if strings.HasPrefix(r.name, "iomux.select.") {
				b = &l.sel
			}
			n := r.name[strings.LastIndex(r.name, ".")+1:]
			if b.base < 0 {
				b.base, b.count, b.stride = r.off, 1, 0
			}
			b.index[n] = len(b.fields)
			b.fields = append(b.fields, field{name: n, off: r.off - b.base, size: r.size, signed: signedType(r.typ)})
			b.members[n] = b.fields[len(b.fields)-1]
			b.stride = max(b.stride, r.off-b.base+r.size)
		case r.name == "stats_protocol_ver":
			if r.size != protocolLen {
				return nil, fmt.Errorf("stats_protocol_ver has %d bytes", r.size)
			}
			l.header[r.name] = field{name: r.name, off: r.off, size: r.size}
		case scalar(r.typ, r.size):
			l.header[r.name] = field{name: r.name, off: r.off, size: r.size, signed: signedType(r.typ)}
		}
	}
	for _, need := range []string{"reader_counter", "stats_protocol_ver", "max_skt_inst_num", "ver_info.xlio_lib_maj", "ver_info.xlio_lib_min", "mc_info.max_grp_num"} {
		if _, ok := l.header[need]; !ok {
			return nil, fmt.Errorf("no %s", need)
		}
	}
	for n, b := range map[string]*blockKind{"cq_inst_arr": &l.cq, "ring_inst_arr": &l.ring, "bpool_inst_arr": &l.bpool, "iomux.epoll": &l.epoll, "mc_info.mc_grp_tbl": &l.mc, "skt_inst_arr": &l.socket} {
		if b.base < 0 {
			return nil, fmt.Errorf("no %s", n)
		}
	}
	if l.socket.enabled != 0 {
		return nil, fmt.Errorf("socket blocks without b_enabled at 0")
	}
	l.SocketStride = l.socket.stride
	if top.size != l.socket.base+l.socket.stride {
		return nil, fmt.Errorf("sh_mem_t does not end with one socket block")
	}
	if s := secs["ring_type_t"]; s != nil {
		l.ringTypes = s.enum
	}
	if s := secs["ring_logic_t"]; s != nil {
		l.ringLogic = s.enum
	}
	l.extra = socketExtra{
		boundIf:     member(secs, "socket_instance_block_t", "skt_stats.bound_if"),
		connectedIP: member(secs, "socket_instance_block_t", "skt_stats.connected_ip"),
		mcTxIf:      member(secs, "socket_instance_block_t", "skt_stats.mc_tx_if"),
		mcMap:       member(secs, "socket_instance_block_t", "skt_stats.mc_grp_map"),
		mcGroup:     member(secs, "mc_tbl_entry_t", "mc_grp"),
		tapName:     member(secs, "ring_instance_block_t", "ring_stats.(anon).tap.s_tap_name"),
	}
	if l.extra.boundIf < 0 || l.extra.connectedIP < 0 || l.extra.mcMap < 0 || l.extra.mcGroup < 0 {
		return nil, fmt.Errorf("socket addresses or multicast bitmap not found")
	}
	return l, nil
}

// socketExtra are the offsets of the non-scalar members read apart.
type socketExtra struct {
	boundIf, connectedIP, mcTxIf, mcMap, mcGroup, tapName int
}

// protocolLen is the length of stats_protocol_ver: 32 hex characters.
const protocolLen = 32

// layoutSummary is what the decoder needs to know of a table before it
// compiles it: the size of sh_mem_t, the offset of the protocol string
// and the size of a socket block.
type layoutSummary struct {
	size, protocolOff, socketStride int
}

// readLayout returns the text of one embedded table.
func readLayout(name string, utls bool) (string, error) {
	variant := "noutls"
	if utls {
		variant = "utls"
	}
	b, err := layoutFS.ReadFile(path.Join("layouts", name, "layout-"+variant+".txt"))
	return string(b), err
}

// summarize reads the sh_mem_t table at the top of a table's text, and
// nothing after it.
func summarize(text string) (layoutSummary, error) {
	var s layoutSummary
	head, _, _ := strings.Cut(text, "\n\n")
	for i, line := range strings.Split(head, "\n") {
		f := strings.Fields(line)
		switch {
		case i == 0:
			if !strings.HasPrefix(line, "## sh_mem_t  (sizeof = ") {
				return s, fmt.Errorf("first line %q", line)
			}
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(line, "## sh_mem_t  (sizeof = "), ")"))
			if err != nil {
				return s, err
			}
			s.size = n
		case len(f) >= 4 && f[len(f)-1] == "stats_protocol_ver":
			s.protocolOff, _ = strconv.Atoi(f[0])
		case len(f) >= 4 && f[len(f)-1] == "skt_inst_arr":
			if m := arrayType.FindStringSubmatch(strings.Join(f[2:len(f)-1], " ")); m != nil {
				s.socketStride, _ = strconv.Atoi(m[3])
			}
		}
	}
	if s.size == 0 || s.protocolOff == 0 || s.socketStride == 0 {
		return s, fmt.Errorf("incomplete sh_mem_t table: %+v", s)
	}
	return s, nil
}

// layoutIndex summarizes every embedded table, by the name of its
// directory, UTLS off and on. Only the sh_mem_t part of each is read;
// a table is compiled when a file of its protocol string is first met
// (layoutPair), so an exporter that meets one release holds one table.
func layoutIndex() (map[string][2]layoutSummary, error) {
	out := map[string][2]layoutSummary{}
	dirs, err := layoutFS.ReadDir("layouts")
	if err != nil {
		return nil, err
	}
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		var pair [2]layoutSummary
		for i, variant := range []string{"noutls", "utls"} {
			f, err := layoutFS.Open(path.Join("layouts", d.Name(), "layout-"+variant+".txt"))
			if err != nil {
				return nil, err
			}
			// The sh_mem_t table, the first, is under 4 KiB in every table.
			head, err := io.ReadAll(io.LimitReader(f, 8<<10))
			f.Close()
			if err != nil {
				return nil, err
			}
			if pair[i], err = summarize(string(head)); err != nil {
				return nil, fmt.Errorf("layout %s/%s: %w", d.Name(), variant, err)
			}
		}
		out[d.Name()] = pair
	}
	return out, nil
}

// compileLayouts parses and compiles both variants of one table.
func compileLayouts(name string) ([2]*Layout, error) {
	var pair [2]*Layout
	for i, utls := range []bool{false, true} {
		text, err := readLayout(name, utls)
		if err != nil {
			return pair, err
		}
		secs, err := parseTable(text)
		if err != nil {
			return pair, fmt.Errorf("layout %s (utls %v): %w", name, utls, err)
		}
		if pair[i], err = compileLayout(name, utls, secs); err != nil {
			return pair, fmt.Errorf("layout %s (utls %v): %w", name, utls, err)
		}
	}
	return pair, nil
}

// summaries is the index of the embedded tables; a test checks that it
// and every table compile.
var summaries, summariesErr = layoutIndex()

// compiled holds, per table, the function that compiles it once.
var compiled = func() map[string]func() ([2]*Layout, error) {
	out := make(map[string]func() ([2]*Layout, error), len(summaries))
	for name := range summaries {
		out[name] = sync.OnceValues(func() ([2]*Layout, error) { return compileLayouts(name) })
	}
	return out
}()

// layoutPair returns both variants of the named table, compiling them at
// the first call.
func layoutPair(name string) ([2]*Layout, error) {
	f, ok := compiled[name]
	if !ok {
		return [2]*Layout{}, fmt.Errorf("no layout table %s", name)
	}
	return f()
}

// protocolOffsets returns the distinct offsets of stats_protocol_ver over
// all tables, in increasing order.
func protocolOffsets() []int {
	seen := map[int]bool{}
	var out []int
	for _, pair := range summaries {
		for _, l := range pair {
			if !seen[l.protocolOff] {
				seen[l.protocolOff] = true
				out = append(out, l.protocolOff)
			}
		}
	}
	sort.Ints(out)
	return out
}
