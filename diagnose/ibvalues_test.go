package diagnose

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/infiniband"
	"github.com/nic-exporter/nic_exporter/demo"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// The files of these tests are written the way `cat counters/* 2>&1`
// writes them: one line per file of the directory, in the glob order of
// the locale, with the counter names of drivers/infiniband/core/sysfs.c.
// The values are made up for each case (no public output of this command
// with its values was found); the orders are checked against the
// kernel's names in TestGlobOrders.

// catValues renders the counters of a group in a glob order ("C" or
// "en_US.UTF-8"); a counter in errs is a cat error line instead of its
// value, a counter missing from vals is 0.
func catValues(t *testing.T, groupSize int, order string, vals map[string]uint64, errs ...string) string {
	t.Helper()
	var files []string
	for _, g := range pmaGroups() {
		if len(g.files) == groupSize {
			files = append([]string(nil), g.files...)
		}
	}
	if files == nil {
		t.Fatalf("no group of %d files", groupSize)
	}
	for _, o := range globOrders {
		if o.name == order {
			sort.SliceStable(files, func(a, b int) bool { return o.less(files[a], files[b]) })
		}
	}
	var b strings.Builder
	for _, f := range files {
		if indexOf(errs, f) >= 0 {
			b.WriteString("cat: /sys/class/infiniband/mlx5_0/ports/1/counters/" + f + ": Invalid argument\n")
			continue
		}
		b.WriteString(strconv.FormatUint(vals[f], 10) + "\n")
	}
	return b.String()
}

// busyPort are the counters of an IB port that carried traffic: data and
// packet counts far above any error counter's width.
var busyPort = map[string]uint64{
	"symbol_error": 3, "link_downed": 1, "port_rcv_data": 81234567890, "port_xmit_data": 71234567890,
	"port_rcv_packets": 91234567, "port_xmit_packets": 81234567, "unicast_rcv_packets": 91000000,
	"unicast_xmit_packets": 81000000, "multicast_rcv_packets": 234567, "multicast_xmit_packets": 234567,
	"port_xmit_wait": 1200, "VL15_dropped": 2,
}

// TestGlobOrders checks the two orders against what the shells give for
// the kernel's names: in C, VL15_dropped (upper case) sorts first; in
// en_US.UTF-8, where case and underscores count only at later levels,
// it sorts last, after unicast_xmit_packets; the others keep their order.
func TestGlobOrders(t *testing.T) {
	g := pmaGroups()[3]
	sorted := func(order int) []string {
		fs := append([]string(nil), g.files...)
		sort.SliceStable(fs, func(a, b int) bool { return globOrders[order].less(fs[a], fs[b]) })
		return fs
	}
	c, us := sorted(0), sorted(1)
	if c[0] != "VL15_dropped" || us[len(us)-1] != "VL15_dropped" {
		t.Errorf("C order %v\nen_US order %v", c, us)
	}
	if strings.Join(c[1:], " ") != strings.Join(us[:len(us)-1], " ") {
		t.Errorf("the orders differ beyond VL15_dropped:\n%v\n%v", c, us)
	}
	for _, g := range pmaGroups() {
		seen := map[string]bool{}
		for _, f := range g.files {
			if seen[f] {
				t.Errorf("%s: %s twice", g.name, f)
			}
			seen[f] = true
		}
	}
}

// TestGlobOrdersAgreeWithBash lists the files of each counter group with
// bash's own glob, as `cat counters/*` in collect_debug.sh (a bash script)
// does, in the C.UTF-8 and en_US.UTF-8 locales, and checks that the
// orders are globOrders'. (dash, Debian's sh, globs in byte order in any
// locale: its files read in the C order.)
func TestGlobOrdersAgreeWithBash(t *testing.T) {
	bash := testenv.LookPath(t, "bash")
	ctx, cancel := context.WithTimeout(context.Background(), testenv.HangGuard)
	defer cancel()
	for _, g := range pmaGroups() {
		dir := t.TempDir()
		for _, f := range g.files {
			if err := os.WriteFile(filepath.Join(dir, f), []byte(f+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, o := range globOrders {
			cmd := exec.CommandContext(ctx, bash, "-c", "cat *")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "LC_ALL="+o.name)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("bash: %v: %s", err, stderr.String())
			}
			// bash warns when the locale is not installed, and then
			// globs in the C order.
			testenv.Require(t, !strings.Contains(stderr.String(), "setlocale"), o.name+" locale (Debian locales-all)")
			want := append([]string(nil), g.files...)
			sort.SliceStable(want, func(a, b int) bool { return o.less(want[a], want[b]) })
			if got := strings.Fields(string(out)); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("%s, %s: bash lists\n%v\nglobOrders give\n%v", g.name, o.name, got, want)
			}
		}
	}
}

func TestParseRDMAValues(t *testing.T) {
	idle := map[string]uint64{}
	for _, tc := range []struct {
		name, file, text string
		// want are some counters and their values; "" wants an error
		// containing err.
		want map[string]string
		err  string
		note string
	}{
		{name: "busy, C order", file: "ib_counters.txt", text: catValues(t, 21, "C", busyPort),
			want: map[string]string{"VL15_dropped": "2", "symbol_error": "3", "port_rcv_data": "81234567890", "unicast_xmit_packets": "81000000"},
			note: "pma_attrs_ext in the C glob order (the en_US.UTF-8 order would give"},
		{name: "busy, en_US order", file: "ib_counters.txt", text: catValues(t, 21, "en_US.UTF-8", busyPort),
			want: map[string]string{"VL15_dropped": "2", "symbol_error": "3", "port_xmit_data": "71234567890", "port_xmit_wait": "1200"},
			note: "pma_attrs_ext in the en_US.UTF-8 glob order (the C order would give"},
		{name: "idle port, orders read the same", file: "ib_counters.txt", text: catValues(t, 17, "C", idle),
			want: map[string]string{"symbol_error": "0", "port_xmit_wait": "0"}, note: "the C and en_US.UTF-8 glob orders read the same"},
		{name: "old kernel, no port_xmit_wait", file: "ib_counters.txt", text: catValues(t, 16, "C", busyPort),
			want: map[string]string{"link_downed": "1", "port_rcv_packets": "91234567"}, note: "before port_xmit_wait in the C glob order"},
		{name: "cat error takes the counter out, device from its path", file: "debug/counters_out.txt",
			text: "$ cat /sys/class/infiniband/mlx5_0/ports/1/counters/*\n" + catValues(t, 21, "en_US.UTF-8", busyPort, "VL15_dropped"),
			want: map[string]string{"symbol_error": "3", "port_rcv_data": "81234567890"}, note: "no value for VL15_dropped"},
		{name: "device path under /sys/devices", file: "x.txt",
			text: "# cat /sys/devices/pci0000:00/0000:00:02.0/0000:08:00.0/infiniband/mlx5_0/ports/1/counters/*\n" + catValues(t, 17, "C", idle),
			want: map[string]string{"symbol_error": "0"}},
		{name: "collect's name gives device and port", file: "ib_counters_mlx5_2_1.txt", text: catValues(t, 17, "C", idle),
			want: map[string]string{"symbol_error": "0"}},
		{name: "no PMA: every counter N/A", file: "ib_counters.txt", text: strings.Repeat("N/A (no PMA)\n", 16), err: "no counter values"},
		{name: "one counter N/A: which one depends on the order", file: "ib_counters.txt", text: "N/A (no PMA)\n" + strings.Repeat("0\n", 16),
			err: "both readings are plausible and they differ"},
		{name: "count of no group", file: "ib_counters.txt", text: "0\n0\n0\n", err: "3 counters (3 values, 0 cat errors) match no counter group"},
		{name: "both plausible, different", file: "ib_counters.txt", text: catValues(t, 17, "C", map[string]uint64{"VL15_dropped": 1}),
			err: "cannot tell whether the shell listed the files"},
		{name: "neither plausible", file: "ib_counters.txt",
			text: strings.Replace(catValues(t, 21, "C", busyPort), "0\n", "70000\n", 1) + "", err: "no reading of pma_attrs_ext is plausible"},
		{name: "no device", file: "values.txt", text: "# cat counters/*\n0\n", err: "not a counter value"},
		{name: "unknown counter in a cat error", file: "ib_counters.txt",
			text: "cat: /sys/class/infiniband/mlx5_0/ports/1/counters/bogus: Invalid argument\n" + strings.Repeat("0\n", 16), err: `"bogus", which is not a counter`},
		{name: "two devices", file: "ib_counters.txt",
			text: "cat: /sys/class/infiniband/mlx5_0/ports/1/counters/VL15_dropped: Invalid argument\ncat: /sys/class/infiniband/mlx5_1/ports/1/counters/link_downed: Invalid argument\n", err: "an earlier line names mlx5_0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := parseRDMAValues(tc.file, tc.text)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, f := range v.files {
				got[f.path] = strings.TrimSpace(f.value)
			}
			dev := "mlx5_0"
			if strings.Contains(tc.file, "mlx5_2") {
				dev = "mlx5_2"
			}
			for n, want := range tc.want {
				p := "class/infiniband/" + dev + "/ports/1/counters/" + n
				if got[p] != want {
					t.Errorf("%s = %q, want %q (all: %v)", p, got[p], want, got)
				}
			}
			if !strings.Contains(v.note, tc.note) {
				t.Errorf("note %q, want it to contain %q", v.note, tc.note)
			}
		})
	}
}

// TestRDMAValuesBundle reads collect_debug.sh's ib_counters.txt in a
// bundle: the values become the infiniband collector's series for
// mlx5_0 port 1 (said in the file's note), and a symbol error count
// fires the alert with the value's line as evidence. A file of another
// count costs only itself.
func TestRDMAValuesBundle(t *testing.T) {
	vals := map[string]uint64{}
	for k, v := range busyPort {
		vals[k] = v
	}
	vals["symbol_error"], vals["link_downed"] = 5000, 0
	text := catValues(t, 21, "en_US.UTF-8", vals)
	line := 0
	for i, l := range strings.Split(text, "\n") {
		if l == "5000" {
			line = i + 1
		}
	}
	r := analyzer(t).Analyze(&Bundle{Source: "b", Files: []File{
		{Name: "ib_counters.txt", Data: []byte(text)},
		{Name: "other/ib_counters.txt", Data: []byte("1\n2\n")},
		{Name: "uptime", Data: []byte(reachUptime)},
	}})
	if got, want := findingsOf(r), "NICInfiniBandSymbolErrors mlx5_0 port 1 ib_counters.txt:"+strconv.Itoa(line); got != want {
		t.Errorf("findings:\n%s\nwant:\n%s", got, want)
	}
	for _, f := range r.Files {
		switch f.Name {
		case "ib_counters.txt":
			if f.Kind != KindRDMACounterValues || !strings.Contains(f.Note, "mlx5_0 port 1") || !strings.Contains(f.Note, "en_US.UTF-8 glob order") {
				t.Errorf("%+v", f)
			}
		case "other/ib_counters.txt":
			if !strings.HasPrefix(f.Note, "unparsable: 2 counters") {
				t.Errorf("%+v", f)
			}
		}
	}
}

func FuzzParseRDMAValues(f *testing.F) {
	f.Add("ib_counters.txt", strings.Repeat("0\n", 17))
	f.Add("x.txt", "$ cat /sys/class/infiniband/mlx5_0/ports/1/counters/*\ncat: /sys/class/infiniband/mlx5_0/ports/1/counters/VL15_dropped: Invalid argument\n"+strings.Repeat("7\n", 20))
	f.Add("ib_counters.txt", "N/A (no PMA)\n"+strings.Repeat("1\n", 15))
	f.Fuzz(func(t *testing.T, name, s string) {
		v, err := parseRDMAValues(name, s)
		if err == nil && len(v.files) == 0 {
			t.Error("no error and no counters")
		}
		_ = isRDMAValues(name, strings.Split(s, "\n"))
	})
}

// TestRDMAValuesRealCounters writes the counters directory of a real
// ConnectX-7 port (gpud PR 943, in the real-world corpus: 21 files of
// pma_attrs_ext, saturated 8-, 16- and 32-bit counters next to 64-bit
// data counters) and lists it with bash's `cat *` in each locale, as
// collect_debug.sh does: each listing is read in its own order, every
// counter gets the value of its file, and the infiniband collector
// exports the same series over the bundle's counters as over the real
// directory. The truncated no-PMA listing of an i40iw port (8 files of
// "N/A (no PMA)") is refused: 8 files are no group of the kernel.
func TestRDMAValuesRealCounters(t *testing.T) {
	bash := testenv.LookPath(t, "bash")
	ctx, cancel := context.WithTimeout(context.Background(), testenv.HangGuard)
	defer cancel()
	corpus := filepath.Join("..", "testdata", "realworld", "infiniband")
	data, err := os.ReadFile(filepath.Join(corpus, "gpud943_cx7_mlx5_1_saturated.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := demo.WriteTree(root, string(data)); err != nil {
		t.Fatal(err)
	}
	const dir = "class/infiniband/mlx5_1/ports/1/counters"
	catAll := func(t *testing.T, root, dir, locale string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, bash, "-c", "cat * 2>&1")
		cmd.Dir = filepath.Join(root, filepath.FromSlash(dir))
		cmd.Env = append(os.Environ(), "LC_ALL="+locale)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("bash: %v %s", err, stderr.String())
		}
		testenv.Require(t, !strings.Contains(stderr.String(), "setlocale"), locale+" locale (Debian locales-all)")
		return string(out)
	}
	want := pollText(t, infiniband.New(infiniband.Config{SysfsPath: "(real)", FS: os.DirFS(filepath.Join(root, "sys"))}, zap.NewNop()))
	for _, o := range globOrders {
		t.Run(o.name, func(t *testing.T) {
			text := "$ cat /sys/" + dir + "/*\n" + catAll(t, filepath.Join(root, "sys"), dir, o.name)
			v, err := parseRDMAValues("ib_counters.txt", text)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(v.note, "pma_attrs_ext in the "+o.name+" glob order") {
				t.Errorf("note %q", v.note)
			}
			if len(v.files) != 21 {
				t.Fatalf("%d counters", len(v.files))
			}
			for _, f := range v.files {
				real, err := os.ReadFile(filepath.Join(root, "sys", filepath.FromSlash(f.path)))
				if err != nil || string(real) != f.value {
					t.Errorf("%s: %q, the file holds %q (%v)", f.path, f.value, real, err)
				}
			}
			got := pollText(t, infiniband.New(infiniband.Config{SysfsPath: "(bundle)", FS: rdmaFS(v.files)}, zap.NewNop()))
			if got != want {
				t.Errorf("series over the bundle:\n%s\nover the directory:\n%s", got, want)
			}
		})
	}

	data, err = os.ReadFile(filepath.Join(corpus, "i40iw_node_exporter966_no_pma.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	root = t.TempDir()
	if err := demo.WriteTree(root, string(data)); err != nil {
		t.Fatal(err)
	}
	text := catAll(t, root, "sys/devices/pci0000:05/0000:05:02.0/0000:07:00.0/0000:08:03.0/0000:09:00.0/infiniband/i40iw0/ports/1/counters", "C.UTF-8")
	if _, err := parseRDMAValues("ib_counters.txt", text); err == nil || !strings.Contains(err.Error(), "8 counters (8 values, 0 cat errors) match no counter group") {
		t.Errorf("no-PMA listing: %v", err)
	}
}

// pollText returns the text exposition of one poll of a collector.
func pollText(t *testing.T, c collector.Collector) string {
	t.Helper()
	s, err := poll(c, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	return s.String()
}
