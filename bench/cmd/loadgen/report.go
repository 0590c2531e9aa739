package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

// results indexes measurements by exporter, size and mode.
type results map[string]Result

func key(exporter, size, mode string, gz bool) string {
	return fmt.Sprintf("%s|%s|%s|%v", exporter, size, mode, gz)
}

func (rs results) get(exporter, size, mode string, gz bool) (Result, bool) {
	r, ok := rs[key(exporter, size, mode, gz)]
	return r, ok
}

func readResults(path string) (results, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	rs := results{}
	var sizes []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var r Result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		rs[key(r.Exporter, r.Size, r.Mode, r.Gzip)] = r
		if !seen[r.Size] {
			seen[r.Size] = true
			sizes = append(sizes, r.Size)
		}
	}
	return rs, sizes, sc.Err()
}

func report(args []string) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	in := fs.String("in", "", "Results file written by the measurements.")
	md := fs.String("md", "", "Markdown report to write.")
	dat := fs.String("dat", "", "gnuplot data file to write: series and median latency per size.")
	large := fs.String("large", "large", "Name of the size the headline comparison is about.")
	ours := fs.String("ours", "nic_exporter", "Our exporter's name in the results.")
	theirs := fs.String("theirs", "node_exporter", "The other exporter's name in the results.")
	interval := fs.Duration("poll-interval", 5*time.Second, "Poll interval of our collectors during the idle measurement.")
	header := fs.String("header", "", "Text put before the tables (machine facts, commands).")
	if err := fs.Parse(args); err != nil {
		return err
	}
	rs, sizes, err := readResults(*in)
	if err != nil {
		return err
	}
	// Sizes in order of our series count.
	sort.SliceStable(sizes, func(i, j int) bool {
		a, _ := rs.get(*ours, sizes[i], "series", false)
		b, _ := rs.get(*ours, sizes[j], "series", false)
		return a.Series < b.Series
	})
	var b strings.Builder
	if *header != "" {
		b.WriteString(*header)
		b.WriteString("\n\n")
	}
	headline(&b, rs, *large, *ours, *theirs, *interval)
	sweep(&b, rs, sizes, *ours, *theirs)
	if *md != "" {
		if err := os.WriteFile(*md, []byte(b.String()), 0o644); err != nil {
			return err
		}
	} else {
		fmt.Print(b.String())
	}
	if *dat != "" {
		return writeDat(*dat, rs, sizes, *ours, *theirs)
	}
	return nil
}

func ms(s float64) string {
	switch {
	case s == 0:
		return "–"
	case s < 0.001:
		return fmt.Sprintf("%.3f ms", s*1e3)
	case s < 0.1:
		return fmt.Sprintf("%.2f ms", s*1e3)
	case s < 10:
		return fmt.Sprintf("%.0f ms", s*1e3)
	}
	return fmt.Sprintf("%.1f s", s)
}

func mib(b int64) string {
	if b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}

func ratio(theirs, ours float64) string {
	if ours <= 0 || theirs <= 0 {
		return "–"
	}
	r := theirs / ours
	if r >= 10 {
		return fmt.Sprintf("%.0f×", r)
	}
	return fmt.Sprintf("%.1f×", r)
}

// netCPU is the CPU per scrape without the background polls that ran
// during the measurement, estimated from the idle measurement.
func netCPU(r Result, idle Result, hasIdle bool) float64 {
	if r.Scrapes == 0 {
		return 0
	}
	cpu := r.CPU
	if hasIdle && idle.Wall > 0 {
		cpu -= idle.CPU / idle.Wall * r.Wall
		if cpu < 0 {
			cpu = 0
		}
	}
	return cpu / float64(r.Scrapes)
}

func headline(b *strings.Builder, rs results, size, ours, theirs string, interval time.Duration) {
	so, ok := rs.get(ours, size, "series", false)
	if !ok {
		return
	}
	st, _ := rs.get(theirs, size, "series", false)
	fmt.Fprintf(b, "### Host %q: %s vs %s\n\n", size, ours, theirs)
	fmt.Fprintf(b, "| Measure | %s | %s | ratio |\n|---|---|---|---|\n", theirs, ours)
	fmt.Fprintf(b, "| series | %d | %d | |\n", st.Series, so.Series)
	fmt.Fprintf(b, "| metric families | %d | %d | |\n", st.Families, so.Families)
	fmt.Fprintf(b, "| scrape size (uncompressed) | %.1f MB | %.1f MB | |\n", float64(st.Bytes)/1e6, float64(so.Bytes)/1e6)
	idleO, hasIdleO := rs.get(ours, size, "idle", false)
	idleT, hasIdleT := rs.get(theirs, size, "idle", false)
	for _, gz := range []bool{false, true} {
		enc := "identity"
		if gz {
			enc = "gzip"
		}
		o, ok1 := rs.get(ours, size, "steady", gz)
		t, ok2 := rs.get(theirs, size, "steady", gz)
		if !ok1 || !ok2 {
			continue
		}
		fmt.Fprintf(b, "| steady, %s: median latency | %s | %s | %s |\n", enc, ms(t.P50), ms(o.P50), ratio(t.P50, o.P50))
		fmt.Fprintf(b, "| steady, %s: p99 latency | %s | %s | %s |\n", enc, ms(t.P99), ms(o.P99), ratio(t.P99, o.P99))
		fmt.Fprintf(b, "| steady, %s: CPU per scrape | %s | %s | %s |\n", enc, ms(t.CPUPerUnit), ms(o.CPUPerUnit), ratio(t.CPUPerUnit, o.CPUPerUnit))
		no, nt := netCPU(o, idleO, hasIdleO), netCPU(t, idleT, hasIdleT)
		nos := ms(no)
		if no == 0 && o.CPU > 0 {
			nos = "≈0 (within the idle poll CPU)"
		}
		fmt.Fprintf(b, "| steady, %s: CPU per scrape without background polls | %s | %s | %s |\n", enc, ms(nt), nos, ratio(nt, no))
		fmt.Fprintf(b, "| steady, %s: scrapes (errors) | %d (%d) | %d (%d) | |\n", enc, t.Scrapes, t.Errors, o.Scrapes, o.Errors)
	}
	for _, m := range []struct{ mode, what string }{
		{"burst", "scrapers at %g/s each, starting together"},
		{"concurrent", "closed-loop scrapers"},
	} {
		for _, gz := range []bool{false, true} {
			o, ok1 := rs.get(ours, size, m.mode, gz)
			t, ok2 := rs.get(theirs, size, m.mode, gz)
			if !ok1 && !ok2 {
				continue
			}
			enc := "identity"
			if gz {
				enc = "gzip"
			}
			c := o.Concurrency
			if c == 0 {
				c = t.Concurrency
			}
			what := m.what
			if m.mode == "burst" {
				rate := o.Rate
				if rate == 0 {
					rate = t.Rate
				}
				what = fmt.Sprintf(what, rate)
			}
			l := fmt.Sprintf("%d %s, %s", c, what, enc)
			fmt.Fprintf(b, "| %s: median latency | %s | %s | %s |\n", l, ms(t.P50), ms(o.P50), ratio(t.P50, o.P50))
			fmt.Fprintf(b, "| %s: p99 latency | %s | %s | %s |\n", l, ms(t.P99), ms(o.P99), ratio(t.P99, o.P99))
			fmt.Fprintf(b, "| %s: scrapes/s | %s | %s | |\n", l, perSec(t, ok2), perSec(o, ok1))
			fmt.Fprintf(b, "| %s: CPU per scrape | %s | %s | %s |\n", l, ms(t.CPUPerUnit), ms(o.CPUPerUnit), ratio(t.CPUPerUnit, o.CPUPerUnit))
			fmt.Fprintf(b, "| %s: load generator CPU per scrape | %s | %s | |\n", l, ms(perScrape(t.ClientCPU, t)), ms(perScrape(o.ClientCPU, o)))
			fmt.Fprintf(b, "| %s: scrapes (errors) | %s | %s | |\n", l, count(t, ok2), count(o, ok1))
		}
	}
	if hasIdleO {
		polls := idleO.Wall / interval.Seconds()
		fmt.Fprintf(b, "| idle (no scrapes) %.0f s: CPU | %s | %s (%.2f%% of one core; %s per %s poll round) | |\n",
			idleO.Wall, cpuOrDash(idleT, hasIdleT), ms(idleO.CPU), 100*idleO.CPU/idleO.Wall, ms(idleO.CPU/polls), interval)
	}
	var last Result
	for _, m := range []string{"concurrent", "burst", "steady"} {
		if r, ok := rs.get(ours, size, m, true); ok {
			last = r
			break
		}
	}
	var lastT Result
	for _, m := range []string{"concurrent", "burst", "steady"} {
		if r, ok := rs.get(theirs, size, m, true); ok {
			lastT = r
			break
		}
	}
	fmt.Fprintf(b, "| RSS at the end | %s | %s | %s |\n", mib(lastT.RSS), mib(last.RSS), ratio(float64(lastT.RSS), float64(last.RSS)))
	fmt.Fprintf(b, "| peak RSS | %s | %s | %s |\n\n", mib(lastT.PeakRSS), mib(last.PeakRSS), ratio(float64(lastT.PeakRSS), float64(last.PeakRSS)))
}

func perScrape(v float64, r Result) float64 {
	if r.Scrapes == 0 {
		return 0
	}
	return v / float64(r.Scrapes)
}

func perSec(r Result, ok bool) string {
	if !ok {
		return "not run"
	}
	return fmt.Sprintf("%.1f", r.PerSecond)
}

func count(r Result, ok bool) string {
	if !ok {
		return "not run"
	}
	return fmt.Sprintf("%d (%d)", r.Scrapes, r.Errors)
}

func cpuOrDash(r Result, ok bool) string {
	if !ok {
		return "–"
	}
	return ms(r.CPU)
}

func sweep(b *strings.Builder, rs results, sizes []string, ours, theirs string) {
	fmt.Fprintf(b, "### Scrape latency against series count (steady rate, one scraper)\n\n")
	fmt.Fprintf(b, "| Host | %[1]s series | %[2]s series | %[1]s median | %[2]s median | ratio | %[1]s median, gzip | %[2]s median, gzip | ratio | %[1]s RSS | %[2]s RSS |\n", theirs, ours)
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range sizes {
		so, _ := rs.get(ours, s, "series", false)
		st, _ := rs.get(theirs, s, "series", false)
		po, _ := rs.get(ours, s, "steady", false)
		pt, _ := rs.get(theirs, s, "steady", false)
		go1, _ := rs.get(ours, s, "steady", true)
		gt, _ := rs.get(theirs, s, "steady", true)
		rssO, rssT := go1.RSS, gt.RSS
		if rssO == 0 {
			rssO = po.RSS
		}
		if rssT == 0 {
			rssT = pt.RSS
		}
		fmt.Fprintf(b, "| %s | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", s, st.Series, so.Series,
			ms(pt.P50), ms(po.P50), ratio(pt.P50, po.P50), ms(gt.P50), ms(go1.P50), ratio(gt.P50, go1.P50), mib(rssT), mib(rssO))
	}
	b.WriteString("\n")
	// Memory per series from the two largest hosts we measured.
	if len(sizes) >= 2 {
		small, big := sizes[0], sizes[len(sizes)-1]
		s1, _ := rs.get(ours, small, "series", false)
		s2, _ := rs.get(ours, big, "series", false)
		m1 := rssOf(rs, ours, small)
		m2 := rssOf(rs, ours, big)
		if s2.Series > s1.Series && m2 > 0 && m1 > 0 {
			fmt.Fprintf(b, "Memory per series (%s): (RSS at %d series − RSS at %d series) / %d = %.0f bytes per series; %s RSS/series at %d: %.0f bytes.\n\n",
				ours, s2.Series, s1.Series, s2.Series-s1.Series, float64(m2-m1)/float64(s2.Series-s1.Series), ours, s2.Series, float64(m2)/float64(s2.Series))
		}
	}
}

func rssOf(rs results, exporter, size string) int64 {
	for _, gz := range []bool{true, false} {
		if r, ok := rs.get(exporter, size, "steady", gz); ok && r.RSS > 0 {
			return r.RSS
		}
	}
	return 0
}

func writeDat(path string, rs results, sizes []string, ours, theirs string) error {
	var b strings.Builder
	b.WriteString("# size ours_series ours_p50 ours_p50_gzip theirs_series theirs_p50 theirs_p50_gzip (seconds)\n")
	for _, s := range sizes {
		so, _ := rs.get(ours, s, "series", false)
		st, _ := rs.get(theirs, s, "series", false)
		po, _ := rs.get(ours, s, "steady", false)
		pt, _ := rs.get(theirs, s, "steady", false)
		go1, _ := rs.get(ours, s, "steady", true)
		gt, _ := rs.get(theirs, s, "steady", true)
		fmt.Fprintf(&b, "%s %d %s %s %d %s %s\n", s, so.Series, nanIfZero(po.P50), nanIfZero(go1.P50), st.Series, nanIfZero(pt.P50), nanIfZero(gt.P50))
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// nanIfZero leaves a missing measurement out of the plot.
func nanIfZero(v float64) string {
	if v == 0 {
		return "NaN"
	}
	return fmt.Sprintf("%g", v)
}
