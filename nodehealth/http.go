package nodehealth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
)

// Handler serves the latest verdict as JSON, with HTTP status 200
// whatever the verdict: the status says that the endpoint answered, the
// body's "status" field what it found (a node with a sick NIC is no
// reason to fail a liveness probe or a landing page's link). It reads the verdict with one atomic load: it never waits
// for an evaluation, a collector or a device.
func (e *Evaluator) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		v := e.Verdict()
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			http.Error(w, fmt.Sprintf("encoding the verdict: %v", err), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(append(b, '\n'))
	})
}

// maxVerdictBytes bounds the answer Fetch reads: a verdict of every
// condition with evidence on a large host is a few tens of kilobytes.
const maxVerdictBytes = 4 << 20

// Fetch reads the verdict from the /health endpoint at url. An answer
// that is not HTTP 200 with a verdict is an error.
func Fetch(ctx context.Context, client *http.Client, url string) (*Verdict, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("node health URL %q: %w", url, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading the node health: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		return nil, fmt.Errorf("reading the node health from %s: HTTP %s: %q", url, resp.Status, b)
	}
	return decodeVerdict(io.LimitReader(resp.Body, maxVerdictBytes), resp.Status)
}

// decodeVerdict parses the JSON verdict of a /health answer of the given
// HTTP status.
func decodeVerdict(r io.Reader, status string) (*Verdict, error) {
	var v Verdict
	dec := json.NewDecoder(r)
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("the node health answer (HTTP %s) is not a verdict: %w", status, err)
	}
	switch v.Status {
	case VerdictOK, VerdictUnhealthy, VerdictUnknown:
	case "":
		return nil, errors.New("the node health answer has no status: is the URL the exporter's /health?")
	default:
		return nil, fmt.Errorf("the node health answer has an unknown status %q", v.Status)
	}
	return &v, nil
}

// conditionDescHelp is the help text of nic_exporter_node_condition.
const conditionDescHelp = "Node conditions of the NIC verdict (docs/node-health.md): 1 while the condition is true, 0 while it is false or the verdict is unknown. The reason label is the condition's one reason; it does not change with the value."

// Collector returns a Prometheus collector of nic_exporter_node_condition,
// one series per condition, and of
// nic_exporter_node_health_snapshot_errors_total. It reads the latest
// verdict and a counter only.
func (e *Evaluator) Collector() prometheus.Collector {
	return &conditionCollector{
		e:      e,
		desc:   prometheus.NewDesc("nic_exporter_node_condition", conditionDescHelp, []string{"condition", "reason"}, nil),
		errors: prometheus.NewDesc("nic_exporter_node_health_snapshot_errors_total", "Collector snapshots the node verdict could not read (logged once per collector and error); the collector's last readable snapshot stands in.", nil, nil),
	}
}

type conditionCollector struct {
	e      *Evaluator
	desc   *prometheus.Desc
	errors *prometheus.Desc
}

func (c *conditionCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.desc
	ch <- c.errors
}

func (c *conditionCollector) Collect(ch chan<- prometheus.Metric) {
	v := c.e.Verdict()
	active := make(map[string]bool, len(v.Conditions))
	for _, x := range v.Conditions {
		active[x.Type] = x.Status == StatusTrue
	}
	for _, d := range c.e.cfg.Definitions {
		val := 0.0
		if active[d.Type] {
			val = 1
		}
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, val, d.Type, d.Reason)
	}
	ch <- prometheus.MustNewConstMetric(c.errors, prometheus.CounterValue, float64(c.e.errors.Load()))
}
