package deploy

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "regenerate kubernetes/prometheusrule.yaml from the rule files")

const (
	kustomizeBase      = "kubernetes"
	kernelLogComponent = "kubernetes/components/kernel-log"
	// kernelLogPrivilegedComponent is the kernel-log fallback for
	// clusters without a device plugin for /dev/kmsg.
	kernelLogPrivilegedComponent = "kubernetes/components/kernel-log-privileged"
	vmaComponent                 = "kubernetes/components/vma"
	tlsComponent                 = "kubernetes/components/tls"
	// devlinkCaptureComponent adds the evidence capture directory.
	devlinkCaptureComponent = "kubernetes/components/devlink-capture"
	detailComponent         = "kubernetes/components/detail-scrape"
	// transceiversComponent grants the module EEPROM reads.
	transceiversComponent   = "kubernetes/components/transceivers"
	nodeConditionsComponent = "kubernetes/components/node-conditions"
	nodeTaintComponent      = "kubernetes/components/node-taint"
	prometheusRuleFile      = "kubernetes/prometheusrule.yaml"
)

// rendered is the output of a kustomization, each object strictly decoded
// into its Kubernetes API type.
type rendered struct {
	daemonSet      *appsv1.DaemonSet
	service        *corev1.Service
	serviceAccount *corev1.ServiceAccount
	serviceMonitor *monitoringv1.ServiceMonitor
	prometheusRule *monitoringv1.PrometheusRule
	// The cluster-scoped objects of the node conditions' opt-in.
	clusterRole        *rbacv1.ClusterRole
	clusterRoleBinding *rbacv1.ClusterRoleBinding
	policy             *admissionv1.ValidatingAdmissionPolicy
	policyBinding      *admissionv1.ValidatingAdmissionPolicyBinding
}

// decodeStrict decodes doc into a new T, failing the test on an unknown
// or misspelt field or a wrong type.
func decodeStrict[T any](t *testing.T, where, kind, name string, doc []byte) *T {
	t.Helper()
	obj := new(T)
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		t.Errorf("%s: %s %s does not decode strictly into the API type: %v", where, kind, name, err)
	}
	return obj
}

// add strictly decodes doc, one object of the given kind, into its
// Kubernetes API type in r and checks its apiVersion and namespace; where
// names the kustomization or chart in errors. An unknown or misspelt
// field, a wrong type or an unexpected kind fails the test.
func (r *rendered) add(t *testing.T, where, kind, name, apiVersion, namespace string, doc []byte) {
	t.Helper()
	switch kind {
	case "DaemonSet":
		r.daemonSet = decodeStrict[appsv1.DaemonSet](t, where, kind, name, doc)
	case "Service":
		r.service = decodeStrict[corev1.Service](t, where, kind, name, doc)
	case "ServiceAccount":
		r.serviceAccount = decodeStrict[corev1.ServiceAccount](t, where, kind, name, doc)
	case "ServiceMonitor":
		r.serviceMonitor = decodeStrict[monitoringv1.ServiceMonitor](t, where, kind, name, doc)
	case "PrometheusRule":
		r.prometheusRule = decodeStrict[monitoringv1.PrometheusRule](t, where, kind, name, doc)
	case "ClusterRole":
		r.clusterRole = decodeStrict[rbacv1.ClusterRole](t, where, kind, name, doc)
	case "ClusterRoleBinding":
		r.clusterRoleBinding = decodeStrict[rbacv1.ClusterRoleBinding](t, where, kind, name, doc)
	case "ValidatingAdmissionPolicy":
		r.policy = decodeStrict[admissionv1.ValidatingAdmissionPolicy](t, where, kind, name, doc)
	case "ValidatingAdmissionPolicyBinding":
		r.policyBinding = decodeStrict[admissionv1.ValidatingAdmissionPolicyBinding](t, where, kind, name, doc)
	default:
		t.Errorf("%s: unexpected kind %s", where, kind)
		return
	}
	want := map[string]string{
		"DaemonSet": "apps/v1", "Service": "v1", "ServiceAccount": "v1",
		"ServiceMonitor": "monitoring.coreos.com/v1", "PrometheusRule": "monitoring.coreos.com/v1",
		"ClusterRole": "rbac.authorization.k8s.io/v1", "ClusterRoleBinding": "rbac.authorization.k8s.io/v1",
		"ValidatingAdmissionPolicy": "admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding": "admissionregistration.k8s.io/v1",
	}[kind]
	if apiVersion != want {
		t.Errorf("%s: %s has apiVersion %s, want %s", where, kind, apiVersion, want)
	}
	if strings.HasPrefix(kind, "Cluster") || strings.HasPrefix(kind, "ValidatingAdmissionPolicy") {
		if namespace != "" {
			t.Errorf("%s: the cluster-scoped %s %s has namespace %q", where, kind, name, namespace)
		}
		return
	}
	if namespace != "monitoring" {
		t.Errorf("%s: %s %s in namespace %q, want monitoring", where, kind, name, namespace)
	}
}

// render builds the kustomization in dir with the real kustomize library
// and decodes every object strictly: an unknown or misspelt field, a
// wrong type or an unexpected kind fails the test.
func render(t *testing.T, fs filesys.FileSystem, dir string) rendered {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(fs, dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var out rendered
	for _, res := range m.Resources() {
		b, err := res.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		out.add(t, dir, res.GetKind(), res.GetName(), res.GetApiVersion(), res.GetNamespace(), b)
	}
	if out.daemonSet == nil || out.service == nil || out.serviceAccount == nil || out.serviceMonitor == nil || out.prometheusRule == nil {
		t.Fatalf("%s: want a DaemonSet, Service, ServiceAccount, ServiceMonitor and PrometheusRule, got %+v", dir, out)
	}
	return out
}

func container(t *testing.T, ds *appsv1.DaemonSet) corev1.Container {
	t.Helper()
	cs := ds.Spec.Template.Spec.Containers
	if len(cs) != 1 {
		t.Fatalf("DaemonSet has %d containers, want 1", len(cs))
	}
	return cs[0]
}

func capabilities(c corev1.Container) []string {
	var out []string
	if c.SecurityContext != nil && c.SecurityContext.Capabilities != nil {
		for _, c := range c.SecurityContext.Capabilities.Add {
			out = append(out, string(c))
		}
	}
	sort.Strings(out)
	return out
}

func mounts(c corev1.Container) map[string]corev1.VolumeMount {
	out := make(map[string]corev1.VolumeMount)
	for _, m := range c.VolumeMounts {
		out[m.MountPath] = m
	}
	return out
}

// TestKustomizeBase checks the base's manifests and what the issue asks of
// the DaemonSet: least privilege (uid 65534, no capabilities, no host PID
// namespace, no writable host path, read-only root, RuntimeDefault
// seccomp), host network, /sys read-only, resources, tolerations; and
// that the exporter accepts its arguments.
// TestKustomizeOverlayExample builds the overlay example of
// deploy/README.md against the local base: its images entry must tag the
// image as make release versions it (the chart's appVersion, no v), and
// its ?ref= the git tag, v<appVersion>.
func TestKustomizeOverlayExample(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```yaml\n(# kustomization.yaml of your overlay\n.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no overlay example (a yaml block starting with \"# kustomization.yaml of your overlay\")")
	}
	var overlay struct {
		Resources  []string         `json:"resources"`
		Components []string         `json:"components"`
		Images     []map[string]any `json:"images"`
	}
	if err := yaml.Unmarshal(m[1], &overlay); err != nil {
		t.Fatal(err)
	}
	appVersion := chartAppVersion(t)
	for _, ref := range append(overlay.Resources, overlay.Components...) {
		if _, tag, _ := strings.Cut(ref, "?ref="); tag != "v"+appVersion {
			t.Errorf("overlay example: %s, want ?ref=v%s (the release tag)", ref, appVersion)
		}
	}
	if len(overlay.Images) != 1 || overlay.Images[0]["name"] != releaseImage || overlay.Images[0]["newTag"] != appVersion {
		t.Fatalf("overlay example images %v, want one that sets %s's newTag to %s (make release's version of the tag v%s)",
			overlay.Images, releaseImage, appVersion, appVersion)
	}

	// The example's images entry on the local base.
	base, err := filepath.Abs(kustomizeBase)
	if err != nil {
		t.Fatal(err)
	}
	images, err := yaml.Marshal(overlay.Images)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rel, err := filepath.Rel(dir, base) // kustomize takes no absolute base
	if err != nil {
		t.Fatal(err)
	}
	kustomization := "resources: [" + rel + "]\nimages:\n" + string(images)
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
		t.Fatal(err)
	}
	c := container(t, render(t, filesys.MakeFsOnDisk(), dir).daemonSet)
	if want := releaseImage + ":" + appVersion; c.Image != want {
		t.Errorf("the overlay example renders image %s, want %s", c.Image, want)
	}
}

func TestKustomizeBase(t *testing.T) {
	r := render(t, filesys.MakeFsOnDisk(), kustomizeBase)
	ds := r.daemonSet
	spec := ds.Spec.Template.Spec
	checkLeastPrivilege(t, ds)
	if !spec.HostNetwork {
		t.Error("hostNetwork must be true: the collectors read the node's interfaces and devlink devices")
	}
	if spec.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
		t.Errorf("dnsPolicy %s, want ClusterFirstWithHostNet with hostNetwork", spec.DNSPolicy)
	}
	if len(spec.Tolerations) != 1 || spec.Tolerations[0].Operator != corev1.TolerationOpExists || spec.Tolerations[0].Key != "" {
		t.Errorf("tolerations %+v: want one that tolerates every taint", spec.Tolerations)
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Error("the pod must not mount a service account token: the exporter uses no Kubernetes API")
	}
	c := container(t, ds)
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("resources %+v: want CPU and memory requests and a memory limit", c.Resources)
	}
	if !c.Resources.Limits.Cpu().IsZero() {
		t.Errorf("CPU limit %v: want none (throttling would make polls miss their timeouts)", c.Resources.Limits.Cpu())
	}
	m := mounts(c)
	if sys, ok := m["/host/sys"]; !ok || !sys.ReadOnly {
		t.Errorf("/sys must be mounted read-only at /host/sys: %+v", sys)
	}
	checkVolumes(t, ds)
	if !slices.Contains(c.Args, "--path.sysfs=/host/sys") {
		t.Errorf("args %v lack --path.sysfs=/host/sys", c.Args)
	}
	checkArgs(t, c.Args)

	port := c.Ports[0]
	if port.ContainerPort != 21180 || r.service.Spec.Ports[0].Port != 21180 {
		t.Errorf("container port %d, service port %d: want the exporter's 21180", port.ContainerPort, r.service.Spec.Ports[0].Port)
	}
	if r.service.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Error("the Service must be headless: every pod is scraped, none is load-balanced")
	}
	if got := r.serviceMonitor.Spec.Endpoints; len(got) != 1 || got[0].Port != port.Name {
		t.Errorf("ServiceMonitor endpoints %+v, want the port %q", got, port.Name)
	}
	sel := r.serviceMonitor.Spec.Selector.MatchLabels
	for k, v := range sel {
		if r.service.Labels[k] != v {
			t.Errorf("ServiceMonitor selects %s=%s, the Service has %v", k, v, r.service.Labels)
		}
	}
	for k, v := range r.service.Spec.Selector {
		if ds.Spec.Template.Labels[k] != v {
			t.Errorf("Service selects %s=%s, the pods have %v", k, v, ds.Spec.Template.Labels)
		}
	}
}

// checkVolumes fails the test when a mount names a volume the pod does
// not define.
func checkVolumes(t *testing.T, ds *appsv1.DaemonSet) {
	t.Helper()
	volumes := make(map[string]corev1.Volume)
	for _, v := range ds.Spec.Template.Spec.Volumes {
		volumes[v.Name] = v
	}
	for _, vm := range container(t, ds).VolumeMounts {
		if _, ok := volumes[vm.Name]; !ok {
			t.Errorf("mount %s uses volume %s, which the pod does not define", vm.MountPath, vm.Name)
		}
	}
}

// checkArgs runs the exporter with the manifest's arguments and
// --version, which kingpin acts on only after every earlier flag parsed:
// a misspelt or removed flag fails here, not on a node.
func checkArgs(t *testing.T, args []string) {
	t.Helper()
	out, err := exec.Command(exporterBinary, append(append([]string{}, args...), "--version")...).CombinedOutput()
	if err != nil {
		t.Errorf("nic_exporter rejects the DaemonSet's arguments %v: %v\n%s", args, err, out)
	}
}

// renderWithComponents renders the base with the given components, as an
// operator's overlay would. kustomize refuses absolute paths, so the
// base is copied into an in-memory file system next to the overlay.
func renderWithComponents(t *testing.T, components ...string) rendered {
	t.Helper()
	overlay := "resources:\n  - ../" + kustomizeBase + "\ncomponents:\n"
	for _, c := range components {
		overlay += "  - ../" + c + "\n"
	}
	return renderOverlay(t, overlay)
}

// renderOverlay renders the kustomization overlay, which names the base
// and the components as ../kubernetes/..., beside a copy of the base.
func renderOverlay(t *testing.T, overlay string) rendered {
	t.Helper()
	fs := filesys.MakeFsInMemory()
	err := filepath.WalkDir(kustomizeBase, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return fs.WriteFile("/"+filepath.ToSlash(path), b)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.WriteFile("/overlay/kustomization.yaml", []byte(overlay)); err != nil {
		t.Fatal(err)
	}
	return render(t, fs, "/overlay")
}

// TestKustomizeComponents renders the base with each component, and with
// all the privileged ones at once, and checks that each adds exactly the
// privileges, host paths and arguments the README's table gives it, and
// nothing else: the DaemonSet's privilege profile is the base's plus the
// component's delta.
func TestKustomizeComponents(t *testing.T) {
	base := privilegesOf(t, renderWithComponents(t).daemonSet)
	for _, tc := range []struct {
		components []string
		want       func(p *privileges)
	}{
		{[]string{vmaComponent}, wantVMA},
		{[]string{kernelLogComponent}, wantKernelLog},
		{[]string{kernelLogPrivilegedComponent}, wantKernelLogPrivileged},
		{[]string{devlinkCaptureComponent}, wantDevlinkCapture},
		{[]string{tlsComponent}, wantTLS},
		{[]string{detailComponent}, func(*privileges) {}},
		{[]string{transceiversComponent}, wantTransceivers},
		// Either order: NET_ADMIN once, whichever grants it first.
		{[]string{transceiversComponent, devlinkCaptureComponent}, wantDevlinkCaptureAndTransceivers},
		{[]string{devlinkCaptureComponent, transceiversComponent}, wantDevlinkCaptureAndTransceivers},
		{[]string{vmaComponent, transceiversComponent}, func(p *privileges) {
			wantVMA(p)
			wantTransceivers(p)
		}},
		{[]string{vmaComponent, kernelLogComponent, devlinkCaptureComponent, transceiversComponent, tlsComponent}, func(p *privileges) {
			wantVMA(p)
			wantKernelLog(p)
			wantDevlinkCapture(p)
			wantTLS(p)
		}},
	} {
		t.Run(strings.Join(tc.components, "+"), func(t *testing.T) {
			r := renderWithComponents(t, tc.components...)
			want := base.clone()
			tc.want(&want)
			if diff := cmp.Diff(want, privilegesOf(t, r.daemonSet)); diff != "" {
				t.Errorf("privileges (-want +got):\n%s", diff)
			}
			checkVolumes(t, r.daemonSet)
			checkArgs(t, container(t, r.daemonSet).Args)
		})
	}
	r := renderWithComponents(t, tlsComponent)
	ep := r.serviceMonitor.Spec.Endpoints[0]
	if ep.Scheme == nil || string(*ep.Scheme) != "https" || ep.TLSConfig == nil || ep.TLSConfig.CA.Secret == nil ||
		ep.TLSConfig.CA.Secret.Name != "nic-exporter-web-config" || ep.TLSConfig.ServerName == nil {
		t.Errorf("tls: ServiceMonitor endpoint %+v, want https verified with ca.crt of the web config Secret", ep)
	}
	for _, p := range []*corev1.Probe{container(t, r.daemonSet).LivenessProbe, container(t, r.daemonSet).ReadinessProbe} {
		if p.HTTPGet == nil || p.HTTPGet.Scheme != corev1.URISchemeHTTPS {
			t.Errorf("tls: probe %+v, want HTTPS", p)
		}
	}
}

// TestKustomizeDetailComponent renders the base with and without the
// detail-scrape component: the base scrapes /metrics only; the component
// adds a second endpoint for /metrics/detail at a long interval, with a
// job label of its own.
func TestKustomizeDetailComponent(t *testing.T) {
	fs := filesys.MakeFsInMemory()
	err := filepath.WalkDir(kustomizeBase, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return fs.WriteFile("/"+filepath.ToSlash(path), b)
	})
	if err != nil {
		t.Fatal(err)
	}
	overlay := "resources:\n  - ../" + kustomizeBase + "\ncomponents:\n  - ../" + detailComponent + "\n"
	if err := fs.WriteFile("/overlay/kustomization.yaml", []byte(overlay)); err != nil {
		t.Fatal(err)
	}
	base := render(t, fs, "/"+kustomizeBase)
	if eps := base.serviceMonitor.Spec.Endpoints; len(eps) != 1 || (eps[0].Path != "" && eps[0].Path != "/metrics") {
		t.Errorf("the base must scrape /metrics only, has endpoints %+v", eps)
	}
	eps := render(t, fs, "/overlay").serviceMonitor.Spec.Endpoints
	if len(eps) != 2 {
		t.Fatalf("with the component: %d endpoints, want 2", len(eps))
	}
	d := eps[1]
	if d.Path != "/metrics/detail" || d.Interval != "10m" || d.Port != "metrics" {
		t.Errorf("detail endpoint: path %q interval %q port %q, want /metrics/detail, 10m, metrics", d.Path, d.Interval, d.Port)
	}
	job := ""
	for _, r := range d.RelabelConfigs {
		if r.TargetLabel == "job" && r.Replacement != nil {
			job = *r.Replacement
		}
	}
	if job != "nic-exporter-detail" || regexp.MustCompile(`^nic[-_]exporter$`).MatchString(job) {
		t.Errorf("detail endpoint job %q, want nic-exporter-detail, which the alerts' up{job=~\"nic[-_]exporter\"} does not match", job)
	}
}

// wantPrometheusRule is the PrometheusRule object generated from the
// shipped rule files: their groups, alerts first, unchanged.
func wantPrometheusRule(t *testing.T) *monitoringv1.PrometheusRule {
	t.Helper()
	groups := append(readRuleFile(t, alertsFile).Groups, readRuleFile(t, rulesFile).Groups...)
	return &monitoringv1.PrometheusRule{
		TypeMeta:   metav1.TypeMeta{APIVersion: "monitoring.coreos.com/v1", Kind: "PrometheusRule"},
		ObjectMeta: metav1.ObjectMeta{Name: "nic-exporter"},
		Spec:       monitoringv1.PrometheusRuleSpec{Groups: groups},
	}
}

const prometheusRuleHeader = `# Generated from deploy/prometheus/alerts.yml and rules.yml by
#   cd deploy && go test -run TestPrometheusRuleMatchesRuleFiles -update
# Do not edit: the rule files are the single source, and the test fails
# when this file differs from them.
`

// TestPrometheusRuleMatchesRuleFiles checks that the PrometheusRule
// object carries exactly the groups of alerts.yml and rules.yml, so the
// Operator deployment and a plain Prometheus never drift apart.
func TestPrometheusRuleMatchesRuleFiles(t *testing.T) {
	want := wantPrometheusRule(t)
	if *update {
		b, err := yaml.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		b = bytes.Replace(b, []byte("  creationTimestamp: null\n"), nil, 1)
		if err := os.WriteFile(prometheusRuleFile, append([]byte(prometheusRuleHeader), b...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(prometheusRuleFile)
	if err != nil {
		t.Fatal(err)
	}
	var got monitoringv1.PrometheusRule
	if err := yaml.UnmarshalStrict(b, &got); err != nil {
		t.Fatalf("%s: %v", prometheusRuleFile, err)
	}
	// The Operator's CRD validates durations with this pattern on the
	// server; a strict decode alone would not catch "5 m" or "1m30".
	duration := regexp.MustCompile(`^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$`)
	for _, g := range got.Spec.Groups {
		for _, r := range g.Rules {
			if r.For != nil && !duration.MatchString(string(*r.For)) {
				t.Errorf("%s: for: %q is not a Prometheus Operator duration", r.Alert, *r.For)
			}
		}
	}
	if diff := cmp.Diff(want, &got); diff != "" {
		t.Errorf("%s differs from the rule files (cd deploy && go test -run TestPrometheusRuleMatchesRuleFiles -update regenerates it) (-want +got):\n%s", prometheusRuleFile, diff)
	}
}
