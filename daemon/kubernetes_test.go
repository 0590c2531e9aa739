package daemon

import (
	"io"
	"strings"
	"testing"
)

// TestKubernetesFlags checks that the Kubernetes flags that cannot work
// are refused with a reason, and that NODE_NAME stands in for
// --kubernetes.node-name.
func TestKubernetesFlags(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		env     string
		wantErr string
	}{
		{args: []string{"--kubernetes.taint=" + "nic-exporter.io/unhealthy:NoSchedule"}, wantErr: "need --kubernetes.node-conditions"},
		{args: []string{"--kubernetes.kubeconfig=/k"}, wantErr: "need --kubernetes.node-conditions"},
		{args: []string{"--kubernetes.node-conditions"}, wantErr: "needs the Node's name"},
		{args: []string{"--kubernetes.node-conditions", "--kubernetes.node-name=n1", "--kubernetes.taint=unhealthy"}, wantErr: "--kubernetes.taint: taint \"unhealthy\""},
		{args: []string{"--kubernetes.node-conditions", "--kubernetes.node-name=n1", "--kubernetes.resync-interval=10ms"}, wantErr: "at least 1s"},
		{args: []string{"--kubernetes.node-conditions", "--kubernetes.node-name=n1", "--kubernetes.taint=nic-exporter.io/unhealthy:NoSchedule"}},
		{args: []string{"--kubernetes.node-conditions"}, env: "gpu-node-7"},
	} {
		t.Run(strings.Join(tc.args, " ")+" NODE_NAME="+tc.env, func(t *testing.T) {
			t.Setenv("NODE_NAME", tc.env)
			o, err := ParseFlags(append([]string{"--demo"}, tc.args...), io.Discard)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error %v, want one with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			k := o.ServeConfig().Kubernetes
			if k == nil || k.Node == "" || (tc.env != "" && k.Node != tc.env) {
				t.Errorf("Kubernetes config %+v", k)
			}
		})
	}
}
