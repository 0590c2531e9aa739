//go:build linux

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nic-exporter/nic_exporter/internal/kubetest"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
	"github.com/nic-exporter/nic_exporter/nodehealth"
)

// nodeFwFatal returns the Node's NICFirmwareFatal condition and whether
// it has the exporter's taint.
func nodeFwFatal(n *corev1.Node) (*corev1.NodeCondition, bool) {
	tainted := false
	for _, t := range n.Spec.Taints {
		if t.Key == "nic-exporter.io/unhealthy" && t.Effect == corev1.TaintEffectNoSchedule {
			tainted = true
		}
	}
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == "NICFirmwareFatal" {
			return &n.Status.Conditions[i], tainted
		}
	}
	return nil, tainted
}

// TestKubernetesNodeCondition runs the demo exporter with the fw_fatal
// fault and --kubernetes.node-conditions and --kubernetes.taint against
// a real kube-apiserver and etcd, as the exporter's service account with
// a pod-bound token and only the shipped RBAC and confinement
// (deploy/kubernetes/components/node-conditions): the Node gets
// NICFirmwareFatal=True naming both PCI functions and the taint, and
// after the fault and the hold time the condition is False and the taint
// gone. The demo clock starts at a known wall time (--demo.start), so
// the fault's start and end are known; the test logs the time from each
// to what it saw on the Node (polled every 50 ms), and asserts no time.
func TestKubernetesNodeCondition(t *testing.T) {
	c := kubetest.Start(t)
	ctx := context.Background()
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "monitoring"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	component := filepath.Join("..", "..", "deploy", "kubernetes", "components", "node-conditions")
	c.Apply(ctx, filepath.Join(component, "rbac.yaml"))
	c.Apply(ctx, filepath.Join(component, "confinement.yaml"))
	c.CreateNode(ctx, "gpu-node-1")
	kubeconfig := c.WriteKubeconfig("nic-exporter", c.PodToken(ctx, "monitoring", "nic-exporter", "nic-exporter-x1", "gpu-node-1"))

	const hold = 3 * time.Second
	demoStart := time.Now().Truncate(time.Second)
	faultAt, faultEnd := demoStart.Add(10*time.Second), demoStart.Add(24*time.Second)
	e := start(t, "--demo", "--demo.start="+demoStart.Format(time.RFC3339), "--demo.faults=fw_fatal@10s-24s",
		"--collector.devlink.interval=500ms", "--health.interval=200ms", "--health.clear-after="+hold.String(),
		"--kubernetes.node-conditions", "--kubernetes.node-name=gpu-node-1", "--kubernetes.taint=nic-exporter.io/unhealthy:NoSchedule",
		"--kubernetes.kubeconfig="+kubeconfig)

	poll := func(what string, ok func(*corev1.NodeCondition, bool) bool) (*corev1.Node, time.Time) {
		t.Helper()
		deadline := time.Now().Add(testenv.HangGuard)
		for {
			n, err := c.Client.CoreV1().Nodes().Get(ctx, "gpu-node-1", metav1.GetOptions{})
			if err == nil {
				if cond, tainted := nodeFwFatal(n); ok(cond, tainted) {
					return n, time.Now()
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within the hang guard; node %+v (%v)\n%s", what, n, err, e.stderr.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	poll("NICFirmwareFatal=False before the fault", func(c *corev1.NodeCondition, tainted bool) bool {
		return c != nil && c.Status == corev1.ConditionFalse && !tainted
	})
	n, setSeen := poll("NICFirmwareFatal=True and the taint", func(c *corev1.NodeCondition, tainted bool) bool {
		return c != nil && c.Status == corev1.ConditionTrue && tainted
	})
	cond, _ := nodeFwFatal(n)
	if cond.Reason != "FirmwareFatalError" || !strings.Contains(cond.Message, "pci/0000:08:00.0, pci/0000:08:00.1") || !strings.Contains(cond.Message, `reporter="fw_fatal"`) {
		t.Errorf("condition %+v: want reason FirmwareFatalError and a message naming both functions and the evidence", cond)
	}
	v, _ := e.verdict(t)
	// The Node keeps the verdict's transition time to the second.
	if v.Status != nodehealth.VerdictUnhealthy || !cond.LastTransitionTime.Time.Equal(fwFatal(v).LastTransitionTime.Truncate(time.Second)) {
		t.Errorf("the Node's transition time %s is not the verdict's %s (%s)", cond.LastTransitionTime, fwFatal(v).LastTransitionTime, v.Status)
	}
	setAt := cond.LastTransitionTime.Time
	n, clearSeen := poll("NICFirmwareFatal=False and no taint after the hold time", func(c *corev1.NodeCondition, tainted bool) bool {
		return c != nil && c.Status == corev1.ConditionFalse && !tainted
	})
	cond, _ = nodeFwFatal(n)
	if cond.Reason != nodehealth.HealthyReason {
		t.Errorf("cleared condition %+v", cond)
	}
	t.Logf("fault at %s: the Node showed NICFirmwareFatal=True and the taint %s later (the verdict's transition %s after the fault, to the second); the fault ended at %s and the Node showed the condition cleared and no taint %s later (hold time %s)",
		faultAt.Format(time.RFC3339), setSeen.Sub(faultAt).Round(10*time.Millisecond), setAt.Sub(faultAt).Round(time.Second),
		faultEnd.Format(time.RFC3339), clearSeen.Sub(faultEnd).Round(10*time.Millisecond), hold)
	// The Event of a transition is written after the Node's status, from
	// the sink's own queue: the clear's may come a moment after the Node
	// shows it, so the events are listed until both are there, within the
	// hang guard.
	for deadline := time.Now().Add(testenv.HangGuard); ; time.Sleep(100 * time.Millisecond) {
		events, err := c.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=gpu-node-1"})
		if err != nil {
			t.Fatal(err)
		}
		var reasons []string
		for _, ev := range events.Items {
			reasons = append(reasons, ev.Reason)
		}
		got := strings.Join(reasons, " ")
		if strings.Contains(got, "FirmwareFatalError") && strings.Contains(got, "NICFirmwareFatalCleared") {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("events of the node: %s, want the set and the clear", got)
			break
		}
	}
	// The write is counted when the API server's answer is back, which
	// may be a moment after the Node shows it.
	for deadline := time.Now().Add(testenv.HangGuard); ; time.Sleep(100 * time.Millisecond) {
		scrape, _ := e.get(t, "/metrics", nil)
		if strings.Contains(scrape, "\nnic_exporter_kubernetes_writes_total{request=\"patch_taint\"} 2\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("the taint was not written twice (add, remove):\n%s", scrape)
			break
		}
	}
}

// TestKubernetesUnreachable runs the exporter with
// --kubernetes.node-conditions against an API server address where
// nothing listens: /metrics and /health answer all the same, the failed
// requests are counted by reason, and the failure is logged once
// however often it is retried.
func TestKubernetesUnreachable(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	conf := "apiVersion: v1\nkind: Config\nclusters:\n- name: gone\n  cluster:\n    server: https://" + freePort(t) + "\n" +
		"users:\n- name: exporter\n  user:\n    token: not-a-token\ncontexts:\n- name: gone\n  context:\n    cluster: gone\n    user: exporter\ncurrent-context: gone\n"
	if err := os.WriteFile(kubeconfig, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	e := start(t, "--demo", "--health.interval=200ms", "--kubernetes.node-conditions", "--kubernetes.node-name=gpu-node-1",
		"--kubernetes.taint=nic-exporter.io/unhealthy:NoSchedule", "--kubernetes.kubeconfig="+kubeconfig)
	const counted = `nic_exporter_kubernetes_errors_total{reason="unreachable",request="get_node"}`
	deadline := time.Now().Add(testenv.HangGuard)
	for {
		scrape, _ := e.get(t, "/metrics", nil)
		if v := sampleValue(scrape, counted); v >= 2 {
			if !strings.Contains(scrape, "\nnic_exporter_kubernetes_last_success_timestamp_seconds 0\n") {
				t.Errorf("a last success without an API server:\n%s", scrape)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no two unreachable errors counted within the hang guard:\n%s", scrape)
		}
		time.Sleep(100 * time.Millisecond)
	}
	e.waitVerdict(t, "a verdict", func(v *nodehealth.Verdict) bool { return v.Status == nodehealth.VerdictOK })
	if n := strings.Count(e.stderr.String(), "cannot bring the Node in line"); n != 1 {
		t.Errorf("the unreachable API server was logged %d times, want once:\n%s", n, e.stderr.String())
	}
}
