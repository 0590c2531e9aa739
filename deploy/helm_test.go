package deploy

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

const (
	// releaseImage is where make publish pushes the release image
	// (tools/release/publish.go); its tag is the release version, the
	// chart's appVersion.
	releaseImage = "ghcr.io/nic-exporter/nic_exporter"
	helmChart    = "helm/nic-exporter"
	// helmModFile pins Helm (tools/helm/go.mod).
	helmModFile = "../tools/helm/go.mod"
)

// chartAppVersion reads the chart's appVersion: the release version as
// make release writes it (0.1.0 for the tag v0.1.0).
func chartAppVersion(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(helmChart, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(data, &chart); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`).MatchString(chart.AppVersion) {
		t.Fatalf("Chart.yaml appVersion %q: want a release version without a v, as make release writes it", chart.AppVersion)
	}
	return chart.AppVersion
}

// helm runs the pinned Helm with args and returns its standard output;
// it fails the test when Helm fails.
func helm(t *testing.T, args ...string) []byte {
	t.Helper()
	out, err := helmRun(args...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// helmBinary is the pinned Helm's executable in the Go build cache,
// built by the first go tool -n (which prints the path instead of running
// it); running it directly saves the go command's two seconds per call.
var helmBinary = sync.OnceValues(func() (string, error) {
	modfile, err := filepath.Abs(helmModFile)
	if err != nil {
		return "", err
	}
	out, err := exec.Command("go", "tool", "-n", "-modfile="+modfile, "helm").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go tool -n helm: %w\n%s", err, out)
	}
	return strings.TrimSpace(string(out)), nil
})

// helmRun runs the pinned Helm with args and returns its standard output,
// or its combined output when it fails.
func helmRun(args ...string) ([]byte, error) {
	bin, err := helmBinary()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	// lint and template keep no state; keep Helm's cache and config out
	// of the user's home all the same.
	dir, err := os.MkdirTemp("", "helm-home-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+dir, "HELM_CONFIG_HOME="+dir, "HELM_DATA_HOME="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return append(out, stderr.Bytes()...), err
	}
	return out, nil
}

// allOptIns are the values that turn on every opt-in: VMA, the kernel
// log, devlink capture, transceivers, TLS, the ServiceMonitor and the PrometheusRule.
var allOptIns = []string{
	"vma.enabled=true", "kernelLog.enabled=true", "devlinkCapture.enabled=true", "transceivers.enabled=true",
	"webConfig.enabled=true", "serviceMonitor.enabled=true", "prometheusRule.enabled=true",
}

// helmTemplate renders the chart as release nic-exporter in namespace
// monitoring with the --set values, and decodes every object strictly
// into its API type, like render does for kustomize.
func helmTemplate(t *testing.T, set ...string) rendered {
	t.Helper()
	args := []string{"template", "nic-exporter", helmChart, "--namespace", "monitoring"}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	return decodeManifests(t, helm(t, args...))
}

// decodeManifests strictly decodes a multi-document YAML stream of the
// kinds the deployment has.
func decodeManifests(t *testing.T, stream []byte) rendered {
	t.Helper()
	var out rendered
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(stream), -1) {
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("%v in\n%s", err, doc)
		}
		if meta.Kind == "" {
			continue
		}
		out.add(t, "chart", meta.Kind, meta.Metadata.Name, meta.APIVersion, meta.Metadata.Namespace, []byte(doc))
	}
	if out.daemonSet == nil || out.service == nil || out.serviceAccount == nil {
		t.Fatalf("want at least a DaemonSet, Service and ServiceAccount, got %+v", out)
	}
	return out
}

// TestHelmLint lints the chart strictly with the default values and with
// every opt-in.
func TestHelmLint(t *testing.T) {
	helm(t, "lint", "--strict", helmChart)
	args := []string{"lint", "--strict", helmChart}
	for _, s := range allOptIns {
		args = append(args, "--set", s)
	}
	helm(t, args...)
}

// TestHelmDefaults renders the default values: the least-privilege
// DaemonSet, the same as the kustomize base (arguments included), no
// ServiceMonitor or PrometheusRule (their CRDs may be missing), and a job
// label the alerts match.
func TestHelmDefaults(t *testing.T) {
	r := helmTemplate(t)
	checkLeastPrivilege(t, r.daemonSet)
	kds := renderWithComponents(t).daemonSet
	if diff := cmp.Diff(privilegesOf(t, kds), privilegesOf(t, r.daemonSet)); diff != "" {
		t.Errorf("the chart's default DaemonSet differs from the kustomize base's (-kustomize +helm):\n%s", diff)
	}
	// The rest of the pod that a reviewer would compare: scheduling,
	// resources, port and probes.
	type podShape struct {
		NodeSelector      map[string]string
		Tolerations       []corev1.Toleration
		PriorityClassName string
		DNSPolicy         corev1.DNSPolicy
		Requests          map[corev1.ResourceName]string
		Limits            map[corev1.ResourceName]string
		Ports             []corev1.ContainerPort
		Liveness          string
		Readiness         string
		UpdateStrategy    appsv1.DaemonSetUpdateStrategy
	}
	shape := func(ds *appsv1.DaemonSet) podShape {
		c := container(t, ds)
		probe := func(p *corev1.Probe) string {
			if p == nil || p.HTTPGet == nil {
				return fmt.Sprintf("%+v", p)
			}
			scheme := p.HTTPGet.Scheme
			if scheme == "" {
				scheme = corev1.URISchemeHTTP
			}
			return fmt.Sprintf("%s %s %s period %d timeout %d", scheme, p.HTTPGet.Path, p.HTTPGet.Port.String(), p.PeriodSeconds, p.TimeoutSeconds)
		}
		// resource.Quantity has unexported fields: compare the strings.
		quantities := func(l corev1.ResourceList) map[corev1.ResourceName]string {
			out := make(map[corev1.ResourceName]string)
			for k, v := range l {
				out[k] = v.String()
			}
			return out
		}
		spec := ds.Spec.Template.Spec
		return podShape{spec.NodeSelector, spec.Tolerations, spec.PriorityClassName, spec.DNSPolicy,
			quantities(c.Resources.Requests), quantities(c.Resources.Limits), c.Ports,
			probe(c.LivenessProbe), probe(c.ReadinessProbe), ds.Spec.UpdateStrategy}
	}
	if diff := cmp.Diff(shape(kds), shape(r.daemonSet)); diff != "" {
		t.Errorf("the chart's default pod differs from the kustomize base's (-kustomize +helm):\n%s", diff)
	}
	if r.serviceMonitor != nil || r.prometheusRule != nil {
		t.Error("the defaults must render no ServiceMonitor or PrometheusRule")
	}
	spec := r.daemonSet.Spec.Template.Spec
	if len(spec.Tolerations) != 1 || spec.Tolerations[0].Operator != corev1.TolerationOpExists {
		t.Errorf("tolerations %+v, want one that tolerates every taint", spec.Tolerations)
	}
	if spec.PriorityClassName != "system-node-critical" || spec.NodeSelector["kubernetes.io/os"] != "linux" {
		t.Errorf("priorityClassName %q, nodeSelector %v", spec.PriorityClassName, spec.NodeSelector)
	}
	c := container(t, r.daemonSet)
	if want := releaseImage + ":" + chartAppVersion(t); c.Image != want || container(t, kds).Image != want {
		t.Errorf("image %s, kustomize base %s; want %s, the chart's appVersion as tag", c.Image, container(t, kds).Image, want)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() || !c.Resources.Limits.Cpu().IsZero() {
		t.Errorf("resources %+v: want CPU and memory requests, a memory limit, no CPU limit", c.Resources)
	}
	for k, v := range r.service.Spec.Selector {
		if r.daemonSet.Spec.Template.Labels[k] != v {
			t.Errorf("Service selects %s=%s, the pods have %v", k, v, r.daemonSet.Spec.Template.Labels)
		}
	}
	checkArgs(t, c.Args)
}

// TestHelmOptIns renders each opt-in value alone and all together, and
// checks that each adds exactly the privileges of the kustomize
// component that stands for it; all together must equal the base with
// every component, arguments included.
func TestHelmOptIns(t *testing.T) {
	base := privilegesOf(t, helmTemplate(t).daemonSet)
	for _, tc := range []struct {
		set  string
		want func(*privileges)
	}{
		{"vma.enabled=true", wantVMA},
		{"kernelLog.enabled=true", wantKernelLog},
		{"kernelLog.enabled=true,kernelLog.access=privileged", wantKernelLogPrivileged},
		{"devlinkCapture.enabled=true", wantDevlinkCapture},
		{"webConfig.enabled=true", wantTLS},
		{"transceivers.enabled=true", wantTransceivers},
		{"serviceMonitor.enabled=true", func(*privileges) {}},
		{"prometheusRule.enabled=true", func(*privileges) {}},
	} {
		t.Run(tc.set, func(t *testing.T) {
			r := helmTemplate(t, tc.set)
			want := base.clone()
			tc.want(&want)
			if diff := cmp.Diff(want, privilegesOf(t, r.daemonSet)); diff != "" {
				t.Errorf("privileges (-want +got):\n%s", diff)
			}
			checkVolumes(t, r.daemonSet)
		})
	}

	// Helm and kustomize agree on transceivers alone and with devlink
	// capture (NET_ADMIN once in both).
	for _, tc := range []struct {
		set        []string
		components []string
	}{
		{[]string{"transceivers.enabled=true"}, []string{transceiversComponent}},
		{[]string{"kernelLog.enabled=true"}, []string{kernelLogComponent}},
		{[]string{"kernelLog.enabled=true", "kernelLog.access=privileged"}, []string{kernelLogPrivilegedComponent}},
		{[]string{"transceivers.enabled=true", "devlinkCapture.enabled=true"}, []string{devlinkCaptureComponent, transceiversComponent}},
	} {
		h := privilegesOf(t, helmTemplate(t, tc.set...).daemonSet)
		k := privilegesOf(t, renderWithComponents(t, tc.components...).daemonSet)
		if diff := cmp.Diff(k, h); diff != "" {
			t.Errorf("%v: the chart's DaemonSet differs from kustomize's with %v (-kustomize +helm):\n%s", tc.set, tc.components, diff)
		}
	}

	r := helmTemplate(t, allOptIns...)
	k := renderWithComponents(t, vmaComponent, kernelLogComponent, devlinkCaptureComponent, transceiversComponent, tlsComponent)
	if diff := cmp.Diff(privilegesOf(t, k.daemonSet), privilegesOf(t, r.daemonSet)); diff != "" {
		t.Errorf("every opt-in: the chart's DaemonSet differs from kustomize's with every component (-kustomize +helm):\n%s", diff)
	}
	checkArgs(t, container(t, r.daemonSet).Args)

	// The ServiceMonitor scrapes over verified HTTPS with job nic-exporter
	// whatever the release's name, and the PrometheusRule carries the
	// rule files' groups unchanged.
	sm := r.serviceMonitor
	if sm == nil || r.prometheusRule == nil {
		t.Fatal("every opt-in: want a ServiceMonitor and a PrometheusRule")
	}
	if jobs := scrapeJobs(t, r.service, sm); len(jobs) != 1 || jobs[0] != "nic-exporter" {
		t.Errorf("ServiceMonitor jobs %v, want nic-exporter (TestScrapeJobMatchesAlerts renames the release)", jobs)
	}
	ep := sm.Spec.Endpoints[0]
	if ep.Scheme == nil || string(*ep.Scheme) != "https" || ep.TLSConfig == nil || ep.TLSConfig.CA.Secret == nil ||
		ep.TLSConfig.CA.Secret.Name != "nic-exporter-web-config" || ep.TLSConfig.ServerName == nil || *ep.TLSConfig.ServerName != "nic-exporter" {
		t.Errorf("ServiceMonitor endpoint %+v, want https verified with ca.crt of the web config Secret", ep)
	}
	for _, p := range []*corev1.Probe{container(t, r.daemonSet).LivenessProbe, container(t, r.daemonSet).ReadinessProbe} {
		if p.HTTPGet == nil || p.HTTPGet.Scheme != corev1.URISchemeHTTPS {
			t.Errorf("probe %+v, want HTTPS", p)
		}
	}
	if diff := cmp.Diff(wantPrometheusRule(t).Spec.Groups, r.prometheusRule.Spec.Groups); diff != "" {
		t.Errorf("the chart's PrometheusRule differs from deploy/prometheus/*.yml (-files +chart):\n%s", diff)
	}
	if ks := k.serviceMonitor.Spec.Endpoints[0]; ks.Scheme == nil || *ks.Scheme != *ep.Scheme || *ks.TLSConfig.ServerName != *ep.TLSConfig.ServerName {
		t.Errorf("TLS scrape: kustomize %+v, helm %+v", ks, ep)
	}
}

// TestHelmValues checks the values that change more than a privilege:
// collector switches and flags (accepted by the exporter), image digest,
// basic auth probes and scrape, the detail endpoint, and the refusals of
// contradicting or misspelt values.
func TestHelmValues(t *testing.T) {
	r := helmTemplate(t,
		"collectors.kmsg.enabled=false", "collectors.vma.enabled=false",
		"collectors.ethtool.flags.per-queue=drop", "collectors.netdev.flags.interval=10s",
		"collectors.infiniband.flags.device-exclude=mlx5_[4-7]",
		"log.level=debug", "extraArgs={--web.max-requests=8}",
		"image.digest=sha256:"+strings.Repeat("ab", 32),
		"nodeSelector.node-role\\.kubernetes\\.io/gpu=true", "priorityClassName=",
	)
	c := container(t, r.daemonSet)
	for _, want := range []string{
		"--no-collector.kmsg", "--no-collector.vma", "--collector.ethtool.per-queue=drop",
		"--collector.netdev.interval=10s", "--collector.infiniband.device-exclude=mlx5_[4-7]",
		"--log.level=debug", "--web.max-requests=8",
	} {
		if !strings.Contains(strings.Join(c.Args, " "), want) {
			t.Errorf("args %v lack %s", c.Args, want)
		}
	}
	checkArgs(t, c.Args)
	checkLeastPrivilege(t, r.daemonSet)
	if !strings.HasSuffix(c.Image, "@sha256:"+strings.Repeat("ab", 32)) {
		t.Errorf("image %s, want the digest", c.Image)
	}
	if spec := r.daemonSet.Spec.Template.Spec; spec.PriorityClassName != "" || spec.NodeSelector["node-role.kubernetes.io/gpu"] != "true" {
		t.Errorf("priorityClassName %q, nodeSelector %v", spec.PriorityClassName, spec.NodeSelector)
	}

	r = helmTemplate(t, "webConfig.enabled=true", "webConfig.basicAuth=true",
		"serviceMonitor.enabled=true", "serviceMonitor.basicAuthSecret=scrape-auth", "serviceMonitor.detail.enabled=true")
	for _, p := range []*corev1.Probe{container(t, r.daemonSet).LivenessProbe, container(t, r.daemonSet).ReadinessProbe} {
		if p.TCPSocket == nil || p.HTTPGet != nil {
			t.Errorf("basic auth: probe %+v, want a TCP connect (the kubelet cannot authenticate)", p)
		}
	}
	eps := r.serviceMonitor.Spec.Endpoints
	if len(eps) != 2 || eps[1].Path != "/metrics/detail" || eps[1].Interval != "10m" {
		t.Fatalf("endpoints %+v, want /metrics and /metrics/detail every 10m", eps)
	}
	for _, ep := range eps {
		if ep.BasicAuth == nil || ep.BasicAuth.Username.Name != "scrape-auth" {
			t.Errorf("endpoint %s: basicAuth %+v, want the Secret scrape-auth", ep.Path, ep.BasicAuth)
		}
	}

	for _, bad := range [][]string{
		{"vma.enabled=true", "collectors.vma.enabled=false"},
		{"kernelLog.enabled=true", "collectors.kmsg.enabled=false"},
		{"devlinkCapture.enabled=true", "collectors.devlink.enabled=false"},
		{"transceivers.enabled=true", "collectors.phy.enabled=false"},
		{"transceivers.enabled=yes"},
		{"transceivers.enable=true"},
		{"collectors.vma.flags.stats-dir=/tmp"},
		{"collectors.netdev.enabeld=false"},
		{"kernellog.enabled=true"},
		{"kernelLog.enabled=true", "kernelLog.access=hostpath"},
		{"kernelLog.enabled=true", "kernelLog.deviceResource="},
		{"kernelLog.enabled=true", "kernelLog.deviceResource=kmsg"},
		{"webConfig.enabled=true", "webConfig.basicAuth=true", "serviceMonitor.enabled=true"},
	} {
		args := []string{"template", "nic-exporter", helmChart}
		for _, s := range bad {
			args = append(args, "--set", s)
		}
		if out, err := helmRun(args...); err == nil {
			t.Errorf("helm template with %v succeeded, want a refusal:\n%.300s", bad, out)
		}
	}
}

// TestHelmRulesCopy fails when the chart's copies of the rule files
// differ from deploy/prometheus: Helm cannot read files outside the
// chart, so make helm-rules copies them.
func TestHelmRulesCopy(t *testing.T) {
	for _, f := range []string{alertsFile, rulesFile} {
		want, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		copied := filepath.Join(helmChart, "files", filepath.Base(f))
		got, err := os.ReadFile(copied)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(want, got) {
			t.Errorf("%s is stale: run make helm-rules", copied)
		}
	}
}
