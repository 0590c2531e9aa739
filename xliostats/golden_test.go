package xliostats

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The golden files are from real builds of libxlio 3.21.2 (family F4,
// UTLS off) and 3.70.2 (family G2, UTLS on); testdata/golden/README.md
// says how they were made. xlio_stats-v*.txt is what each tag's own
// xlio_stats printed for xliostat.bin: the reference these tests compare
// the decoder against.
var goldenTags = []struct {
	tag, layout string
}{
	{"3.21.2", "F4"},
	{"3.70.2", "G2+utls"},
}

// allLayouts compiles every embedded table and checks it against the
// summary the decoder reads before compiling.
func allLayouts(t *testing.T) map[string][2]*Layout {
	t.Helper()
	if summariesErr != nil {
		t.Fatal(summariesErr)
	}
	out := map[string][2]*Layout{}
	for name, sum := range summaries {
		pair, err := layoutPair(name)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range pair {
			if got := (layoutSummary{l.Size, l.ProtocolOffset(), l.SocketStride}); got != sum[i] {
				t.Errorf("%s: compiled %+v, summary %+v", name, got, sum[i])
			}
		}
		out[name] = pair
	}
	return out
}

func readGolden(t *testing.T, tag, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "golden", tag, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func parseGolden(t *testing.T, tag, name string) *Stats {
	t.Helper()
	s, err := Parse(readGolden(t, tag, name))
	if err != nil {
		t.Fatalf("%s/%s: %v", tag, name, err)
	}
	return s
}

// TestLayoutsMatchFamilies checks the embedded tables against the
// summary computed with them (layouts/families.txt): sizeof(sh_mem_t),
// the protocol string's offset and the socket block size of every header
// blob and build variant; and that the table of versions names only
// tables that exist.
func TestLayoutsMatchFamilies(t *testing.T) {
	layouts := allLayouts(t)
	b, err := os.ReadFile("layouts/families.txt")
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 6 || strings.HasPrefix(line, "#") {
			continue
		}
		rows++
		pair, ok := layouts[f[2]]
		if !ok {
			t.Errorf("no table for %s", f[2])
			continue
		}
		l := pair[0]
		if f[0] == "utls" {
			l = pair[1]
		}
		got := fmt.Sprintf("%d %d %d", l.Size, l.ProtocolOffset(), l.SocketStride)
		if want := strings.Join(f[3:], " "); got != want {
			t.Errorf("%s %s: sizeof, protocol offset, socket block = %s, want %s", f[0], f[2], got, want)
		}
	}
	if rows != 2*len(layouts) {
		t.Errorf("families.txt has %d rows for %d tables", rows, len(layouts))
	}
	used := map[string]bool{}
	for _, v := range knownVersions {
		if v.Layout == "" {
			continue
		}
		used[v.Layout] = true
		if _, ok := layouts[v.Layout]; !ok {
			t.Errorf("version %s names table %s, which does not exist", v.MD5, v.Layout)
		}
	}
	for name := range layouts {
		if !used[name] {
			t.Errorf("table %s belongs to no version", name)
		}
	}
	// The facts the reader handshake relies on (FACTS.md §4).
	for name, want := range map[string]int{"3.21.2": 0, "3.60.0": 7384, "3.61.1": 8408} {
		for _, l := range layouts[name] {
			if got := l.ReaderCounterOffset(); got != want {
				t.Errorf("%s: reader_counter at %d, want %d", name, got, want)
			}
		}
	}
}

// TestGoldenExpected compares the decoded golden files with every value
// the fixture writer put into them (xliostat.expected.txt), field by
// field: a value decoded from the wrong offset or width fails here.
func TestGoldenExpected(t *testing.T) {
	line := regexp.MustCompile(`^(\w+(?:\.\w+)?)(?:\[(\d+)\])?(?:\.(\w+))?(?::\w+\.)?([\w.]*(?: bit \d+)?) = (\S+)`)
	for _, g := range goldenTags {
		t.Run(g.tag, func(t *testing.T) {
			s := parseGolden(t, g.tag, "xliostat.bin")
			if s.LayoutName() != g.layout {
				t.Errorf("layout %s, want %s", s.LayoutName(), g.layout)
			}
			checked := 0
			sc := bufio.NewScanner(bytes.NewReader(readGolden(t, g.tag, "xliostat.expected.txt")))
			for sc.Scan() {
				text := sc.Text()
				if strings.HasPrefix(text, "#") || text == "" {
					continue
				}
				m := line.FindStringSubmatch(text)
				if m == nil {
					t.Errorf("unparsed line %q", text)
					continue
				}
				arr, idx, sub, name, want := m[1], -1, m[3], m[4], m[5]
				if m[2] != "" {
					idx, _ = strconv.Atoi(m[2])
				}
				if name == "" {
					name, sub = sub, ""
				}
				got, err := expectedValue(s, arr, idx, sub, name)
				if err != nil {
					t.Errorf("%s: %v", text, err)
					continue
				}
				if got != want {
					t.Errorf("%s: decoded %s", text, got)
				}
				checked++
			}
			t.Logf("%d values compared", checked)
			if checked < 300 {
				t.Errorf("only %d values compared", checked)
			}
		})
	}
}

// expectedValue returns the decoded value named by one line of
// xliostat.expected.txt, formatted as the line writes it.
func expectedValue(s *Stats, arr string, idx int, sub, name string) (string, error) {
	num := func(v Values, name string) (string, error) {
		if _, ok := v.Get(name); !ok {
			return "", fmt.Errorf("no field %s", name)
		}
		n, _ := v.Int(name)
		if f, _ := v.Get(name); f > 1<<62 {
			return strconv.FormatUint(f, 10), nil
		}
		return strconv.FormatInt(n, 10), nil
	}
	find := func(bs []Block) (Values, error) {
		for _, b := range bs {
			if b.Index == idx {
				return b.Values, nil
			}
		}
		return Values{}, fmt.Errorf("block %d not decoded as enabled", idx)
	}
	field := FieldName(name)
	if name == "b_enabled" || name == "enabled" {
		field = ""
	}
	var v Values
	var err error
	switch arr {
	case "cq_inst_arr":
		v, err = find(s.CQs)
	case "bpool_inst_arr":
		v, err = find(s.BufferPools)
	case "ent_ctx_inst_arr":
		v, err = find(s.EntityContexts)
	case "global_inst_arr":
		if s.Global == nil {
			return "", fmt.Errorf("global block not decoded")
		}
		v = s.Global.Values
	case "ring_inst_arr":
		var bs []Block
		for _, r := range s.Rings {
			bs = append(bs, r.Block)
		}
		v, err = find(bs)
	case "iomux.poll":
		v = s.Poll
	case "iomux.select":
		v = s.Select
	case "iomux.epoll":
		var bs []Block
		for _, e := range s.Epoll {
			bs = append(bs, e.Block)
		}
		v, err = find(bs)
	case "mc_info.max_grp_num":
		return strconv.Itoa(int(s.MaxGroups)), nil
	case "mc_info.mc_grp_tbl":
		for _, g := range s.Groups {
			if g.Index != idx {
				continue
			}
			switch name {
			case "sock_num":
				return strconv.Itoa(int(g.Sockets)), nil
			case "mc_grp":
				fam := "AF_INET"
				if g.Group.Is6() {
					fam = "AF_INET6"
				}
				return g.Group.String() + "/" + fam, nil
			}
		}
		return "", fmt.Errorf("no multicast entry %d", idx)
	case "skt_inst_arr":
		for _, k := range s.Sockets {
			if k.Slot != idx {
				continue
			}
			switch {
			case field == "":
				return "1", nil
			case field == "bound_if":
				return k.BoundIf.String(), nil
			case field == "connected_ip":
				return k.ConnectedIP.String(), nil
			case field == "mc_tx_if":
				return k.MCTxIf.String(), nil
			case strings.HasPrefix(field, "mc_grp_map bit "):
				bit, _ := strconv.Atoi(strings.TrimPrefix(field, "mc_grp_map bit "))
				return map[bool]string{true: "1", false: "0"}[slices.Contains(k.MCGroups, bit)], nil
			}
			return num(k.Values, field)
		}
		return "", fmt.Errorf("socket slot %d not decoded as enabled", idx)
	default:
		return "", fmt.Errorf("unknown array %s", arr)
	}
	if err != nil {
		return "", err
	}
	if field == "" {
		return "1", nil // the block was decoded as enabled
	}
	return num(v, field)
}

// printedSections splits xlio_stats -v 3 output into its sections, by the
// tab-indented title line that opens each ("Fd=[5]", "CQ=[0]", "poll").
func printedSections(t *testing.T, text string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	title := ""
	for _, line := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(line, "\t"):
			title = strings.TrimSpace(line)
			if _, dup := out[title]; dup {
				t.Fatalf("section %s twice", title)
			}
			out[title] = nil
		case strings.HasPrefix(line, "====") || strings.HasPrefix(line, "----") || strings.HasPrefix(line, "rc="):
			title = ""
		case title != "" && strings.TrimSpace(line) != "":
			out[title] = append(out[title], strings.TrimSpace(line))
		}
	}
	return out
}

var printedNumber = regexp.MustCompile(`0x[0-9a-f]+|\d+(?:\.\d+)?`)

// printedLine returns a line's label (the text before the first colon)
// and the numbers after it.
func printedLine(line string) (string, []string) {
	label, rest, _ := strings.Cut(line, ":")
	return strings.TrimSpace(label), printedNumber.FindAllString(rest, -1)
}

// wantLine is what the decoder says one printed line holds: the numbers
// it prints, formatted as xlio_stats formats them.
type wantLine []string

func u(v Values, name string) uint64 {
	x, ok := v.Get(name)
	if !ok {
		panic("no field " + name)
	}
	return x
}

func d(v Values, name string) string { n, _ := v.Int(name); return strconv.FormatInt(n, 10) }
func n(v Values, names ...string) wantLine {
	var out wantLine
	for _, name := range names {
		out = append(out, d(v, name))
	}
	return out
}
func kb(v Values, name string) string { return strconv.FormatUint(u(v, name)/1024, 10) }
func ratio(a, b uint64, prec int) string {
	if b == 0 {
		return strconv.FormatFloat(0, 'f', prec, 64)
	}
	return strconv.FormatFloat(float64(a)/float64(b), 'f', prec, 64)
}

// socketLines returns the numbers of each labelled line of an Fd section.
func socketLines(k *Socket) map[string]wantLine {
	v := k.Values
	hit, miss := u(v, "n_rx_poll_hit"), u(v, "n_rx_poll_miss")
	w := map[string]wantLine{
		"Tx Offload":            {kb(v, "n_tx_sent_byte_count"), d(v, "n_tx_sent_pkt_count"), d(v, "n_tx_eagain"), d(v, "n_tx_errors")},
		"Tx OS info":            {kb(v, "n_tx_os_bytes"), d(v, "n_tx_os_packets"), d(v, "n_tx_os_eagain"), d(v, "n_tx_os_errors")},
		"Tx Dummy messages":     n(v, "n_tx_dummy"),
		"Rx Offload":            n(v, "n_rx_bytes", "n_rx_packets", "n_rx_eagain", "n_rx_errors"),
		"Rx data packets":       n(v, "n_rx_bytes", "n_rx_data_pkts", "n_rx_frags", "n_gro"),
		"Avg. aggr packet size": {strconv.FormatUint(u(v, "n_rx_bytes")/u(v, "n_rx_data_pkts"), 10), ratio(u(v, "n_rx_frags"), u(v, "n_rx_data_pkts"), 1)},
		"Rx OS info":            {kb(v, "n_rx_os_bytes"), d(v, "n_rx_os_packets"), d(v, "n_rx_os_eagain"), d(v, "n_rx_os_errors")},
		"Rx byte":               n(v, "n_rx_ready_byte_count", "n_rx_ready_byte_max", "n_rx_ready_byte_drop"),
		"Rx pkt":                n(v, "n_rx_ready_pkt_count", "n_rx_ready_pkt_max", "n_rx_ready_pkt_drop"),
		"Rx RQ Strides":         n(v, "strq_counters.n_strq_total_strides", "strq_counters.n_strq_max_strides_per_packet"),
		"Rx poll":               {d(v, "n_rx_poll_miss"), d(v, "n_rx_poll_hit"), ratio(100*hit, hit+miss, 2)},
		"Ring migrations Rx":    n(v, "n_rx_migrations", "n_tx_migrations"),
		"Retransmissions":       n(v, "n_tx_retransmits"),
		"Sendfile":              n(v, "n_tx_sendfile_fallbacks", "n_tx_sendfile_overflows"),
	}
	if _, ok := v.Get("n_rx_ready_byte_limit"); ok {
		w["Rx byte"] = append(w["Rx byte"], d(v, "n_rx_ready_byte_limit"))
		w["Rx zero copy buffers"] = n(v, "n_rx_zcopy_pkt_count")
	}
	if k.TCPState == 1 { // LISTEN
		w["Listen Backlog"] = n(v, "listen_counters.n_conn_backlog")
		w["Listen Accepts"] = n(v, "listen_counters.n_conn_accepted", "listen_counters.n_conn_established", "listen_counters.n_rx_syn", "listen_counters.n_rx_syn_tw")
		w["Listen Errors"] = n(v, "listen_counters.n_conn_dropped", "listen_counters.n_rx_fin")
	}
	if on, ok := v.Get("tls_tx_offload"); ok && on != 0 {
		w["TLS Offload"] = wantLine{fmt.Sprintf("%04x", u(v, "tls_version")), d(v, "tls_cipher")}
		w["TLS Tx Offload"] = wantLine{kb(v, "tls_counters.n_tls_tx_bytes"), d(v, "tls_counters.n_tls_tx_records")}
		w["TLS Tx Resyncs"] = n(v, "tls_counters.n_tls_tx_resync", "tls_counters.n_tls_tx_resync_replay")
		w["TLS Rx Offload"] = wantLine{kb(v, "tls_counters.n_tls_rx_bytes"), d(v, "tls_counters.n_tls_rx_records"), d(v, "tls_counters.n_tls_rx_records_hw_auth_fail")}
		w["TLS Rx fallback"] = n(v, "tls_counters.n_tls_rx_records_full_enc", "tls_counters.n_tls_rx_records_head_enc", "tls_counters.n_tls_rx_records_tail_enc", "tls_counters.n_tls_rx_records_mix_enc", "tls_counters.n_tls_rx_records_sw_dec_fail")
		w["TLS Rx Resyncs"] = n(v, "tls_counters.n_tls_rx_resync")
	}
	return w
}

// socketHeader returns the descriptive "- " lines of an Fd section.
func socketHeader(k *Socket) []string {
	first := strings.ToUpper(k.Protocol()) + ", " + map[bool]string{true: "Blocked", false: "Non-blocked"}[k.Blocking]
	if k.MCLoop {
		first += ", MC Loop Enabled , MC IF = [" + k.MCTxIf.String() + "]"
	}
	out := []string{"- " + first, fmt.Sprintf("- Local Address = [%s:%d]", k.BoundIf, k.BoundPort)}
	if k.ConnectedPort != 0 {
		out = append(out, fmt.Sprintf("- Foreign Address = [%s:%d]", k.ConnectedIP, k.ConnectedPort))
	}
	return out
}

func iomuxLines(v Values) map[string]wantLine {
	hit, miss := u(v, "n_iomux_poll_hit"), u(v, "n_iomux_poll_miss")
	return map[string]wantLine{
		"Polling CPU":      n(v, "n_iomux_polling_time"),
		"- Thread Id":      n(v, "threadid_last"),
		"Rx fds ready":     n(v, "n_iomux_os_rx_ready", "n_iomux_rx_ready"),
		"Polls [miss/hit]": {d(v, "n_iomux_poll_miss"), d(v, "n_iomux_poll_hit"), ratio(100*hit, hit+miss, 2)},
		"Timeouts":         n(v, "n_iomux_timeouts"),
		"Errors":           n(v, "n_iomux_errors"),
	}
}

func cqLines(v Values) map[string]wantLine {
	w := map[string]wantLine{
		"Packets queue len":    n(v, "n_rx_sw_queue_len"),
		"Drained max":          n(v, "n_rx_drained_at_once_max"),
		"Buffer pool size":     n(v, "n_buffer_pool_len"),
		"Packets received":     n(v, "n_rx_packet_count"),
		"Strides received":     n(v, "n_rx_stride_count"),
		"CQE errors":           n(v, "n_rx_cqe_error"),
		"Consumed rwqes":       n(v, "n_rx_consumed_rwqe_count"),
		"Max strides/packet":   n(v, "n_rx_max_stirde_per_packet"),
		"Avg strides/packet":   {ratio(u(v, "n_rx_stride_count"), u(v, "n_rx_packet_count"), 1)},
		"Avg packets/rwqe":     {ratio(u(v, "n_rx_packet_count"), u(v, "n_rx_consumed_rwqe_count"), 1)},
		"Rx lro":               {kb(v, "n_rx_lro_bytes"), d(v, "n_rx_lro_packets")},
		"Rx GRO":               {kb(v, "n_rx_gro_bytes"), d(v, "n_rx_gro_packets")},
		"Avg GRO packet size":  {strconv.FormatUint(u(v, "n_rx_gro_bytes")/u(v, "n_rx_gro_packets"), 10)},
		"GRO frags per packet": {ratio(u(v, "n_rx_gro_frags"), u(v, "n_rx_gro_packets"), 1)},
	}
	if _, ok := v.Get("n_rx_pkt_drop"); ok {
		w["Packets dropped"] = n(v, "n_rx_pkt_drop")
	} else {
		w["SW RX Packets dropped"] = n(v, "n_rx_sw_pkt_drops")
		w["HW RX Packets dropped"] = n(v, "n_rx_hw_pkt_drops")
	}
	return w
}

func ringLines(v Values) map[string]wantLine {
	w := map[string]wantLine{
		"Master":               {fmt.Sprintf("0x%x", u(v, "p_ring_master"))},
		"Tx Offload":           {kb(v, "n_tx_byte_count"), d(v, "n_tx_pkt_count")},
		"Rx Offload":           {kb(v, "n_rx_byte_count"), d(v, "n_rx_pkt_count")},
		"Retransmissions":      n(v, "n_tx_retransmits"),
		"TX Dropped Send Reqs": n(v, "n_tx_dropped_wqes"),
		"Interrupts":           n(v, "n_rx_interrupt_requests", "n_rx_interrupt_received"),
		"Moderation":           n(v, "n_rx_cq_moderation_count", "n_rx_cq_moderation_period"),
		"Dev Mem Alloc":        n(v, "n_tx_dev_mem_allocated"),
		"Dev Mem Stats":        {kb(v, "n_tx_dev_mem_byte_count"), d(v, "n_tx_dev_mem_pkt_count"), d(v, "n_tx_dev_mem_oob")},
	}
	if _, ok := v.Get("n_rx_steering_rules"); ok {
		w["RX ZC Migration Drop"] = n(v, "n_rx_zc_migiration_drop")
		w["HW TLS TX"] = n(v, "n_tx_tls_contexts", "n_tx_tls_resyncs")
		w["HW TLS RX"] = n(v, "n_rx_tls_contexts", "n_rx_tls_resyncs", "n_rx_tls_auth_fail")
		w["TSO Offload"] = wantLine{kb(v, "n_tx_tso_byte_count"), d(v, "n_tx_tso_pkt_count")}
		w["RX steering rules"] = n(v, "n_rx_steering_rules")
		w["TX buffers inflight"] = n(v, "n_tx_num_bufs")
		w["TX ZC buffers inflight"] = n(v, "n_zc_num_bufs")
	}
	return w
}

// compareSection checks every line of a printed section against want
// (by label) and header (the "- " lines, compared as text). A printed
// line the decoder has no value for fails, and so does a wanted line
// that was not printed.
func compareSection(t *testing.T, title string, printed []string, want map[string]wantLine, header []string) {
	t.Helper()
	seen := map[string]bool{}
	var gotHeader []string
	for _, line := range printed {
		label, nums := printedLine(line)
		if w, ok := want[label]; ok {
			seen[label] = true
			if !slices.Equal(nums, w) {
				t.Errorf("%s: %q: printed %v, decoded %v", title, line, nums, []string(w))
			}
			continue
		}
		if strings.HasPrefix(line, "- ") {
			gotHeader = append(gotHeader, strings.Join(strings.Fields(line), " "))
			continue
		}
		t.Errorf("%s: printed line %q has no decoded counterpart", title, line)
	}
	for label := range want {
		if !seen[label] {
			t.Errorf("%s: decoded %q, which xlio_stats did not print", title, label)
		}
	}
	if header != nil {
		var got []string
		for _, h := range gotHeader {
			if !strings.HasPrefix(h, "- Thread Id") && !strings.HasPrefix(h, "- Member of") {
				got = append(got, h)
			}
		}
		if !slices.Equal(got, header) {
			t.Errorf("%s: printed %q, decoded %q", title, got, header)
		}
	}
}

// TestGoldenPrinted compares the decoded golden files with what each
// tag's own xlio_stats printed for them with -v 3 (every section: sockets,
// poll/select/epoll, CQs, rings, buffer pools, TCP segment pool, global),
// -v 4 (multicast groups) and -v 5 (the netstat-like view).
func TestGoldenPrinted(t *testing.T) {
	for _, g := range goldenTags {
		t.Run(g.tag, func(t *testing.T) {
			s := parseGolden(t, g.tag, "xliostat.bin")
			secs := printedSections(t, string(readGolden(t, g.tag, "xlio_stats-v3.txt")))
			used := map[string]bool{}
			section := func(title string) []string {
				lines, ok := secs[title]
				if !ok {
					t.Errorf("xlio_stats printed no section %s", title)
				}
				used[title] = true
				return lines
			}
			groups := map[int]string{}
			for _, gr := range s.Groups {
				groups[gr.Index] = gr.Group.String()
			}
			for i := range s.Sockets {
				k := &s.Sockets[i]
				title := fmt.Sprintf("Fd=[%d]", k.FD)
				lines := section(title)
				compareSection(t, title, lines, socketLines(k), socketHeader(k))
				tids := fmt.Sprintf("- Thread Id Rx: %d, Tx: %d", mustInt(k.Values, "threadid_last_rx"), mustInt(k.Values, "threadid_last_tx"))
				if !slices.ContainsFunc(lines, func(l string) bool { return strings.Join(strings.Fields(l), " ") == tids }) {
					t.Errorf("%s: no line %q", title, tids)
				}
				for _, gi := range k.MCGroups {
					member := "- Member of = [" + groups[gi] + "]"
					if !slices.Contains(lines, member) {
						t.Errorf("%s: no line %q", title, member)
					}
				}
			}
			compareSection(t, "poll", section("poll"), iomuxLines(s.Poll), nil)
			compareSection(t, "select", section("select"), iomuxLines(s.Select), nil)
			for _, e := range s.Epoll {
				title := fmt.Sprintf("epoll[%d]", e.FD)
				compareSection(t, title, section(title), iomuxLines(e.Values), nil)
			}
			for _, c := range s.CQs {
				title := fmt.Sprintf("CQ=[%d]", c.Index)
				compareSection(t, title, section(title), cqLines(c.Values), nil)
			}
			for _, r := range s.Rings {
				// 3.60 dropped ring types; its xlio_stats prints "ETH".
				typ := r.Type
				if _, ok := r.Get("n_type"); !ok {
					typ = strings.TrimPrefix(typ, "RING_")
				}
				title := fmt.Sprintf("%s=[%d]", typ, r.Index)
				compareSection(t, title, section(title), ringLines(r.Values), nil)
			}
			for _, bp := range s.BufferPools {
				kind := "TX"
				if x, _ := bp.Get("is_rx"); x != 0 {
					kind = "RX"
				}
				title := fmt.Sprintf("BUFFER_POOL(%s)=[%d]", kind, bp.Index)
				w := map[string]wantLine{
					"Size":             n(bp.Values, "n_buffer_pool_size"),
					"No buffers error": n(bp.Values, "n_buffer_pool_no_bufs"),
					"Expands":          n(bp.Values, "n_buffer_pool_expands"),
				}
				if created, ok := bp.Get("n_buffer_pool_created"); ok {
					w["Buffers in use"] = wantLine{strconv.FormatUint(created-u(bp.Values, "n_buffer_pool_size"), 10)}
				}
				compareSection(t, title, section(title), w, nil)
			}
			if s.Global == nil {
				t.Fatal("no global block")
			}
			gv := s.Global.Values
			compareSection(t, "TCP_SEG_POOL", section("TCP_SEG_POOL"), map[string]wantLine{
				"Size": n(gv, "n_tcp_seg_pool_size"), "No segments error": n(gv, "n_tcp_seg_pool_no_segs"),
			}, nil)
			compareSection(t, "GLOBAL", section("GLOBAL"), map[string]wantLine{
				"Pending sockets":        n(gv, "n_pending_sockets"),
				"Destructed TCP sockets": n(gv, "socket_tcp_destructor_counter"),
				"Destructed UDP sockets": n(gv, "socket_udp_destructor_counter"),
			}, nil)
			for title := range secs {
				if !used[title] {
					t.Errorf("xlio_stats printed section %s, which the decoder did not produce", title)
				}
			}

			// -v 4: the multicast group table, as "[group] fd...".
			var gotGroups, wantGroups []string
			for _, line := range strings.Split(string(readGolden(t, g.tag, "xlio_stats-v4.txt")), "\n") {
				if strings.HasPrefix(line, "[") {
					gotGroups = append(gotGroups, strings.Join(strings.Fields(line), " "))
				}
			}
			for _, gr := range s.Groups {
				var fds []string
				for _, k := range s.Sockets {
					if slices.Contains(k.MCGroups, gr.Index) {
						fds = append(fds, strconv.Itoa(int(k.FD)))
					}
				}
				wantGroups = append(wantGroups, "["+gr.Group.String()+"] "+strings.Join(fds, " "))
			}
			if !slices.Equal(gotGroups, wantGroups) {
				t.Errorf("-v 4: printed %q, decoded %q", gotGroups, wantGroups)
			}

			// -v 5: proto, offloaded, recv-q, send-q, local, foreign,
			// state, inode per socket.
			var got5, want5 []string
			for _, line := range strings.Split(string(readGolden(t, g.tag, "xlio_stats-v5.txt")), "\n") {
				f := strings.Fields(line)
				if len(f) >= 8 && (f[0] == "tcp" || f[0] == "udp") {
					got5 = append(got5, strings.Join(f[:len(f)-1], " ")) // the last is pid/comm of the reader's host
				}
			}
			states := []string{"CLOSED", "LISTEN", "SYN_SENT", "SYN_RCVD", "ESTABLISHED"}
			for i := range s.Sockets {
				k := &s.Sockets[i]
				foreign := "0.0.0.0:*"
				if k.ConnectedPort != 0 {
					foreign = fmt.Sprintf("%s:%d", k.ConnectedIP, k.ConnectedPort)
				}
				f := []string{k.Protocol(), map[bool]string{true: "Yes", false: "No"}[k.Offloaded],
					d(k.Values, "n_rx_ready_byte_count"), d(k.Values, "n_tx_ready_byte_count"),
					fmt.Sprintf("%s:%d", k.BoundIf, k.BoundPort), foreign}
				if k.Type == SockStream {
					f = append(f, states[k.TCPState])
				}
				want5 = append(want5, strings.Join(append(f, strconv.Itoa(int(k.Inode))), " "))
			}
			if !slices.Equal(got5, want5) {
				t.Errorf("-v 5:\nprinted %q\ndecoded %q", got5, want5)
			}
		})
	}
}

func mustInt(v Values, name string) int64 {
	n, ok := v.Int(name)
	if !ok {
		panic("no field " + name)
	}
	return n
}

// TestGoldenNoDevice decodes the files exactly as libxlio wrote them on a
// host without an RDMA device: a header, the global block and nothing
// else, which is a state the exporter must handle.
func TestGoldenNoDevice(t *testing.T) {
	for _, g := range goldenTags {
		t.Run(g.tag, func(t *testing.T) {
			s := parseGolden(t, g.tag, "xliostat-nodevice.bin")
			if s.Version() != g.tag+".0" || s.LayoutName() != g.layout || s.MaxSockets != 8 || s.ReaderCounter != 0 {
				t.Errorf("header %s %s %d sockets, reader counter %d", s.Version(), s.LayoutName(), s.MaxSockets, s.ReaderCounter)
			}
			if len(s.CQs)+len(s.Rings)+len(s.BufferPools)+len(s.EntityContexts)+len(s.Epoll)+len(s.Sockets)+len(s.Groups) != 0 {
				t.Errorf("blocks decoded from an empty file: %+v", s)
			}
			if s.Global == nil {
				t.Fatal("the global block libxlio enables is not decoded")
			}
			secs := printedSections(t, string(readGolden(t, g.tag, "xlio_stats-nodevice-v3.txt")))
			gv := s.Global.Values
			compareSection(t, "TCP_SEG_POOL", secs["TCP_SEG_POOL"], map[string]wantLine{
				"Size": n(gv, "n_tcp_seg_pool_size"), "No segments error": n(gv, "n_tcp_seg_pool_no_segs"),
			}, nil)
		})
	}
}
