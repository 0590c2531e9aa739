package deploy

import (
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/prometheus/promql/parser"
	corev1 "k8s.io/api/core/v1"
)

// scrapeJobs returns the job label the Prometheus Operator gives the
// targets of each endpoint of sm, whose targets are the pods behind svc:
// the value of svc's label sm.Spec.JobLabel when it has one, else svc's
// name, then the endpoint's relabelings that set job (in order; the
// operator appends them to its own). A relabeling that computes job from
// source labels fails the test: this model does not evaluate it.
func scrapeJobs(t *testing.T, svc *corev1.Service, sm *monitoringv1.ServiceMonitor) []string {
	t.Helper()
	base := svc.Name
	if v, ok := svc.Labels[sm.Spec.JobLabel]; sm.Spec.JobLabel != "" && ok {
		base = v
	}
	var out []string
	for _, ep := range sm.Spec.Endpoints {
		job := base
		for _, r := range ep.RelabelConfigs {
			if r.TargetLabel != "job" {
				continue
			}
			if len(r.SourceLabels) != 0 || r.Replacement == nil || (r.Action != "" && r.Action != "replace") {
				t.Fatalf("endpoint %s: relabeling %+v computes job in a way this test does not model", ep.Path, r)
			}
			job = *r.Replacement
		}
		out = append(out, job)
	}
	return out
}

// unmatchedRules returns the rules of the shipped files with a vector
// selector whose job matcher does not match job (or, with want false,
// with one that does).
func unmatchedRules(t *testing.T, job string, want bool) []string {
	t.Helper()
	var out []string
	p := parser.NewParser(parser.Options{})
	rules := alertRules(t)
	for name, r := range recordingRules(t) {
		rules[name] = r
	}
	for _, name := range sortedKeys(rules) {
		expr, err := p.ParseExpr(exprOf(rules[name]))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		bad := false
		parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
			s, ok := n.(*parser.VectorSelector)
			if !ok {
				return nil
			}
			for _, m := range s.LabelMatchers {
				if m.Name == "job" && m.Matches(job) != want {
					bad = true
				}
			}
			return nil
		})
		if bad {
			out = append(out, name)
		}
	}
	return out
}

// TestScrapeJobMatchesAlerts renders the chart with nameOverride (and
// with fullnameOverride) and the kustomize base under an overlay's
// namePrefix, each with the detail scrape, and checks that the job label
// the Prometheus Operator gives the /metrics scrape is matched by the job
// matcher of every vector selector of the shipped alerts and recording
// rules, and the detail scrape's by none. The renamed objects show that
// the names did change; the job did not.
func TestScrapeJobMatchesAlerts(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    rendered
		// renamed is the Service's new name or app.kubernetes.io/name.
		renamed string
	}{
		{"helm nameOverride", helmTemplate(t, "nameOverride=nics", "serviceMonitor.enabled=true",
			"serviceMonitor.detail.enabled=true", "prometheusRule.enabled=true"), "nics"},
		{"helm fullnameOverride", helmTemplate(t, "fullnameOverride=gpu-nics", "serviceMonitor.enabled=true",
			"serviceMonitor.detail.enabled=true"), "gpu-nics"},
		{"kustomize namePrefix", renderOverlay(t, "namePrefix: gpu-\nresources:\n  - ../"+kustomizeBase+
			"\ncomponents:\n  - ../"+detailComponent+"\n"), "gpu-nic-exporter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.r.service.Name != tc.renamed && tc.r.service.Labels["app.kubernetes.io/name"] != tc.renamed {
				t.Fatalf("Service %s with labels %v: the rendering did not rename it to %s", tc.r.service.Name, tc.r.service.Labels, tc.renamed)
			}
			jobs := scrapeJobs(t, tc.r.service, tc.r.serviceMonitor)
			if len(jobs) != 2 {
				t.Fatalf("jobs %v, want /metrics and /metrics/detail", jobs)
			}
			if bad := unmatchedRules(t, jobs[0], true); len(bad) != 0 {
				t.Errorf("the /metrics scrape's job %q is not matched by the selectors of %s", jobs[0], strings.Join(bad, ", "))
			}
			if bad := unmatchedRules(t, jobs[1], false); len(bad) != 0 {
				t.Errorf("the detail scrape's job %q is matched by the selectors of %s", jobs[1], strings.Join(bad, ", "))
			}
		})
	}

	// A job the shipped rules do not match is refused next to them, and
	// accepted for rules of one's own.
	if out, err := helmRun("template", "nic-exporter", helmChart, "--set", "serviceMonitor.enabled=true",
		"--set", "serviceMonitor.job=nics", "--set", "prometheusRule.enabled=true"); err == nil {
		t.Errorf("serviceMonitor.job=nics with the PrometheusRule rendered, want a refusal:\n%.300s", out)
	}
	r := helmTemplate(t, "serviceMonitor.enabled=true", "serviceMonitor.job=nics")
	if jobs := scrapeJobs(t, r.service, r.serviceMonitor); len(jobs) != 1 || jobs[0] != "nics" {
		t.Errorf("serviceMonitor.job=nics: jobs %v", jobs)
	}
}
