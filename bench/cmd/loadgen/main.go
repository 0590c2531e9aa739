// Command loadgen measures a running exporter for make bench-compare:
// scrape latency under a steady rate and under concurrent scrapers, the
// process's CPU time per scrape and while idle (from /proc/<pid>/stat),
// its resident memory, and the series it serves. Each measurement appends
// one JSON object to the -out file; the report subcommand turns them into
// a Markdown report and a gnuplot data file.
//
//	loadgen series     -url URL -exporter nic -size large -out results.jsonl
//	loadgen idle       -pid PID -duration 30s ...
//	loadgen steady     -url URL -pid PID -rate 2 -n 20 [-gzip] ...
//	loadgen concurrent -url URL -pid PID -c 50 -duration 10s [-gzip] ...
//	loadgen burst      -url URL -pid PID -c 50 -rate 1 -duration 10s [-gzip] ...
//	loadgen report     -in results.jsonl -md report.md -dat plot.dat
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/procfs"
)

// Result is one measurement.
type Result struct {
	Exporter string `json:"exporter"`
	Size     string `json:"size"`
	Mode     string `json:"mode"` // series, idle, steady, concurrent
	Gzip     bool   `json:"gzip,omitempty"`

	// series
	Series   int `json:"series,omitempty"`
	Families int `json:"families,omitempty"`
	Bytes    int `json:"bytes,omitempty"`

	// steady, concurrent
	Concurrency int     `json:"concurrency,omitempty"`
	Rate        float64 `json:"rate_per_scraper,omitempty"` // burst
	Scrapes     int     `json:"scrapes,omitempty"`
	Errors      int     `json:"errors,omitempty"`
	P50         float64 `json:"p50_seconds,omitempty"`
	P90         float64 `json:"p90_seconds,omitempty"`
	P99         float64 `json:"p99_seconds,omitempty"`
	Max         float64 `json:"max_seconds,omitempty"`
	PerSecond   float64 `json:"scrapes_per_second,omitempty"`

	// all modes with a pid
	Wall       float64 `json:"wall_seconds,omitempty"`
	CPU        float64 `json:"cpu_seconds,omitempty"`
	RSS        int64   `json:"rss_bytes,omitempty"`
	PeakRSS    int64   `json:"peak_rss_bytes,omitempty"`
	CPUPerUnit float64 `json:"cpu_seconds_per_scrape,omitempty"`
	// ClientCPU is the load generator's own CPU time: it shares the
	// machine with the exporter.
	ClientCPU float64 `json:"client_cpu_seconds,omitempty"`
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: loadgen series|idle|steady|concurrent|report [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "report":
		err = report(os.Args[2:])
	default:
		err = measure(os.Args[1], os.Args[2:])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

func measure(mode string, args []string) error {
	fs := flag.NewFlagSet(mode, flag.ContinueOnError)
	url := fs.String("url", "", "URL to scrape.")
	pid := fs.Int("pid", 0, "Process id of the exporter, for CPU time and memory.")
	exporter := fs.String("exporter", "", "Exporter name for the report.")
	size := fs.String("size", "", "Host size name for the report.")
	out := fs.String("out", "", "File to append the JSON result to (default stdout).")
	gz := fs.Bool("gzip", false, "Ask for gzip, as Prometheus does.")
	rate := fs.Float64("rate", 1, "steady, burst: scrapes each scraper starts per second (the next starts when the previous ends if it is late).")
	n := fs.Int("n", 10, "steady: number of scrapes.")
	maxTime := fs.Duration("max-time", 60*time.Second, "steady: stop after this long even if fewer than -n scrapes were done (at least 3 are).")
	conc := fs.Int("c", 50, "concurrent, burst: number of scrapers (closed loop for concurrent, at -rate each for burst, all starting together).")
	dur := fs.Duration("duration", 10*time.Second, "idle, concurrent, burst: how long to measure (scrapes in flight at the end are waited for).")
	timeout := fs.Duration("timeout", 120*time.Second, "Timeout of one scrape.")
	if err := fs.Parse(args); err != nil {
		return err
	}
	r := Result{Exporter: *exporter, Size: *size, Mode: mode, Gzip: *gz}
	client := &http.Client{Timeout: *timeout, Transport: &http.Transport{
		DisableCompression: true, MaxIdleConnsPerHost: 256, MaxConnsPerHost: 0,
	}}
	var cpu0 float64
	var err error
	if *pid != 0 {
		if cpu0, err = cpuSeconds(*pid); err != nil {
			return err
		}
	}
	self0, err := cpuSeconds(os.Getpid())
	if err != nil {
		return err
	}
	start := time.Now()
	switch mode {
	case "series":
		body, _, err := scrapeBody(client, *url, false)
		if err != nil {
			return err
		}
		r.Series, r.Families = countSeries(body)
		r.Bytes = len(body)
	case "idle":
		time.Sleep(*dur)
	case "steady":
		var lat []float64
		interval := time.Duration(float64(time.Second) / *rate)
		next := time.Now()
		for i := 0; i < *n && (i < 3 || time.Since(start) < *maxTime); i++ {
			if d := time.Until(next); d > 0 {
				time.Sleep(d)
			}
			next = next.Add(interval)
			_, d, err := scrape(client, *url, *gz)
			if err != nil {
				r.Errors++
				continue
			}
			lat = append(lat, d.Seconds())
		}
		r.Scrapes = len(lat) + r.Errors
		fill(&r, lat)
	case "concurrent", "burst":
		var mu sync.Mutex
		var lat []float64
		var wg sync.WaitGroup
		deadline := time.Now().Add(*dur)
		interval := time.Duration(0)
		if mode == "burst" {
			interval = time.Duration(float64(time.Second) / *rate)
			r.Rate = *rate
		}
		for w := 0; w < *conc; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				next := start
				for time.Now().Before(deadline) {
					if d := time.Until(next); d > 0 {
						time.Sleep(d)
					}
					next = next.Add(interval)
					_, d, err := scrape(client, *url, *gz)
					mu.Lock()
					if err != nil {
						r.Errors++
					} else {
						lat = append(lat, d.Seconds())
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		r.Concurrency = *conc
		r.Scrapes = len(lat) + r.Errors
		fill(&r, lat)
	default:
		return fmt.Errorf("unknown mode %q", mode)
	}
	r.Wall = time.Since(start).Seconds()
	if self1, err := cpuSeconds(os.Getpid()); err == nil {
		r.ClientCPU = self1 - self0
	}
	if r.Scrapes > 0 {
		r.PerSecond = float64(r.Scrapes) / r.Wall
	}
	if *pid != 0 {
		cpu1, err := cpuSeconds(*pid)
		if err != nil {
			return err
		}
		r.CPU = cpu1 - cpu0
		if r.Scrapes > 0 {
			r.CPUPerUnit = r.CPU / float64(r.Scrapes)
		}
		if r.RSS, r.PeakRSS, err = memory(*pid); err != nil {
			return err
		}
	}
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	fmt.Fprintf(os.Stderr, "%s", line)
	if *out == "" {
		_, err = os.Stdout.Write(line)
		return err
	}
	f, err := os.OpenFile(*out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(line); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// scrape fetches url once as Prometheus would, reads the raw body into a
// small reused buffer and returns its length and the time from sending
// the request to reading the last byte. It keeps the client's own work
// small: the load generator shares the CPUs with the exporter.
func scrape(c *http.Client, url string, gz bool) (int64, time.Duration, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
	if gz {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return 0, 0, err
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	d := time.Since(start)
	if err != nil {
		return 0, 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
	}
	return n, d, nil
}

// scrapeBody is scrape that returns the body.
func scrapeBody(c *http.Client, url string, gz bool) ([]byte, time.Duration, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
	if gz {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return nil, 0, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	d := time.Since(start)
	if err != nil {
		return nil, 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
	}
	return body, d, nil
}

// countSeries counts the samples and the metric families of a scrape in
// the text format.
func countSeries(body []byte) (series, families int) {
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
		case bytes.HasPrefix(line, []byte("# TYPE ")):
			families++
		case line[0] == '#':
		default:
			series++
		}
	}
	return series, families
}

func fill(r *Result, lat []float64) {
	if len(lat) == 0 {
		return
	}
	sort.Float64s(lat)
	q := func(p float64) float64 {
		i := int(p*float64(len(lat))+0.5) - 1
		if i < 0 {
			i = 0
		}
		if i >= len(lat) {
			i = len(lat) - 1
		}
		return lat[i]
	}
	r.P50, r.P90, r.P99, r.Max = q(0.5), q(0.9), q(0.99), lat[len(lat)-1]
}

// cpuSeconds returns the user plus system CPU time of pid, read from
// /proc/<pid>/stat with procfs.
func cpuSeconds(pid int) (float64, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0, err
	}
	st, err := p.Stat()
	if err != nil {
		return 0, err
	}
	return st.CPUTime(), nil
}

// memory returns the resident set size and its peak (VmRSS, VmHWM).
func memory(pid int) (rss, peak int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/%d/status: %s: %w", pid, k, err)
		}
		if k == "VmRSS" {
			rss = kb * 1024
		} else {
			peak = kb * 1024
		}
	}
	return rss, peak, nil
}
