package deploy

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// nodeConditionRules are the documented rules of the node conditions'
// ClusterRole (deploy/README.md, "Node conditions and taint"): nothing
// more. nodehealth/kube's TestNodeConditions checks against a real API
// server that they are enough, and that they are needed.
var nodeConditionRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "patch"}},
	{APIGroups: []string{""}, Resources: []string{"nodes/status"}, Verbs: []string{"patch"}},
	{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create"}},
}

// checkNodeConditions checks the node conditions' opt-in in r: the
// DaemonSet mounts the pod's token and sets NODE_NAME from spec.nodeName,
// the ClusterRole has exactly the documented rules and is bound to the
// exporter's account, and the confinement policy is bound with Deny.
func checkNodeConditions(t *testing.T, where string, r rendered) {
	t.Helper()
	spec := r.daemonSet.Spec.Template.Spec
	if spec.AutomountServiceAccountToken == nil || !*spec.AutomountServiceAccountToken {
		t.Errorf("%s: the pod does not mount its token", where)
	}
	env := container(t, r.daemonSet).Env
	if len(env) != 1 || env[0].Name != "NODE_NAME" || env[0].ValueFrom == nil || env[0].ValueFrom.FieldRef == nil || env[0].ValueFrom.FieldRef.FieldPath != "spec.nodeName" {
		t.Errorf("%s: env %+v, want NODE_NAME from spec.nodeName", where, env)
	}
	if r.clusterRole == nil || r.clusterRoleBinding == nil || r.policy == nil || r.policyBinding == nil {
		t.Fatalf("%s: want a ClusterRole, its binding, a ValidatingAdmissionPolicy and its binding", where)
	}
	if diff := cmp.Diff(nodeConditionRules, r.clusterRole.Rules); diff != "" {
		t.Errorf("%s: ClusterRole rules (-documented +shipped):\n%s", where, diff)
	}
	b := r.clusterRoleBinding
	if b.RoleRef.Kind != "ClusterRole" || b.RoleRef.Name != r.clusterRole.Name || len(b.Subjects) != 1 ||
		b.Subjects[0].Kind != "ServiceAccount" || b.Subjects[0].Name != r.serviceAccount.Name || b.Subjects[0].Namespace != "monitoring" {
		t.Errorf("%s: binding %+v, want the ClusterRole bound to service account monitoring/%s", where, b, r.serviceAccount.Name)
	}
	if pb := r.policyBinding.Spec; pb.PolicyName != r.policy.Name || !slices.Equal(pb.ValidationActions, []admissionv1.ValidationAction{admissionv1.Deny}) || pb.MatchResources != nil {
		t.Errorf("%s: policy binding %+v, want policy %s with Deny everywhere", where, pb, r.policy.Name)
	}
	p := r.policy.Spec
	if p.FailurePolicy == nil || *p.FailurePolicy != admissionv1.Fail {
		t.Errorf("%s: the policy must fail closed", where)
	}
	if len(p.MatchConditions) != 1 {
		t.Fatalf("%s: match conditions %+v, want one naming the account", where, p.MatchConditions)
	}
}

// TestNodeConditionsOptIn checks the node conditions and the taint as
// kustomize components and as Helm values: off by default, the same
// objects and privileges in both when on, the flags accepted by the
// exporter, and a confinement policy that applies to the exporter's
// account only.
func TestNodeConditionsOptIn(t *testing.T) {
	base := renderWithComponents(t)
	if base.clusterRole != nil || base.policy != nil || helmTemplate(t).clusterRole != nil {
		t.Fatal("the node conditions are opt-in: the base and the chart's defaults must bind no role")
	}

	k := renderWithComponents(t, nodeConditionsComponent)
	checkNodeConditions(t, "kustomize", k)
	want := privilegesOf(t, base.daemonSet)
	want.Args = append(want.Args, "--kubernetes.node-conditions")
	slices.Sort(want.Args)
	if diff := cmp.Diff(want, privilegesOf(t, k.daemonSet)); diff != "" {
		t.Errorf("kustomize node-conditions: privileges beyond the flag (-want +got):\n%s", diff)
	}
	// The kustomize policy matches the account by the end of its name
	// in any namespace, so that an overlay's namespace or namePrefix
	// needs no change there.
	if got, want := k.policy.Spec.MatchConditions[0].Expression, "request.userInfo.username.startsWith('system:serviceaccount:') && request.userInfo.username.endsWith('"+k.serviceAccount.Name+"')"; got != want {
		t.Errorf("kustomize policy matches %q, want %q", got, want)
	}

	kt := renderWithComponents(t, nodeConditionsComponent, nodeTaintComponent)
	h := helmTemplate(t, "nodeConditions.enabled=true", "nodeConditions.taint=nic-exporter.io/unhealthy:NoSchedule")
	checkNodeConditions(t, "helm", h)
	if diff := cmp.Diff(privilegesOf(t, kt.daemonSet), privilegesOf(t, h.daemonSet)); diff != "" {
		t.Errorf("node conditions and taint: the chart's DaemonSet differs from kustomize's (-kustomize +helm):\n%s", diff)
	}
	if !slices.Contains(container(t, h.daemonSet).Args, "--kubernetes.taint=nic-exporter.io/unhealthy:NoSchedule") {
		t.Errorf("helm args %v lack the taint", container(t, h.daemonSet).Args)
	}
	checkArgs(t, container(t, h.daemonSet).Args)
	checkArgs(t, container(t, kt.daemonSet).Args)
	if diff := cmp.Diff(k.policy.Spec.Validations, h.policy.Spec.Validations); diff != "" {
		t.Errorf("the chart's confinement differs from kustomize's (-kustomize +helm):\n%s", diff)
	}
	if diff := cmp.Diff(k.policy.Spec.MatchConstraints, h.policy.Spec.MatchConstraints); diff != "" {
		t.Errorf("the chart's policy matches other requests than kustomize's (-kustomize +helm):\n%s", diff)
	}
	if got, want := h.policy.Spec.MatchConditions[0].Expression, "request.userInfo.username == 'system:serviceaccount:monitoring:"+h.serviceAccount.Name+"'"; got != want {
		t.Errorf("helm policy matches %q, want %q", got, want)
	}

	if off := helmTemplate(t, "nodeConditions.enabled=true", "nodeConditions.confinement=false"); off.policy != nil || off.policyBinding != nil || off.clusterRole == nil {
		t.Error("nodeConditions.confinement=false: want the RBAC without the policy")
	}
	out, err := helmRun("template", "nic-exporter", helmChart, "--set", "nodeConditions.taint=nic-exporter.io/unhealthy:NoSchedule")
	if err == nil || !strings.Contains(string(out), "nodeConditions.taint needs nodeConditions.enabled") {
		t.Errorf("a taint without the node conditions rendered: %v\n%s", err, out)
	}
	out, err = helmRun("template", "nic-exporter", helmChart, "--set", "nodeConditions.enabled=true", "--set", "nodeConditions.taint=unhealthy")
	if err == nil || !strings.Contains(string(out), "/nodeConditions/taint") {
		t.Errorf("a taint without an effect rendered: %v\n%s", err, out)
	}
	if spec := helmTemplate(t).daemonSet.Spec.Template.Spec; spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken || len(container(t, helmTemplate(t).daemonSet).Env) != 0 {
		t.Errorf("the chart's default pod mounts a token or sets env: %+v", spec)
	}
}
