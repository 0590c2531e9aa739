//go:build linux

package kube

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nic-exporter/nic_exporter/internal/kubetest"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
	"github.com/nic-exporter/nic_exporter/nodehealth"
)

// component is the kustomize component whose RBAC and confinement the
// tests apply, as shipped.
const component = "../../deploy/kubernetes/components/node-conditions"

// The exporter's account in the shipped files.
const (
	namespace = "monitoring"
	account   = "nic-exporter"
)

// applyShipped creates the namespace of the account and the
// component's ClusterRole, its binding, the confinement policy and its
// binding, and returns the ClusterRole.
func applyShipped(ctx context.Context, t *testing.T, c *kubetest.Cluster) *rbacv1.ClusterRole {
	t.Helper()
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	objs := c.Apply(ctx, filepath.Join(component, "rbac.yaml"))
	c.Apply(ctx, filepath.Join(component, "confinement.yaml"))
	role, ok := objs[0].(*rbacv1.ClusterRole)
	if !ok {
		t.Fatalf("rbac.yaml starts with a %T, want the ClusterRole", objs[0])
	}
	return role
}

// verdictBox holds the verdict a test hands the sink.
type verdictBox struct {
	v atomic.Pointer[nodehealth.Verdict]
}

func (b *verdictBox) get() *nodehealth.Verdict { return b.v.Load() }

// fwFatalVerdict returns a verdict with NICFirmwareFatal true (set) or
// false since at.
func fwFatalVerdict(set bool, at time.Time) *nodehealth.Verdict {
	fw := nodehealth.Condition{Type: "NICFirmwareFatal", Status: nodehealth.StatusFalse, Reason: nodehealth.HealthyReason, Message: "no evidence", LastTransitionTime: at}
	v := &nodehealth.Verdict{Status: nodehealth.VerdictOK, Time: at}
	if set {
		fw.Status, fw.Reason = nodehealth.StatusTrue, "FirmwareFatalError"
		fw.Message = `Firmware fatal error: pci/0000:08:00.0 (devlink_health_reporter_state{device="pci/0000:08:00.0",reporter="fw_fatal"} = 0)`
		fw.Devices = []string{"pci/0000:08:00.0"}
		v.Status = nodehealth.VerdictUnhealthy
	}
	v.Conditions = []nodehealth.Condition{fw, {Type: "NICLinkDown", Status: nodehealth.StatusFalse, Reason: nodehealth.HealthyReason, Message: "no evidence", LastTransitionTime: at}}
	return v
}

// startSink runs a sink for node on client until the test ends.
func startSink(t *testing.T, client API, node string, box *verdictBox, taint *Taint) (*Sink, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zap.InfoLevel)
	s, err := New(Config{
		Client:     client,
		Node:       node,
		Verdict:    box.get,
		Taint:      taint,
		Resync:     300 * time.Millisecond,
		MinBackoff: 100 * time.Millisecond,
		MaxBackoff: 500 * time.Millisecond,
	}, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		s.Run(ctx)
		close(done)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return s, logs
}

// waitNode polls the Node until ok holds, within the hang guard.
func waitNode(t *testing.T, c *kubetest.Cluster, name, what string, ok func(*corev1.Node) bool) *corev1.Node {
	t.Helper()
	deadline := time.Now().Add(testenv.HangGuard)
	for {
		n, err := c.Client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err == nil && ok(n) {
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s: %s: not within the hang guard; last %+v (%v)", name, what, n, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitFor polls ok until it holds, within the hang guard.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(testenv.HangGuard)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within the hang guard", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func condition(n *corev1.Node, typ string) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if string(n.Status.Conditions[i].Type) == typ {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

func hasTaint(n *corev1.Node, t Taint) bool {
	for _, x := range n.Spec.Taints {
		if x.Key == t.Key && x.Effect == t.Effect && x.Value == t.Value {
			return true
		}
	}
	return false
}

func fwStatus(n *corev1.Node) corev1.ConditionStatus {
	if c := condition(n, "NICFirmwareFatal"); c != nil {
		return c.Status
	}
	return ""
}

// TestNodeConditions runs sinks against a real kube-apiserver and etcd,
// as the exporter's service account with a pod-bound token and only the
// shipped RBAC and confinement (deploy/kubernetes/components/
// node-conditions): the condition and the taint follow the verdict, an
// Event is posted per transition, an edit by someone else is undone,
// the account cannot patch another Node, an account without
// nodes/status fails loudly, and a restart of the API server mid-run is
// recovered from.
func TestNodeConditions(t *testing.T) {
	c := kubetest.Start(t)
	ctx := context.Background()
	role := applyShipped(ctx, t, c)
	c.CreateNode(ctx, "node-a")
	c.CreateNode(ctx, "node-b")
	token := c.PodToken(ctx, namespace, account, "nic-exporter-a", "node-a")
	client, err := NewClient(c.Config(token))
	if err != nil {
		t.Fatal(err)
	}
	taint, err := ParseTaint(DefaultTaint)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("FollowsVerdict", func(t *testing.T) {
		box := &verdictBox{}
		start := time.Now().Add(-time.Minute).Truncate(time.Second)
		box.v.Store(fwFatalVerdict(false, start))
		s, _ := startSink(t, client, "node-a", box, &taint)
		n := waitNode(t, c, "node-a", "NICFirmwareFatal=False at the start", func(n *corev1.Node) bool { return fwStatus(n) == corev1.ConditionFalse })
		if hasTaint(n, taint) {
			t.Errorf("a healthy node got the taint: %v", n.Spec.Taints)
		}
		if condition(n, "NICLinkDown") == nil {
			t.Errorf("NICLinkDown missing: %+v", n.Status.Conditions)
		}

		setAt := time.Now().Truncate(time.Second)
		box.v.Store(fwFatalVerdict(true, setAt))
		s.ConditionChanged(box.get().Conditions[0])
		n = waitNode(t, c, "node-a", "NICFirmwareFatal=True and tainted", func(n *corev1.Node) bool {
			return fwStatus(n) == corev1.ConditionTrue && hasTaint(n, taint)
		})
		fw := condition(n, "NICFirmwareFatal")
		if fw.Reason != "FirmwareFatalError" || !strings.Contains(fw.Message, "pci/0000:08:00.0") || !fw.LastTransitionTime.Time.Equal(setAt) {
			t.Errorf("condition: %+v, want reason FirmwareFatalError, the device in the message and transition time %s", fw, setAt)
		}
		// The API server taints a Node without a kubelet not-ready; that
		// taint must stay.
		if !hasTaint(n, Taint{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule}) {
			t.Errorf("the not-ready taint of the API server was lost: %v", n.Spec.Taints)
		}
		waitFor(t, "the Warning event", func() bool {
			evs, err := c.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=node-a,reason=FirmwareFatalError"})
			return err == nil && len(evs.Items) == 1 && evs.Items[0].Type == corev1.EventTypeWarning && strings.Contains(evs.Items[0].Message, "NICFirmwareFatal=True")
		})

		// Someone else clears the condition: the periodic
		// reconciliation sets it again.
		patch := []byte(`{"status":{"conditions":[{"type":"NICFirmwareFatal","status":"False","reason":"ByHand","message":"edited"}]}}`)
		if _, err := c.Client.CoreV1().Nodes().Patch(ctx, "node-a", types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
			t.Fatal(err)
		}
		waitNode(t, c, "node-a", "the edit undone", func(n *corev1.Node) bool {
			return fwStatus(n) == corev1.ConditionTrue && condition(n, "NICFirmwareFatal").Reason == "FirmwareFatalError"
		})

		clearAt := time.Now().Truncate(time.Second)
		box.v.Store(fwFatalVerdict(false, clearAt))
		s.ConditionChanged(box.get().Conditions[0])
		n = waitNode(t, c, "node-a", "NICFirmwareFatal=False and untainted", func(n *corev1.Node) bool {
			return fwStatus(n) == corev1.ConditionFalse && !hasTaint(n, taint)
		})
		if got := condition(n, "NICFirmwareFatal").LastTransitionTime.Time; !got.Equal(clearAt) {
			t.Errorf("cleared with transition time %s, want %s", got, clearAt)
		}
		if len(n.Spec.Taints) != 1 {
			t.Errorf("taints after the clear: %v, want the not-ready taint alone", n.Spec.Taints)
		}
		waitFor(t, "the Normal event", func() bool {
			evs, err := c.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=node-a,reason=NICFirmwareFatalCleared"})
			return err == nil && len(evs.Items) == 1 && evs.Items[0].Type == corev1.EventTypeNormal
		})
		if got := testutil.CollectAndCount(s.metrics.errors); got != 0 {
			t.Errorf("%d series of request errors with the shipped RBAC", got)
		}
	})

	t.Run("ConfinedToOwnNode", func(t *testing.T) {
		// The account may patch node-a (its pod's) but not node-b,
		// neither its status nor its taints. The API server loads a new
		// policy asynchronously: a dry run, which admission sees like a
		// write, tells when it is in force.
		patch := []byte(`{"status":{"conditions":[{"type":"NICFirmwareFatal","status":"True","reason":"Forged","message":"forged"}]}}`)
		waitFor(t, "the confinement policy in force", func() bool {
			err := dryRunPatch(ctx, client, "node-b", patch, "status")
			return apierrors.IsForbidden(err)
		})
		_, err := client.PatchNode(ctx, "node-b", patch, "status")
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "only the Node its pod runs on, not node-b") {
			t.Errorf("patching node-b's status: %v, want the confinement's refusal", err)
		}
		_, err = client.PatchNode(ctx, "node-b", []byte(`{"spec":{"taints":[{"key":"x","effect":"NoExecute"}]}}`))
		if !apierrors.IsForbidden(err) {
			t.Errorf("tainting node-b: %v, want forbidden", err)
		}
		if _, err := client.PatchNode(ctx, "node-a", []byte(`{"metadata":{"labels":{"nic-exporter.io/test":"own"}}}`)); err != nil {
			t.Errorf("patching the own node: %v", err)
		}
		// A sink pointed at another node fails loudly and changes
		// nothing there.
		box := &verdictBox{}
		box.v.Store(fwFatalVerdict(true, time.Now()))
		s, logs := startSink(t, client, "node-b", box, nil)
		waitFor(t, "a forbidden patch counted", func() bool {
			return testutil.ToFloat64(s.metrics.errors.WithLabelValues(reqConditions, "forbidden")) > 0
		})
		waitFor(t, "the error logged", func() bool { return logs.FilterMessageSnippet("cannot bring the Node in line").Len() > 0 })
		if n, err := c.Client.CoreV1().Nodes().Get(ctx, "node-b", metav1.GetOptions{}); err != nil || condition(n, "NICFirmwareFatal") != nil {
			t.Errorf("node-b: %v, conditions %+v", err, n.Status.Conditions)
		}
	})

	t.Run("WithoutNodesStatus", func(t *testing.T) {
		// Another account, bound to a role like the shipped one but
		// without nodes/status: the sink reports forbidden on the
		// conditions' patch, once in the log, and in the self-metric.
		weak := role.DeepCopy()
		weak.ObjectMeta = metav1.ObjectMeta{Name: "nic-exporter-no-status"}
		weak.Rules = nil
		for _, r := range role.Rules {
			if !contains(r.Resources, "nodes/status") {
				weak.Rules = append(weak.Rules, r)
			}
		}
		if len(weak.Rules) != len(role.Rules)-1 {
			t.Fatalf("the shipped role has no rule of nodes/status alone: %+v", role.Rules)
		}
		if _, err := c.Client.RbacV1().ClusterRoles().Create(ctx, weak, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "nic-exporter-no-status"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: weak.Name},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "weak", Namespace: namespace}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		weakClient, err := NewClient(c.Config(c.PodToken(ctx, namespace, "weak", "weak-a", "node-a")))
		if err != nil {
			t.Fatal(err)
		}
		box := &verdictBox{}
		box.v.Store(fwFatalVerdict(true, time.Now()))
		reg := prometheus.NewPedanticRegistry()
		s, logs := startSink(t, weakClient, "node-a", box, nil)
		reg.MustRegister(s.Collector())
		waitFor(t, "forbidden counted twice (a retry)", func() bool {
			return testutil.ToFloat64(s.metrics.errors.WithLabelValues(reqConditions, "forbidden")) >= 2
		})
		if n := logs.FilterMessageSnippet("cannot bring the Node in line").Len(); n != 1 {
			t.Errorf("the repeated failure was logged %d times, want once", n)
		}
		l := logs.FilterMessageSnippet("cannot bring the Node in line").All()[0]
		if f := l.ContextMap(); f["request"] != reqConditions || f["reason"] != "forbidden" || !strings.Contains(f["error"].(string), "nodes/status") {
			t.Errorf("log fields: %v", f)
		}
		if err := testutil.GatherAndCompare(reg, strings.NewReader(`# HELP nic_exporter_kubernetes_last_success_timestamp_seconds Unix time of the last reconciliation that left the own Node in line with the node verdict (conditions, taint, Events); 0 before the first.
# TYPE nic_exporter_kubernetes_last_success_timestamp_seconds gauge
nic_exporter_kubernetes_last_success_timestamp_seconds 0
`), "nic_exporter_kubernetes_last_success_timestamp_seconds"); err != nil {
			t.Error(err)
		}
	})

	t.Run("APIServerRestart", func(t *testing.T) {
		box := &verdictBox{}
		box.v.Store(fwFatalVerdict(false, time.Now().Truncate(time.Second)))
		s, logs := startSink(t, client, "node-a", box, &taint)
		waitNode(t, c, "node-a", "healthy", func(n *corev1.Node) bool { return fwStatus(n) == corev1.ConditionFalse && !hasTaint(n, taint) })
		waitFor(t, "a first success", func() bool { return testutil.ToFloat64(s.metrics.lastSuccess) > 0 })

		c.StopAPIServer()
		box.v.Store(fwFatalVerdict(true, time.Now().Truncate(time.Second)))
		s.ConditionChanged(box.get().Conditions[0])
		waitFor(t, "the unreachable API server counted", func() bool {
			return testutil.ToFloat64(s.metrics.errors.WithLabelValues(reqGetNode, "unreachable")) > 0
		})
		c.StartAPIServer()
		waitNode(t, c, "node-a", "set after the restart", func(n *corev1.Node) bool { return fwStatus(n) == corev1.ConditionTrue && hasTaint(n, taint) })
		waitFor(t, "the recovery logged", func() bool { return logs.FilterMessageSnippet("in line with the node verdict again").Len() == 1 })
		// While the API server stops and starts, a request may fail in
		// more than one way (connection refused, then an answer from a
		// server still starting); each is logged when it differs from the
		// one before, never twice in a row.
		failures := logs.FilterMessageSnippet("cannot bring the Node in line").All()
		if len(failures) == 0 {
			t.Error("the outage was not logged")
		}
		for i := 1; i < len(failures); i++ {
			a, b := failures[i-1].ContextMap(), failures[i].ContextMap()
			if a["request"] == b["request"] && a["reason"] == b["reason"] {
				t.Errorf("the same failure logged twice in a row: %v", b)
			}
		}
	})
}

// dryRunPatch patches a Node as client's account with dryRun=All, which
// admission sees like a write but which changes nothing.
func dryRunPatch(ctx context.Context, client *Client, name string, patch []byte, subresource ...string) error {
	return client.rc.Patch(types.StrategicMergePatchType).Resource("nodes").Name(name).SubResource(subresource...).
		VersionedParams(&metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}, metav1.ParameterCodec).
		Body(patch).Do(ctx).Error()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
